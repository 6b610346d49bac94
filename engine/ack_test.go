package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/plugins/reactions"
)

// reactingAdapter is an adapter with reactions that can be taken back
// (core.Reactor and core.Unreactor). It keeps, in order, what the user
// saw: "react ID EMOJI", "send TEXT", "unreact ID EMOJI".
type reactingAdapter struct {
	*coretest.Adapter
	mu       sync.Mutex
	events   []string
	reactErr error
}

func (a *reactingAdapter) note(e string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, e)
}

func (a *reactingAdapter) Events() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.events...)
}

func (a *reactingAdapter) Send(ctx context.Context, m core.OutboundMessage) (core.SendResult, error) {
	res, err := a.Adapter.Send(ctx, m)
	if err == nil {
		a.note("send " + m.Text)
	}
	return res, err
}

func (a *reactingAdapter) React(_ context.Context, _, messageID, emoji string) error {
	if a.reactErr != nil {
		return a.reactErr
	}
	a.note("react " + messageID + " " + emoji)
	return nil
}

func (a *reactingAdapter) Unreact(_ context.Context, _, messageID, emoji string) error {
	a.note("unreact " + messageID + " " + emoji)
	return nil
}

// ackRig is a dispatcher with bot.ack_reaction set to ack on a
// reactingAdapter.
type ackRig struct {
	model   *llmtest.Server
	adapter *reactingAdapter
	disp    *engine.Dispatcher
	logs    *coretest.Logs
}

func newAckRig(t *testing.T, ack string, cfg engine.Config) *ackRig {
	t.Helper()
	r := &ackRig{model: llmtest.NewServer(t), adapter: &reactingAdapter{Adapter: coretest.NewAdapter(web)}, logs: &coretest.Logs{}}
	client, err := llm.New(llm.Config{BaseURL: r.model.URL(), APIKey: "sk-test", Model: "m", Timeout: waitFor, MaxRetries: llm.NoRetries})
	require.NoError(t, err)
	if cfg.Store == nil {
		cfg.Store = openStore(t)
	}
	cfg.LLM, cfg.Adapters, cfg.AckReaction, cfg.Logger = client, []core.Adapter{r.adapter}, ack, r.logs.Logger()
	r.disp, err = engine.New(cfg)
	require.NoError(t, err)
	require.NoError(t, r.adapter.Start(t.Context(), r.disp))
	require.NoError(t, r.disp.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, r.disp.Stop(context.Background())) })
	return r
}

// waitEvents waits until the adapter saw exactly want.
func (r *ackRig) waitEvents(t *testing.T, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return fmt.Sprint(r.adapter.Events()) == fmt.Sprint(want) },
		waitFor, 2*time.Millisecond, "wanted %q", want)
	require.Equal(t, want, r.adapter.Events())
}

// While the model works on an answer the user's message wears the
// bot's 👀; once the reply is out it is taken back.
func TestAckReactionShowsWhileTheModelWorks(t *testing.T) {
	t.Parallel()
	r := newAckRig(t, "👀", engine.Config{})
	gate := make(chan struct{})
	r.model.Enqueue(llmtest.Text("hello there").WithHold(gate))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "hi"))
	r.model.WaitRequests(t, 1, waitFor)
	r.waitEvents(t, "react in-1 👀")

	close(gate)
	r.waitEvents(t, "react in-1 👀", "send hello there", "unreact in-1 👀")
}

// A turn that fails takes its acknowledgement back too: the failure
// notice is the answer.
func TestAckReactionIsTakenBackWhenTheTurnFails(t *testing.T) {
	t.Parallel()
	r := newAckRig(t, "👀", engine.Config{FailureMessage: "Sorry."})
	r.model.Enqueue(llmtest.Status(400))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "hi"))
	r.waitEvents(t, "react in-1 👀", "send Sorry.", "unreact in-1 👀")
}

// An emoji the platform refuses is logged once, at info, and the turn
// answers all the same; nothing is taken back.
func TestAckReactionRefusedDoesNotFailTheTurn(t *testing.T) {
	t.Parallel()
	r := newAckRig(t, "🦩", engine.Config{})
	r.adapter.reactErr = &core.PermanentError{Err: errors.New("Bad Request: REACTION_INVALID")}
	r.model.Enqueue(llmtest.Text("hello there"))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "hi"))
	r.waitEvents(t, "send hello there")
	require.Eventually(t, func() bool { return strings.Contains(r.logs.String(), "acknowledgement reaction not shown") },
		waitFor, 2*time.Millisecond)
	logs := r.logs.String()
	require.Equal(t, 1, strings.Count(logs, "acknowledgement reaction not shown"), logs)
	require.Contains(t, logs, `level=INFO msg="acknowledgement reaction not shown" run=`)
	require.Contains(t, logs, "REACTION_INVALID")
}

// Unset, the bot reacts to nothing.
func TestAckReactionOffReactsToNothing(t *testing.T) {
	t.Parallel()
	r := newAckRig(t, "", engine.Config{})
	r.model.Enqueue(llmtest.Text("hello there"))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "hi"))
	r.waitEvents(t, "send hello there")
	r.model.Enqueue(llmtest.Text("again"))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "more"))
	r.waitEvents(t, "send hello there", "send again")
}

// A scheduled job's turn answers no user message: no acknowledgement,
// though the user's last message has an id a reaction could go on.
func TestAckReactionNotOnAScheduledTurn(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clock := coretest.NewClock(t0)
	res, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: web, ChannelThreadID: "ada", ChannelUserID: "ada",
		Text: "hi", PlatformMessageID: "in-0", Now: t0})
	require.NoError(t, err)
	job := core.Job{ConversationID: res.Conversation.ID, Name: "stand-up", Text: "Ask what they plan today.",
		Recurrence: "every 1h", DueAt: t0.Add(time.Minute)}
	require.NoError(t, st.CreateRecurringJob(t.Context(), &job, 10))
	r := newAckRig(t, "👀", engine.Config{Store: st, Clock: clock, PollInterval: time.Second, RecurringTurns: true})
	r.model.Enqueue(llmtest.Text("What is the plan today?"))
	clock.Advance(time.Minute)
	r.waitEvents(t, "send What is the plan today?")
	r.model.WaitRequests(t, 1, waitFor)
}

// The model reacting with the acknowledgement's own emoji (tool react)
// makes it the model's reaction: it stays once the reply is out. Another
// emoji is the model's beside it, and the acknowledgement goes.
func TestAckReactionTheModelChoseStays(t *testing.T) {
	t.Parallel()
	r := newAckRig(t, "👀", engine.Config{Plugins: []core.Plugin{reactions.New()}})
	r.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "react", `{"emoji":"👀"}`)), llmtest.Text("seen"))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "look"))
	r.waitEvents(t, "react in-1 👀", "react in-1 👀", "send seen")
	r.model.WaitRequests(t, 2, waitFor)

	r.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c2", "react", `{"emoji":"🎉"}`)), llmtest.Text("congrats"))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "I passed"))
	require.Eventually(t, func() bool { return len(r.adapter.Events()) == 7 }, waitFor, 2*time.Millisecond)
	got := r.adapter.Events()
	// The acknowledgement goes on beside the model's call: either may
	// reach the platform first.
	require.ElementsMatch(t, []string{"react in-3 👀", "react in-3 🎉"}, got[3:5])
	require.Equal(t, []string{"send congrats", "unreact in-3 👀"}, got[5:])
}
