package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

const waitFor = 10 * time.Second

type testBundle struct {
	ctx     context.Context
	store   *store.Store
	model   *llmtest.Server
	adapter *coretest.Adapter
	disp    *engine.Dispatcher
	// jobs wakes the job loop: a test that moves the clock wakes it too,
	// since the loop may have read the time just before the move and
	// armed its timer just after, relative to the new time.
	jobs *core.Waker
}

type setupOpts struct {
	plugins    []core.Plugin
	store      *store.Store
	allow      []string
	maxRetries int
	timeout    time.Duration
	baseURL    string
	// clock, when set, drives debounce, polling, heartbeats and reaping.
	clock      core.Clock
	debounce   time.Duration
	policy     core.BusyPolicy
	staleAfter time.Duration
	workers    int
	// poll is the claim loop's fallback wake-up (default 50ms).
	poll time.Duration
	// model, when set, replaces the llmtest-backed client.
	model core.LLM
	// noStart leaves the dispatcher unstarted.
	noStart bool
	// scheduled makes the dispatcher send scheduled messages.
	scheduled bool
	// commands answers chat commands.
	commands core.CommandHandler
	// wrapStore, when set, stands between the dispatcher and the store.
	wrapStore func(*store.Store) core.Store
}

// personaLayer is a tiny prompt plugin, so tests see a system prompt.
type personaLayer struct{ text string }

func (p personaLayer) Name() string { return "testpersona" }
func (p personaLayer) PromptLayers(context.Context, *core.Turn) ([]core.PromptLayer, error) {
	return []core.PromptLayer{{Level: core.LayerPersona, Name: "persona", Text: p.text}}, nil
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	return migrated(t, storetest.OpenSQLite(t))
}

func migrated(t testing.TB, st *store.Store) *store.Store {
	t.Helper()
	require.NoError(t, st.Migrate(context.Background()))
	return st
}

func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	ctx := context.Background()
	st := o.store
	if st == nil {
		st = openStore(t)
	}
	b := &testBundle{ctx: ctx, store: st, model: llmtest.NewServer(t), adapter: coretest.NewAdapter(web),
		jobs: core.NewWaker()}
	base := o.baseURL
	if base == "" {
		base = b.model.URL()
	}
	if o.timeout == 0 {
		o.timeout = 5 * time.Second
	}
	var model core.LLM = o.model
	if model == nil {
		client, err := llm.New(llm.Config{BaseURL: base, APIKey: "sk-test", Model: "test-model", Timeout: o.timeout, MaxRetries: o.maxRetries})
		require.NoError(t, err)
		model = client
	}
	if o.poll == 0 {
		o.poll = 50 * time.Millisecond
	}
	plugins := append([]core.Plugin{personaLayer{text: "You are Testy."}}, o.plugins...)
	var err error
	var dispStore core.Store = b.store
	if o.wrapStore != nil {
		dispStore = o.wrapStore(b.store)
	}
	b.disp, err = engine.New(engine.Config{
		Store: dispStore, LLM: model, Plugins: plugins, Adapters: []core.Adapter{b.adapter},
		Gate: access.NewGate(access.Open, nil, o.allow), PollInterval: o.poll, Clock: o.clock,
		Debounce: o.debounce, DuringGeneration: o.policy, StaleAfter: o.staleAfter, MaxTurns: o.workers,
		ScheduledMessages: o.scheduled, JobWaker: b.jobs, Commands: o.commands,
	})
	require.NoError(t, err)
	require.NoError(t, b.adapter.Start(ctx, b.disp))
	if o.noStart {
		return b
	}
	require.NoError(t, b.disp.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.disp.Stop(stopCtx))
	})
	return b
}

// waitRun waits until the conversation's newest run has finished.
func (b *testBundle) waitRun(t *testing.T, thread string) core.Run {
	t.Helper()
	var last core.Run
	require.Eventually(t, func() bool {
		conv, err := b.store.ConversationByThread(b.ctx, web, thread)
		if err != nil {
			return false
		}
		runs, err := b.store.Runs(b.ctx, conv.ID)
		if err != nil || len(runs) == 0 {
			return false
		}
		last = runs[len(runs)-1]
		return last.Status != core.RunQueued && last.Status != core.RunRunning
	}, waitFor, 5*time.Millisecond)
	return last
}

func (b *testBundle) messages(t *testing.T, thread string) []core.Message {
	t.Helper()
	conv, err := b.store.ConversationByThread(b.ctx, web, thread)
	require.NoError(t, err)
	msgs, err := b.store.Messages(b.ctx, conv.ID)
	require.NoError(t, err)
	return msgs
}

func TestTurnReachesModelAndReplyIsStored(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testTurnRoundTrip(t, setup(t, setupOpts{}))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testTurnRoundTrip(t, setup(t, setupOpts{store: migrated(t, storetest.OpenPostgres(t))}))
	})
}

