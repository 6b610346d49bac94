package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// usage reads q of the conversation.
func (b *testBundle) usage(t *testing.T, q core.LimitQuery) core.LimitUsage {
	t.Helper()
	u, err := b.st.LimitUsage(b.ctx, q)
	require.NoError(t, err)
	return u
}

// requireAt checks that got is want, to the microsecond.
func requireAt(t *testing.T, want time.Time, got *time.Time, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, got, msgAndArgs...)
	require.True(t, want.Equal(*got), "want %v, got %v: %v", want, *got, msgAndArgs)
}

// testLimitMessages: the N-th newest user message, chat commands and the
// bot's messages not counted, held messages counted; and the newest user
// message or notice, for a notice in force.
func testLimitMessages(t *testing.T, open Opener) {
	b := setup(t, open)
	const thread = "flood"
	var conv core.Conversation
	for i := range 4 {
		conv = b.inbound(t, thread, "spam", b.at(time.Duration(i)*time.Second+time.Microsecond), false).Conversation
		b.command(t, thread, "/help", "Here's what I understand", b.at(time.Duration(i)*time.Second+2*time.Microsecond))
	}
	held, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: thread,
		ChannelUserID: "user-" + thread, Text: "more", Now: b.at(5 * time.Second),
		Metadata: map[string]any{"limited": core.LimitMessagesPerMinute}})
	require.NoError(t, err)
	reply := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Source: core.SourceReply,
		Content: "ok", CreatedAt: b.at(6 * time.Second)}
	require.NoError(t, b.st.AppendMessage(b.ctx, reply))

	u := b.usage(t, core.LimitQuery{ConversationID: conv.ID, NthMessage: 1, Last: true})
	require.Equal(t, conv.ID, u.ConversationID)
	requireAt(t, b.at(5*time.Second), u.NthMessageAt, "the newest user message, held or not")
	byThread := b.usage(t, core.LimitQuery{Platform: telegram, ChannelThreadID: thread, NthMessage: 1, Last: true})
	require.Equal(t, u, byThread, "found by its thread alike")
	require.Equal(t, core.LimitMessagesPerMinute, u.Last["limited"], "the newest user message or notice: not the reply after it")
	u = b.usage(t, core.LimitQuery{ConversationID: conv.ID, NthMessage: 3})
	requireAt(t, b.at(2*time.Second+time.Microsecond), u.NthMessageAt, "commands are not counted")
	require.Nil(t, u.Last, "not asked for")
	require.Nil(t, u.NthTurnAt)
	require.Zero(t, u.Tokens)
	u = b.usage(t, core.LimitQuery{ConversationID: conv.ID, NthMessage: 5})
	requireAt(t, b.at(time.Microsecond), u.NthMessageAt)
	u = b.usage(t, core.LimitQuery{ConversationID: conv.ID, NthMessage: 6})
	require.Nil(t, u.NthMessageAt, "only five user messages")

	// A notice is the newest once stored.
	notice := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Source: core.SourceSystem, Content: "slow down",
		Metadata:  map[string]any{"limit_notice": core.LimitMessagesPerMinute, "limit_until": "2030-03-04T05:07:12Z"},
		CreatedAt: b.at(7 * time.Second)}
	require.NoError(t, b.st.AppendMessage(b.ctx, notice))
	u = b.usage(t, core.LimitQuery{ConversationID: conv.ID, Last: true})
	require.Equal(t, "2030-03-04T05:07:12Z", u.Last["limit_until"])
	require.Nil(t, u.NthMessageAt)
	require.Equal(t, held.Message.Metadata, map[string]any{"limited": core.LimitMessagesPerMinute})

	// Another conversation, and one with nothing, read nothing of it.
	other := b.userMessage(t, "quiet", b.at(time.Second))
	u = b.usage(t, core.LimitQuery{ConversationID: other.ID, NthMessage: 2, NthTurn: 1, TokensSince: b.t0, Last: true})
	require.Nil(t, u.NthMessageAt)
	require.Nil(t, u.NthTurnAt)
	require.Zero(t, u.Tokens)
	require.Nil(t, u.Last, "a user message without metadata")
	u = b.usage(t, core.LimitQuery{ConversationID: 9999, NthMessage: 1, NthTurn: 1, TokensSince: b.t0, Last: true})
	require.Equal(t, core.LimitUsage{}, u)
	u = b.usage(t, core.LimitQuery{Platform: telegram, ChannelThreadID: "nobody", NthMessage: 1, NthTurn: 1, TokensSince: b.t0, Last: true})
	require.Equal(t, core.LimitUsage{}, u, "a new user has used nothing")
	u = b.usage(t, core.LimitQuery{Platform: web, ChannelThreadID: thread, NthMessage: 1})
	require.Zero(t, u.ConversationID, "the thread on another platform")
}

