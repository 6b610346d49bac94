package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// botCases are the cases of several bots on one database: each bot's
// view (store.ForBot) sees its own conversations, runs and jobs only.
func botCases() []storeCase {
	return []storeCase{
		{"BotsOwnTheirConversations", testBotsOwnTheirConversations},
		{"BotsClaimTheirOwnRuns", testBotsClaimTheirOwnRuns},
		{"BotsClaimTheirOwnJobs", testBotsClaimTheirOwnJobs},
		{"BotsSummariseTheirOwnRecords", testBotsSummariseTheirOwnRecords},
		{"BotsMigrationKeepsRowsDefault", testBotsMigrationKeepsRowsDefault},
	}
}

// botInbound records a user message on telegram thread of st's bot.
func (b *testBundle) botInbound(t *testing.T, st *store.Store, thread, text string, now time.Time, plan bool) core.InboundResult {
	t.Helper()
	res, err := st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: thread,
		ChannelUserID: "user-" + thread, DisplayName: "Ann", Text: text, Now: now, PlanRun: plan})
	require.NoError(t, err)
	return res
}

// testBotsOwnTheirConversations: the same person on the same platform
// and thread writing to two bots is two conversations, whose messages
// never meet; each bot's lists, lookups and searches see its own; the
// view of every bot sees both and says whose each is.
func testBotsOwnTheirConversations(t *testing.T, open Opener) {
	b := setup(t, open)
	ada, bob := b.st.ForBot("ada"), b.st.ForBot("bob")
	require.Equal(t, store.DefaultBot, b.st.Bot(), "Open is the default bot's view")

	a := b.botInbound(t, ada, "42", "my secret is bread", b.t0, false).Conversation
	o := b.botInbound(t, bob, "42", "hello bob", b.at(time.Minute), false).Conversation
	again := b.botInbound(t, ada, "42", "and jam", b.at(2*time.Minute), false).Conversation
	require.NotEqual(t, a.ID, o.ID, "one conversation per bot")
	require.Equal(t, a.ID, again.ID, "the bot's own conversation again")
	require.Equal(t, int64(2), again.LastSeq)
	require.Equal(t, "ada", a.BotID)
	require.Equal(t, "bob", o.BotID)

	msgs, err := bob.RecentMessages(b.ctx, o.ID, 10)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "hello bob", msgs[0].Content, "nothing ada was told")

	for _, v := range []struct {
		st   *store.Store
		want []int64
	}{{ada, []int64{a.ID}}, {bob, []int64{o.ID}}, {b.st, nil}, {b.st.AllBots(), []int64{a.ID, o.ID}}} {
		got, err := v.st.ConversationByThread(b.ctx, telegram, "42")
		if v.want == nil {
			require.ErrorIs(t, err, core.ErrNotFound, "the default bot never talked on the thread")
		} else {
			require.NoError(t, err)
			require.Equal(t, v.want[0], got.ID, v.st.Bot())
		}
		list, err := v.st.Conversations(b.ctx, 0, 0)
		require.NoError(t, err)
		require.ElementsMatch(t, v.want, convIDs(list), v.st.Bot())
		byActivity, err := v.st.ConversationsByActivity(b.ctx, 0, 0)
		require.NoError(t, err)
		require.ElementsMatch(t, v.want, convIDs(byActivity), v.st.Bot())
		found, err := v.st.SearchConversations(b.ctx, "Ann", 10, 0)
		require.NoError(t, err)
		require.ElementsMatch(t, v.want, convIDs(found), v.st.Bot())
	}
	found, err := bob.SearchConversations(b.ctx, "bread", 10, 0)
	require.NoError(t, err)
	require.Empty(t, found, "ada's words are not found through bob")

	byID, err := bob.Conversation(b.ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, "ada", byID.BotID, "a lookup by id says whose it is")
	usage, err := bob.LimitUsage(b.ctx, core.LimitQuery{Platform: telegram, ChannelThreadID: "42", NthMessage: 2})
	require.NoError(t, err)
	require.Equal(t, o.ID, usage.ConversationID)
	require.Nil(t, usage.NthMessageAt, "bob's conversation has one message")

	_, err = b.st.AllBots().RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "7", Text: "x", Now: b.t0})
	require.Error(t, err, "a conversation must belong to a bot")
	require.Panics(t, func() { b.st.ForBot("Not A Bot") })
	db, ok := ada.Database().(interface{ Bot() string })
	require.True(t, ok, "a plugin can ask its handle whose it is")
	require.Equal(t, "ada", db.Bot())
}