func testTurnRoundTrip(t *testing.T, b *testBundle) {
	b.model.Enqueue(llmtest.Text("Hi there!").WithUsage(12, 3))

	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "hello bot"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "u1", sent[0].ChannelThreadID)
	require.Equal(t, "Hi there!", sent[0].Text)

	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	msgs := reqs[0].Messages()
	require.Len(t, msgs, 2)
	require.Equal(t, "system", msgs[0].Role)
	require.Equal(t, "You are Testy.", msgs[0].Content)
	require.Equal(t, "user", msgs[1].Role)
	require.Equal(t, "hello bot", msgs[1].Content)

	run := b.waitRun(t, "u1")
	require.Equal(t, core.RunSucceeded, run.Status)
	require.Equal(t, core.RunUserTurn, run.Kind)
	require.Equal(t, 12, run.PromptTokens)
	require.Equal(t, 3, run.CompletionTokens)
	require.Equal(t, 15, run.TotalTokens)
	require.Equal(t, llmtest.DefaultModel, run.Model, "the model the server answered as")
	require.Equal(t, "Hi there!", run.Record.Output)
	require.Len(t, run.Record.Prompt, 1)
	require.Equal(t, &core.HistoryRef{FromSeq: 1, ToSeq: 1, Count: 1}, run.Record.History)

	stored := b.messages(t, "u1")
	require.Len(t, stored, 2)
	require.Equal(t, int64(1), stored[0].Seq)
	require.Equal(t, core.RoleUser, stored[0].Role)
	require.Equal(t, "hello bot", stored[0].Content)
	require.Equal(t, int64(2), stored[1].Seq)
	require.Equal(t, core.RoleAssistant, stored[1].Role)
	require.Equal(t, core.SourceReply, stored[1].Source)
	require.Equal(t, "Hi there!", stored[1].Content)
	require.NotEmpty(t, stored[1].PlatformMessageID)
	require.NotNil(t, stored[1].RunID)
	require.Equal(t, run.ID, *stored[1].RunID)
}

// A turn shows the typing indicator once it has run for a moment
// (typing.Delay, 400 ms, on the dispatcher's clock), refreshed until its
// reply; a turn answered sooner shows none and saves the round trip.
func TestTypingShowsForASlowTurnOnly(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock})
	release := make(chan struct{})
	b.model.Enqueue(llmtest.Text("At once."), llmtest.Text("Thought about it.").WithHold(release))

	require.NoError(t, b.adapter.Deliver(b.ctx, "fast", "an easy one"))
	require.Equal(t, "At once.", b.adapter.WaitSent(t, 1, waitFor)[0].Text)
	b.waitRun(t, "fast")
	clock.Advance(time.Second)
	require.Zero(t, b.adapter.TypingCount(), "a turn answered at once showed typing")

	require.NoError(t, b.adapter.Deliver(b.ctx, "slow", "a hard question"))
	b.model.WaitRequests(t, 2, waitFor)
	require.Zero(t, b.adapter.TypingCount(), "typing before the delay")
	clock.WaitForTimer(t, clock.Now().Add(400*time.Millisecond), waitFor)
	clock.Advance(400 * time.Millisecond)
	require.Eventually(t, func() bool { return b.adapter.TypingCount() == 1 }, waitFor, time.Millisecond,
		"the user saw no typing while the model thought")
	clock.WaitForTimer(t, clock.Now().Add(4*time.Second), waitFor)
	clock.Advance(4 * time.Second)
	require.Eventually(t, func() bool { return b.adapter.TypingCount() == 2 }, waitFor, time.Millisecond,
		"typing was not refreshed")
	close(release)
	require.Equal(t, "Thought about it.", b.adapter.WaitSent(t, 2, waitFor)[1].Text)
	b.waitRun(t, "slow")
	clock.Advance(time.Minute)
	require.Equal(t, 2, b.adapter.TypingCount(), "typing after the reply")
}

// adder is a plugin with one tool.
type adder struct{}

func (adder) Name() string { return "adder" }
func (adder) Tools(context.Context, *core.Turn) ([]llm.Tool, error) {
	return []llm.Tool{{
		Name:        "add",
		Description: "Add two integers.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
		Call: func(_ context.Context, raw json.RawMessage) (string, error) {
			var args struct{ A, B int }
			if err := json.Unmarshal(raw, &args); err != nil {
				return "", fmt.Errorf("bad arguments: %w", err)
			}
			return fmt.Sprint(args.A + args.B), nil
		},
	}}, nil
}

func TestToolCallRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{plugins: []core.Plugin{adder{}}})
	b.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "add", `{"a":2,"b":40}`)),
		llmtest.ToolCalls(llmtest.Call("call_2", "add", `{"a":`)),
		llmtest.Text("2 + 40 = 42"),
	)
	require.NoError(t, b.adapter.Deliver(b.ctx, "u2", "what is 2+40?"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "2 + 40 = 42", sent[0].Text)

	reqs := b.model.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, []string{"add"}, reqs[0].ToolNames())
	res, ok := reqs[1].ToolMessage("call_1")
	require.True(t, ok)
	require.Equal(t, "42", res.Content)
	bad, ok := reqs[2].ToolMessage("call_2")
	require.True(t, ok, "bad arguments go back to the model as the tool result")
	require.Contains(t, bad.Content, "error")

	run := b.waitRun(t, "u2")
	require.Equal(t, core.RunSucceeded, run.Status)
	require.Len(t, run.Record.ToolCalls, 2)
	require.Equal(t, "add", run.Record.ToolCalls[0].Name)
	require.Equal(t, "42", run.Record.ToolCalls[0].Result)
	require.True(t, run.Record.ToolCalls[1].IsError)
}

// otherAdder offers a tool under a name another plugin has taken.
type otherAdder struct{}

func (otherAdder) Name() string { return "other-adder" }
func (otherAdder) Tools(context.Context, *core.Turn) ([]llm.Tool, error) {
	return []llm.Tool{
		{Name: "add", Call: func(context.Context, json.RawMessage) (string, error) { return "from the second plugin", nil }},
		{Name: "subtract", Call: func(context.Context, json.RawMessage) (string, error) { return "0", nil }},
	}, nil
}

func TestADuplicateToolKeepsTheFirstPluginsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{plugins: []core.Plugin{adder{}, otherAdder{}}})
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "add", `{"a":1,"b":2}`)), llmtest.Text("3"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "dup", "1+2?"))
	require.Equal(t, "3", b.adapter.WaitSent(t, 1, waitFor)[0].Text)
	reqs := b.model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"add", "subtract"}, reqs[0].ToolNames())
	res, ok := reqs[1].ToolMessage("call_1")
	require.True(t, ok)
	require.Equal(t, "3", res.Content, "the call went to the first plugin's add")
}

func TestModelRateLimitedThenAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxRetries: 2})
	b.model.Enqueue(llmtest.Status(429).WithRetryAfter("1"), llmtest.Text("sorry for the wait"))
	start := time.Now()
	require.NoError(t, b.adapter.Deliver(b.ctx, "u3", "are you there?"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "sorry for the wait", sent[0].Text)
	require.GreaterOrEqual(t, time.Since(start), time.Second, "Retry-After: 1 was honoured")
	require.Len(t, b.model.Requests(), 2)
	require.Equal(t, core.RunSucceeded, b.waitRun(t, "u3").Status)
}

func TestModelFailureSendsFriendlyMessage(t *testing.T) {
	t.Parallel()
	cases := map[string]func(b *testBundle){
		"server errors": func(b *testBundle) {
			b.model.Enqueue(llmtest.Status(500), llmtest.Status(500))
		},
		"garbage": func(b *testBundle) { b.model.Enqueue(llmtest.Malformed()) },
		"slow":    func(b *testBundle) { b.model.Enqueue(llmtest.Text("too late").WithDelay(time.Minute)) },
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{maxRetries: 1, timeout: 300 * time.Millisecond})
			script(b)
			require.NoError(t, b.adapter.Deliver(b.ctx, "u4", "hello?"))
			sent := b.adapter.WaitSent(t, 1, waitFor)
			require.Equal(t, config.DefaultFailureMessage, sent[0].Text)
			run := b.waitRun(t, "u4")
			require.Equal(t, core.RunFailed, run.Status)
			require.NotEmpty(t, run.Error)
			require.NotContains(t, run.Error, "sk-test")
			msgs := b.messages(t, "u4")
			require.Len(t, msgs, 2)
			require.Equal(t, "hello?", msgs[0].Content, "the user's message stays stored")
			require.Equal(t, config.DefaultFailureMessage, msgs[1].Content)
			require.Equal(t, core.SourceSystem, msgs[1].Source)
		})
	}
}

func TestModelDown(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: connection refused.
	b := setup(t, setupOpts{baseURL: "http://127.0.0.1:1/v1", maxRetries: 1, timeout: time.Second})
	require.NoError(t, b.adapter.Deliver(b.ctx, "u5", "anyone?"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, config.DefaultFailureMessage, sent[0].Text)
	run := b.waitRun(t, "u5")
	require.Equal(t, core.RunFailed, run.Status)
	require.Contains(t, run.Error, "llm")
}

func TestFailureNoticeIsNotShownToTheModelAsItsOwnWords(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxRetries: 0})
	b.model.Enqueue(llmtest.Status(500))
	require.NoError(t, b.adapter.Deliver(b.ctx, "u6", "first"))
	b.adapter.WaitSent(t, 1, waitFor)
	b.waitRun(t, "u6")
	b.model.Enqueue(llmtest.Text("back again"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "u6", "second"))
	b.adapter.WaitSent(t, 2, waitFor)
	reqs := b.model.Requests()
	last := reqs[len(reqs)-1].Messages()
	var contents []string
	for _, m := range last {
		contents = append(contents, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{"system:You are Testy.", "user:first", "user:second"}, contents)
}