// testLimitTurnsAndTokens: the N-th newest user turn that started, the
// skipped ones, the queued one and other kinds not counted, the running
// one counted unless asked not to; the tokens of the runs of any kind
// that finished in the window.
func testLimitTurnsAndTokens(t *testing.T, open Opener) {
	b := setup(t, open)
	const thread = "chatty"
	day := 24 * time.Hour
	done := func(at time.Time, tokens int) core.RunCompletion {
		return core.RunCompletion{Status: core.RunSucceeded, Now: at.Add(10 * time.Second), PromptTokens: tokens - 1,
			CompletionTokens: 1, TotalTokens: tokens, Model: "m"}
	}
	// Two days ago: a turn of 5,000 tokens, long out of the window.
	old := b.turn(t, telegram, thread, b.at(-2*day), done(b.at(-2*day), 5000))
	conv := old.ConversationID
	// In the window: three user turns, a failed one among them, and a
	// recurring turn's run.
	b.turn(t, telegram, thread, b.at(-3*time.Hour), done(b.at(-3*time.Hour), 100))
	b.turn(t, telegram, thread, b.at(-2*time.Hour), core.RunCompletion{Status: core.RunFailed, Error: "llm: 500",
		Now: b.at(-2*time.Hour + time.Second), TotalTokens: 20})
	cron := b.planKind(t, thread, core.RunCronTurn, b.at(-90*time.Minute))
	run, err := b.st.ClaimRun(b.ctx, "w", b.at(-90*time.Minute))
	require.NoError(t, err)
	require.Equal(t, cron.ID, run.ID)
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w", done(b.at(-90*time.Minute), 300)))
	b.turn(t, telegram, thread, b.at(-time.Hour), done(b.at(-time.Hour), 1000))
	// A turn skipped as it started never called the model.
	b.turn(t, telegram, thread, b.at(-30*time.Minute), core.RunCompletion{Status: core.RunSkipped, Error: "limit"})

	u := b.usage(t, core.LimitQuery{ConversationID: conv, NthTurn: 1, TokensSince: b.at(-day)})
	requireAt(t, b.at(-time.Hour), u.NthTurnAt, "the newest user turn that started; the skipped one is not")
	require.Equal(t, int64(100+20+300+1000), u.Tokens, "every run finished in the window, of any kind, failed ones too")
	u = b.usage(t, core.LimitQuery{ConversationID: conv, NthTurn: 3})
	requireAt(t, b.at(-3*time.Hour), u.NthTurnAt, "the cron turn is not a user turn")
	u = b.usage(t, core.LimitQuery{ConversationID: conv, NthTurn: 4})
	requireAt(t, b.at(-2*day), u.NthTurnAt, "the window is the caller's to apply")
	u = b.usage(t, core.LimitQuery{ConversationID: conv, NthTurn: 5})
	require.Nil(t, u.NthTurnAt)

	// The window's edge is exact to the microsecond, open at its start.
	u = b.usage(t, core.LimitQuery{ConversationID: conv, TokensSince: b.at(-time.Hour + 10*time.Second - time.Microsecond)})
	require.Equal(t, int64(1000), u.Tokens, "finished a microsecond after the start: in")
	u = b.usage(t, core.LimitQuery{ConversationID: conv, TokensSince: b.at(-time.Hour + 10*time.Second)})
	require.Zero(t, u.Tokens, "finished at the start: out")

	// A queued turn has not started; a running one has.
	b.inbound(t, thread, "and now?", b.t0, true)
	u = b.usage(t, core.LimitQuery{ConversationID: conv, NthTurn: 1})
	requireAt(t, b.at(-time.Hour), u.NthTurnAt, "queued")
	running, err := b.st.ClaimRun(b.ctx, "w", b.at(time.Second))
	require.NoError(t, err)
	require.NotNil(t, running)
	u = b.usage(t, core.LimitQuery{ConversationID: conv, NthTurn: 1})
	requireAt(t, b.at(time.Second), u.NthTurnAt, "running")
	u = b.usage(t, core.LimitQuery{ConversationID: conv, NthTurn: 1, NotRunning: true})
	requireAt(t, b.at(-time.Hour), u.NthTurnAt, "the running turn is the one being checked")

	spends, err := b.st.TokenSpends(b.ctx, conv, b.at(-day))
	require.NoError(t, err)
	var got []int64
	for _, s := range spends {
		got = append(got, s.Tokens)
	}
	require.Equal(t, []int64{100, 20, 300, 1000}, got, "oldest first; the skipped run used none")
	require.True(t, spends[0].At.Equal(b.at(-3*time.Hour+10*time.Second)), "%v", spends[0].At)
}

