package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/commands"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// pinger answers "/ping" with Markdown, and fails "/ping fail".
type pinger struct {
	mu   sync.Mutex
	runs []string
}

func (p *pinger) IsCommand(text string) bool { return core.CommandName(text) == "ping" }

func (p *pinger) Run(_ context.Context, conv core.Conversation, text string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs = append(p.runs, conv.ChannelThreadID+" "+text)
	if strings.HasSuffix(text, "fail") {
		return "", errors.New("the database is on fire")
	}
	return "**pong**", nil
}

func (p *pinger) Commands() []core.CommandInfo {
	return []core.CommandInfo{{Name: "ping", Description: "Check the bot is there"}}
}

func (p *pinger) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.runs)
}

func TestCommandIsAnsweredWithoutTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{commands: &pinger{}})
	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "/ping"))
	// Answered before HandleInbound returned: no turn, no wait.
	sent := b.adapter.Sent()
	require.Len(t, sent, 1)
	require.Equal(t, "pong", sent[0].Text, "Markdown, made plain for an adapter without rich text")
	require.Empty(t, b.model.Requests())

	stored := b.messages(t, "u1")
	require.Len(t, stored, 2)
	require.Equal(t, core.RoleUser, stored[0].Role)
	require.Equal(t, "/ping", stored[0].Content)
	require.Equal(t, core.SourceCommand, stored[0].Source)
	require.Equal(t, "ping", stored[0].Metadata["command"])
	require.Equal(t, core.RoleAssistant, stored[1].Role)
	require.Equal(t, "**pong**", stored[1].Content)
	require.Equal(t, core.SourceCommand, stored[1].Source)
	require.Equal(t, "ping", stored[1].Metadata["command"])
	require.NotEmpty(t, stored[1].PlatformMessageID)
	require.Equal(t, stored[0].SessionRecordID, stored[1].SessionRecordID)
	require.Equal(t, core.FormatRichText, core.FormatOf(stored[1]), "shown again as Markdown")

	conv, err := b.store.ConversationByThread(b.ctx, web, "u1")
	require.NoError(t, err)
	runs, err := b.store.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Empty(t, runs, "a command plans no run")
	require.Equal(t, []core.CommandInfo{{Name: "ping", Description: "Check the bot is there"}}, b.disp.Commands())
}

func TestCommandRedeliveryIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	p := &pinger{}
	b := setup(t, setupOpts{commands: p})
	msg := core.InboundMessage{Platform: web, ChannelThreadID: "u1", ChannelUserID: "u1",
		Text: "/ping", PlatformMessageID: "m-1", Direct: true}
	require.NoError(t, b.disp.HandleInbound(b.ctx, msg))
	require.NoError(t, b.disp.HandleInbound(b.ctx, msg))
	require.Len(t, b.adapter.Sent(), 1)
	require.Equal(t, 1, p.count())
	require.Len(t, b.messages(t, "u1"), 2)
}

func TestFailingCommandApologises(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{commands: &pinger{}})
	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "/ping fail"))
	sent := b.adapter.Sent()
	require.Len(t, sent, 1)
	require.Equal(t, core.DefaultCommandFailure, sent[0].Text)
	stored := b.messages(t, "u1")
	require.Len(t, stored, 2)
	require.Equal(t, core.DefaultCommandFailure, stored[1].Content)
	require.Equal(t, true, stored[1].Metadata["command_failed"])
	require.NotContains(t, stored[1].Content, "fire", "the error is logged, not shown")
	require.Empty(t, b.model.Requests())
}

// Without a command handler every /word is text for the model.
func TestWithoutCommandsSlashWordsGoToTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.model.Enqueue(llmtest.Text("what ping?"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "/ping"))
	require.Equal(t, "what ping?", b.adapter.WaitSent(t, 1, waitFor)[0].Text)
	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, []string{"/ping"}, userContents(reqs[0]))
	require.Empty(t, b.disp.Commands())
}

// A command sent while a turn waits out its debounce is answered at once;
// the turn answers the user's message later, knowing about the command,
// with the user's message last.
func TestCommandBesideAQueuedTurn(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, debounce: 1500 * time.Millisecond, commands: &pinger{}})
	b.model.Enqueue(llmtest.Text("hello!"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "hi"))
	clock.Advance(100 * time.Millisecond)
	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "/ping"))
	require.Equal(t, []string{"pong"}, sentTexts(b.adapter), "answered at once")
	require.Empty(t, b.model.Requests())

	// The command did not move the debounce: the turn is due 1.5s after "hi".
	due := t0.Add(1500 * time.Millisecond)
	clock.WaitForTimer(t, due, waitFor)
	clock.Advance(1400 * time.Millisecond)
	sent := b.adapter.WaitSent(t, 2, waitFor)
	require.Equal(t, "hello!", sent[1].Text)
	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	var got []string
	for _, m := range reqs[0].Messages()[1:] {
		got = append(got, m.Role+": "+m.Content)
	}
	require.Equal(t, []string{"user: /ping", "assistant: **pong**", "user: hi"}, got)
	run := b.waitRun(t, "u1")
	require.Equal(t, core.RunSucceeded, run.Status)
	require.Equal(t, due, run.RunAfter)
}

// /new ends the session record: the next message's turn sees a fresh
// window, the command and its answer with the record before it.
func TestNewCommandGivesTheNextTurnAFreshWindow(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	h := commands.New(commands.Config{Store: st, BotName: "Testy"})
	b := setup(t, setupOpts{store: st, commands: h})
	b.model.Enqueue(llmtest.Text("Nice to meet you, Ada."), llmtest.Text("I don't know yet!"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "my name is Ada"))
	b.adapter.WaitSent(t, 1, waitFor)
	b.waitRun(t, "u1")

	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "/new"))
	sent := b.adapter.Sent()
	require.Len(t, sent, 2)
	require.Contains(t, sent[1].Text, "Your next message begins a new conversation")

	require.NoError(t, b.adapter.Deliver(b.ctx, "u1", "what's my name?"))
	require.Equal(t, "I don't know yet!", b.adapter.WaitSent(t, 3, waitFor)[2].Text)
	reqs := b.model.Requests()
	require.Len(t, reqs, 2)
	msgs := reqs[1].Messages()
	require.Len(t, msgs, 2, "the system prompt and the new message only: %+v", msgs)
	require.Equal(t, "what's my name?", msgs[1].Content)

	b.waitRun(t, "u1")
	stored := b.messages(t, "u1")
	require.Len(t, stored, 6)
	first, last := stored[0].SessionRecordID, stored[4].SessionRecordID
	require.NotEqual(t, *first, *last)
	for _, m := range stored[:4] {
		require.Equal(t, *first, *m.SessionRecordID, "%q is in the first record", m.Content)
	}
	require.Equal(t, *last, *stored[5].SessionRecordID)
}