// testBotsClaimTheirOwnRuns: a bot's claims, next-due times and pending
// checks see its runs only; finishing a run claims the bot's next; the
// view of every bot claims any.
func testBotsClaimTheirOwnRuns(t *testing.T, open Opener) {
	b := setup(t, open)
	ada, bob := b.st.ForBot("ada"), b.st.ForBot("bob")
	a1 := b.botInbound(t, ada, "1", "hi", b.t0, true)
	a2 := b.botInbound(t, ada, "2", "hi", b.at(time.Second), true)
	o1 := b.botInbound(t, bob, "1", "hi", b.at(-time.Minute), true) // the oldest
	now := b.at(time.Minute)

	next, err := ada.NextRunAfter(b.ctx)
	require.NoError(t, err)
	require.True(t, next.Equal(b.t0), "ada's oldest, not bob's")
	pending, err := b.st.HasPendingRuns(b.ctx)
	require.NoError(t, err)
	require.False(t, pending, "the default bot has nothing")
	none, err := b.st.ClaimRun(b.ctx, "w", now)
	require.NoError(t, err)
	require.Nil(t, none)

	run, err := ada.ClaimRun(b.ctx, "w", now, telegram)
	require.NoError(t, err)
	require.NotNil(t, run)
	require.Equal(t, a1.Run.ID, run.ID, "ada's oldest; bob's older run is bob's")
	next2, err := ada.CompleteRunAndClaim(b.ctx, run.ID, "w", core.RunCompletion{Status: core.RunSucceeded, Now: now})
	require.NoError(t, err)
	require.NotNil(t, next2)
	require.Equal(t, a2.Run.ID, next2.ID, "finishing claims the bot's next")
	more, err := ada.ClaimRuns(b.ctx, "w", now, 10)
	require.NoError(t, err)
	require.Empty(t, more, "bob's run stays bob's")

	pending, err = bob.HasPendingRuns(b.ctx)
	require.NoError(t, err)
	require.True(t, pending)
	got, err := bob.ClaimRuns(b.ctx, "w", now, 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, o1.Run.ID, got[0].ID)

	b.botInbound(t, bob, "2", "hi", now, true)
	all, err := b.st.AllBots().ClaimRun(b.ctx, "w", now)
	require.NoError(t, err)
	require.NotNil(t, all, "the view of every bot claims any")
	require.Zero(t, b.count(t, "runs r", "r.bot_id <> (SELECT bot_id FROM conversations c WHERE c.id = r.conversation_id)"),
		"a run carries its conversation's bot")
}