// testLimitedMessages: the console's count of held messages since a time,
// per limit and per user, most held first.
func testLimitedMessages(t *testing.T, open Opener) {
	b := setup(t, open)
	hold := func(thread, limit string, at time.Time) {
		_, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: thread,
			ChannelUserID: "user-" + thread, DisplayName: "User " + thread, Text: "x", Now: at,
			Metadata: map[string]any{"limited": limit, "limit_until": "2030-03-05T00:00:00Z"}})
		require.NoError(t, err)
	}
	hold("ann", core.LimitTurnsPerDay, b.at(-25*time.Hour)) // before the span
	hold("ann", core.LimitTurnsPerDay, b.at(-time.Hour))
	for i := range 3 {
		hold("bob", core.LimitMessagesPerMinute, b.at(time.Duration(-10+i)*time.Second))
	}
	hold("bob", core.LimitTokensPerDay, b.at(-time.Second))
	hold("cid", core.LimitTokensPerDay, b.at(-2*time.Minute))
	b.userMessage(t, "dan", b.at(-time.Minute)) // not held
	// A notice is no held message.
	conv := b.userMessage(t, "eve", b.at(-time.Minute))
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant,
		Source: core.SourceSystem, Content: "limit", CreatedAt: b.at(-time.Minute),
		Metadata: map[string]any{"limit_notice": core.LimitTurnsPerDay, "limit_until": "2030-03-05T00:00:00Z"}}))

	sum, err := b.st.LimitedMessages(b.ctx, b.at(-24*time.Hour), 2)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{core.LimitMessagesPerMinute: 3, core.LimitTurnsPerDay: 1, core.LimitTokensPerDay: 2}, sum.ByLimit)
	require.Len(t, sum.Users, 2, "the top two")
	bob := sum.Users[0]
	require.Equal(t, "user-bob", bob.ChannelUserID)
	require.Equal(t, telegram, bob.Platform)
	require.Equal(t, "User bob", bob.DisplayName)
	require.Equal(t, int64(4), bob.Held)
	require.Equal(t, map[string]int64{core.LimitMessagesPerMinute: 3, core.LimitTokensPerDay: 1}, bob.ByLimit)
	require.True(t, bob.Last.Equal(b.at(-time.Second)), "%v", bob.Last)
	require.Equal(t, "user-cid", sum.Users[1].ChannelUserID, "one each: the most recent first")

	sum, err = b.st.LimitedMessages(b.ctx, b.at(time.Hour), 5)
	require.NoError(t, err)
	require.Empty(t, sum.ByLimit)
	require.Empty(t, sum.Users)
}