func TestIgnoredInbound(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{allow: []string{"web:friend"}})
	h := core.InboundHandler(b.disp)
	group := core.InboundMessage{Platform: web, ChannelThreadID: "g1", ChannelUserID: "friend", Text: "hi all", Direct: false}
	require.NoError(t, h.HandleInbound(b.ctx, group))
	stranger := core.InboundMessage{Platform: web, ChannelThreadID: "s1", ChannelUserID: "stranger", Text: "hi", Direct: true}
	require.NoError(t, h.HandleInbound(b.ctx, stranger))
	blank := core.InboundMessage{Platform: web, ChannelThreadID: "friend", ChannelUserID: "friend", Text: " \n\t ", Direct: true}
	require.NoError(t, h.HandleInbound(b.ctx, blank))
	for _, thread := range []string{"g1", "s1", "friend"} {
		_, err := b.store.ConversationByThread(b.ctx, web, thread)
		require.True(t, errors.Is(err, core.ErrNotFound), "thread %s: nothing stored, got %v", thread, err)
	}
	require.Empty(t, b.model.Requests())

	b.model.Enqueue(llmtest.Text("hello friend"))
	ok := core.InboundMessage{Platform: web, ChannelThreadID: "friend", ChannelUserID: "friend", Text: "hi", Direct: true}
	require.NoError(t, h.HandleInbound(b.ctx, ok))
	require.Equal(t, "hello friend", b.adapter.WaitSent(t, 1, waitFor)[0].Text)
}

func TestLongInboundIsCutWithANote(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.model.Enqueue(llmtest.Text("that is long"))
	long := strings.Repeat("é", 10_000) // 20,000 bytes
	require.NoError(t, b.adapter.Deliver(b.ctx, "u7", long))
	b.adapter.WaitSent(t, 1, waitFor)
	msgs := b.messages(t, "u7")
	require.Len(t, msgs[0].Content, core.MaxInboundBytes)
	require.Equal(t, strings.Repeat("é", core.MaxInboundBytes/2), msgs[0].Content)
	user := b.model.Requests()[0].LastUserMessage()
	require.True(t, strings.HasPrefix(user, msgs[0].Content))
	require.Contains(t, user, "cut to its first 16384 bytes; the user sent 20000 bytes")
}

func TestTurnSeesMessagesStoredByAnotherProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.model.Enqueue(llmtest.Text("first answer"), llmtest.Text("second answer"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "u8", "first"))
	b.adapter.WaitSent(t, 1, waitFor)
	b.waitRun(t, "u8")

	// Another process (a scheduled send, the API) appends to the
	// conversation behind this dispatcher's back.
	conv, err := b.store.ConversationByThread(b.ctx, web, "u8")
	require.NoError(t, err)
	require.NoError(t, b.store.AppendMessage(b.ctx, &core.Message{
		ConversationID: conv.ID, Role: core.RoleAssistant, Content: "reminder: water the plants", Source: core.SourceScheduledSend,
	}))

	require.NoError(t, b.adapter.Deliver(b.ctx, "u8", "second"))
	b.adapter.WaitSent(t, 2, waitFor)
	reqs := b.model.Requests()
	var got []string
	for _, m := range reqs[1].Messages() {
		got = append(got, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{
		"system:You are Testy.", "user:first", "assistant:first answer",
		"assistant:reminder: water the plants", "user:second",
	}, got)
}

func TestPermanentSendErrorIsRecordedNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.adapter.FailSends(&core.PermanentError{Reason: "bot was blocked by the user"})
	b.model.Enqueue(llmtest.Text("you will never see this"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "blocked", "hi"))
	run := b.waitRun(t, "blocked")
	require.Equal(t, core.RunFailed, run.Status)
	require.Contains(t, run.Error, "bot was blocked by the user")

	msgs := b.messages(t, "blocked")
	require.Len(t, msgs, 2)
	require.Equal(t, "you will never see this", msgs[1].Content, "the reply is kept")
	require.Contains(t, msgs[1].Metadata["undelivered"], "blocked")
	require.Empty(t, b.adapter.Sent())
	require.Len(t, b.model.Requests(), 1, "one turn, no retry loop")
	pending, err := b.store.HasPendingRuns(b.ctx)
	require.NoError(t, err)
	require.False(t, pending)
}