// testBotsClaimTheirOwnJobs: a bot's scheduler takes its jobs only; the
// console's job lists and counts are the bot's, or every bot's; an
// idempotency key is the bot's own.
func testBotsClaimTheirOwnJobs(t *testing.T, open Opener) {
	b := setup(t, open)
	ada, bob := b.st.ForBot("ada"), b.st.ForBot("bob")
	a := b.botInbound(t, ada, "1", "hi", b.t0, false).Conversation
	o := b.botInbound(t, bob, "1", "hi", b.t0, false).Conversation
	_, err := ada.ScheduleMessage(b.ctx, &core.Job{ConversationID: a.ID, Text: "for ada's user", DueAt: b.at(time.Minute)}, false, 50)
	require.NoError(t, err)
	keyed := func(conv int64) *core.Job {
		return &core.Job{ConversationID: conv, Text: "routed", DueAt: b.at(2 * time.Minute), IdempotencyKey: "k1", CreatedAt: b.t0}
	}
	ja, jo := keyed(a.ID), keyed(o.ID)
	created, err := ada.RouteMessage(b.ctx, ja, 50, b.t0)
	require.NoError(t, err)
	require.True(t, created)
	created, err = bob.RouteMessage(b.ctx, jo, 50, b.t0)
	require.NoError(t, err)
	require.True(t, created, "another bot's caller may use the same key")
	require.NotEqual(t, ja.ID, jo.ID)
	byKey, err := bob.JobByIdempotencyKey(b.ctx, "k1", b.t0)
	require.NoError(t, err)
	require.Equal(t, jo.ID, byKey.ID)

	kinds := []core.JobKind{core.JobMessage}
	next, err := bob.NextJobDue(b.ctx, kinds)
	require.NoError(t, err)
	require.True(t, next.Equal(b.at(2*time.Minute)), "bob's, not ada's sooner one")
	now := b.at(time.Hour)
	got, err := bob.ClaimDueJobs(b.ctx, "w", now, now.Add(time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, jo.ID, got[0].ID)
	none, err := b.st.ClaimDueJobs(b.ctx, "w", now, now.Add(time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Empty(t, none, "the default bot has no jobs")

	for _, v := range []struct {
		st   *store.Store
		want int
	}{{ada, 2}, {bob, 1}, {b.st, 0}, {b.st.AllBots(), 3}} {
		rows, err := v.st.JobsAcross(b.ctx, core.JobFilter{})
		require.NoError(t, err)
		require.Len(t, rows, v.want, v.st.Bot())
		for _, r := range rows {
			want := map[int64]string{a.ID: "ada", o.ID: "bob"}[r.ConversationID]
			require.Equal(t, want, r.BotID, "a row says whose job it is")
		}
		n, err := v.st.CountJobs(b.ctx, core.JobFilter{Platform: telegram})
		require.NoError(t, err)
		require.Equal(t, int64(v.want), n, v.st.Bot())
		jobs, err := v.st.Jobs(b.ctx, 0, "", 10)
		require.NoError(t, err)
		require.Len(t, jobs, v.want, v.st.Bot())
	}
	depth, err := ada.QueueDepth(b.ctx, now)
	require.NoError(t, err)
	require.Equal(t, int64(2), depth["jobs_due"], "ada's two are due and untaken")
}

// testBotsSummariseTheirOwnRecords: a bot's summary engine claims the
// ended session records of its own conversations.
func testBotsSummariseTheirOwnRecords(t *testing.T, open Opener) {
	b := setup(t, open)
	ada, bob := b.st.ForBot("ada"), b.st.ForBot("bob")
	a := b.botInbound(t, ada, "1", "bye", b.t0, false).Conversation
	b.botInbound(t, bob, "1", "bye", b.t0, false)
	recs, err := ada.ClaimEndedRecords(b.ctx, b.at(time.Hour), 10*time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, a.ID, recs[0].ConversationID)
	recs, err = bob.ClaimEndedRecords(b.ctx, b.at(time.Hour), 10*time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, recs, 1, "bob's is left for bob")
}

// testBotsMigrationKeepsRowsDefault: a database from before bots (its
// conversations, runs and jobs without a bot) migrates with every row the
// default bot's, and the default bot carries on its conversations.
func testBotsMigrationKeepsRowsDefault(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.claimed(t, "old", "w", b.t0)
	conv, err := b.st.Conversation(b.ctx, run.ConversationID)
	require.NoError(t, err)
	_, err = b.st.ScheduleMessage(b.ctx, &core.Job{ConversationID: conv.ID, Text: "later", DueAt: b.at(time.Hour)}, false, 50)
	require.NoError(t, err)

	// Back to before migration 18: it is undone, its rows as they were,
	// and 19 (which needs its columns) is to run again. The migrations
	// after them stay, untouched by either.
	db := b.st.DB()
	for _, q := range []string{
		`DROP INDEX conversations_thread`, `DROP INDEX conversations_bot`, `DROP INDEX runs_bot_queued_due`,
		`DROP INDEX jobs_bot_status_due`, `DROP INDEX jobs_idempotency_key`,
		`ALTER TABLE conversations DROP COLUMN bot_id`, `ALTER TABLE runs DROP COLUMN bot_id`, `ALTER TABLE jobs DROP COLUMN bot_id`,
		`CREATE UNIQUE INDEX conversations_thread ON conversations (platform, channel_thread_id)`,
		`CREATE UNIQUE INDEX jobs_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL`,
		`DELETE FROM schema_migrations WHERE version IN (18, 19)`,
	} {
		require.NoError(t, db.Exec(q).Error, q)
	}
	pending, err := b.st.PendingMigrations(b.ctx)
	require.NoError(t, err)
	require.Len(t, pending, 2)
	require.Equal(t, []int{18, 19}, []int{pending[0].Version, pending[1].Version})
	require.NoError(t, b.st.Migrate(b.ctx))

	for _, table := range []string{"conversations", "runs", "jobs"} {
		require.Zero(t, b.count(t, table, "bot_id <> 'default'"), table)
		require.NotZero(t, b.count(t, table, "bot_id = 'default'"), table)
	}
	got, err := b.st.ConversationByThread(b.ctx, telegram, "old")
	require.NoError(t, err)
	require.Equal(t, store.DefaultBot, got.BotID)
	res := b.inbound(t, "old", "still me", b.at(time.Minute), false)
	require.Equal(t, conv.ID, res.Conversation.ID, "the default bot carries on")
	require.Equal(t, int64(2), res.Conversation.LastSeq)
	_, err = b.st.ForBot("ada").ConversationByThread(b.ctx, telegram, "old")
	require.ErrorIs(t, err, core.ErrNotFound, "another bot never sees it")
}
