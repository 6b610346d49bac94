package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// turn records a user message on thread at at, claims the run it plans
// and completes it with c (at c.Now, default at). It returns the run as
// stored.
func (b *testBundle) turn(t *testing.T, p core.Platform, thread string, at time.Time, c core.RunCompletion) core.Run {
	t.Helper()
	_, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: p, ChannelThreadID: thread,
		ChannelUserID: "user-" + thread, DisplayName: thread, Text: "hello", Now: at, PlanRun: true})
	require.NoError(t, err)
	run, err := b.st.ClaimRun(b.ctx, "w", at)
	require.NoError(t, err)
	require.NotNil(t, run)
	if c.Now.IsZero() {
		c.Now = at
	}
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w", c))
	stored, err := b.st.Run(b.ctx, run.ID)
	require.NoError(t, err)
	return stored
}

// userMessage records a user message on thread at at, planning nothing.
func (b *testBundle) userMessage(t *testing.T, thread string, at time.Time) core.Conversation {
	t.Helper()
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: thread,
		ChannelUserID: "user-" + thread, DisplayName: thread, Text: "hi", Now: at})
	require.NoError(t, err)
	return res.Conversation
}

// testActivity: messages in and out and finished runs per hour and per
// day, empty hours present, each counted in the bucket it falls in to the
// microsecond; silence and skipped runs are not activity.
func testActivity(t *testing.T, open Opener) {
	b := setup(t, open)
	day := time.Date(2030, 3, 4, 0, 0, 0, 0, time.UTC)
	at := func(h, m, s, us int) time.Time {
		return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(us)*time.Microsecond)
	}
	reply := func(text string, created time.Time, meta map[string]any) []*core.Message {
		return []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: text, CreatedAt: created, Metadata: meta}}
	}
	// 05:00–06:00: a turn answered.
	b.turn(t, telegram, "a", at(5, 10, 0, 0), core.RunCompletion{Status: core.RunSucceeded, Now: at(5, 20, 0, 0),
		Messages: reply("hello!", at(5, 20, 0, 0), nil)})
	// 07:00–08:00: a failed turn with its notice, a silent one, and a
	// message a microsecond before the hour ends.
	b.turn(t, telegram, "b", at(7, 30, 0, 0), core.RunCompletion{Status: core.RunFailed, Error: "llm: 503", Now: at(7, 31, 0, 0),
		Messages: reply("Sorry, something went wrong.", at(7, 31, 0, 0), map[string]any{"failure_notice": true})})
	b.turn(t, telegram, "a", at(7, 40, 0, 0), core.RunCompletion{Status: core.RunSucceeded, Now: at(7, 45, 0, 0),
		Messages: reply("", at(7, 45, 0, 0), map[string]any{"silent": true})})
	b.userMessage(t, "b", at(7, 59, 59, 999999))
	// 08:00–: a scheduled message on the hour, a skipped run.
	conv, err := b.st.ConversationByThread(b.ctx, telegram, "a")
	require.NoError(t, err)
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant,
		Source: core.SourceScheduledSend, Content: "reminder", CreatedAt: at(8, 0, 0, 0)}))
	b.turn(t, telegram, "c", at(8, 5, 0, 0), core.RunCompletion{Status: core.RunSkipped, Error: "skipped"})
	// Before the first hour, and after now.
	b.userMessage(t, "d", at(4, 59, 59, 999999))
	b.userMessage(t, "d", at(8, 30, 0, 0))

	since, now := at(5, 6, 7, 0), at(8, 16, 7, 0)
	hours, err := b.st.Activity(b.ctx, since, now, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []core.ActivityBucket{
		{Start: at(5, 0, 0, 0), Inbound: 1, Outbound: 1, Turns: 1},
		{Start: at(6, 0, 0, 0)},
		{Start: at(7, 0, 0, 0), Inbound: 3, Outbound: 1, Turns: 2, Failed: 1},
		{Start: at(8, 0, 0, 0), Inbound: 1, Outbound: 1},
	}, hours)

	days, err := b.st.Activity(b.ctx, now.Add(-24*time.Hour), now, 24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, []core.ActivityBucket{
		{Start: day.Add(-24 * time.Hour)},
		{Start: day, Inbound: 6, Outbound: 3, Turns: 3, Failed: 1},
	}, days)

	none, err := b.st.Activity(b.ctx, now, since, time.Hour)
	require.NoError(t, err)
	require.Empty(t, none, "now before since")
	_, err = b.st.Activity(b.ctx, since, now, 1500*time.Millisecond)
	require.Error(t, err, "a bucket of a fraction of a second")
}

// testRecentFailures: failed turns, sends kept undelivered and failed
// jobs, newest first (a turn before its send at the same instant), since
// a time, at most limit.
func testRecentFailures(t *testing.T, open Opener) {
	b := setup(t, open)
	// Before since: left out.
	b.turn(t, telegram, "old", b.at(-time.Hour), core.RunCompletion{Status: core.RunFailed, Error: "too old"})
	turn := b.turn(t, telegram, "a", b.at(time.Minute), core.RunCompletion{Status: core.RunFailed, Error: "llm: 503 Service Unavailable"})
	// A busy notice that could not be sent: no run.
	busy := b.userMessage(t, "b", b.at(90*time.Second))
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: busy.ID, Role: core.RoleAssistant,
		Source: core.SourceSystem, Content: "One moment", CreatedAt: b.at(2 * time.Minute),
		Metadata: map[string]any{"busy_notice": true, "undelivered": "telegram: 502 Bad Gateway"}}))
	// A reply that could not be sent fails its turn too.
	unsent := b.turn(t, telegram, "c", b.at(3*time.Minute), core.RunCompletion{Status: core.RunFailed,
		Error: "sending reply: discord: 403", Messages: []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply,
			Content: "the answer", Metadata: map[string]any{"undelivered": "discord: 403"}}}})
	// Not failures: a key of the same name deeper down, a turn that
	// succeeded, a sent job.
	ok := b.turn(t, telegram, "d", b.at(3*time.Minute+time.Second), core.RunCompletion{Status: core.RunSucceeded,
		Messages: []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: "fine",
			Metadata: map[string]any{"parts": map[string]any{"undelivered": "none"}}}}})
	job := &core.Job{ConversationID: busy.ID, Kind: core.JobMessage, Status: core.JobFailed, Text: "reminder",
		DueAt: b.at(time.Minute), Attempts: 3, LastError: "telegram: 403 Forbidden: bot was blocked by the user",
		CreatedAt: b.t0, UpdatedAt: b.at(4 * time.Minute)}
	require.NoError(t, b.st.CreateJob(b.ctx, job))
	require.NoError(t, b.st.CreateJob(b.ctx, &core.Job{ConversationID: busy.ID, Kind: core.JobMessage, Status: core.JobSent,
		Text: "sent", DueAt: b.at(time.Minute), CreatedAt: b.t0, UpdatedAt: b.at(5 * time.Minute)}))
	require.NoError(t, b.st.CreateJob(b.ctx, &core.Job{ConversationID: busy.ID, Kind: core.JobMessage, Status: core.JobFailed,
		Text: "old", DueAt: b.at(-2 * time.Hour), CreatedAt: b.at(-2 * time.Hour), UpdatedAt: b.at(-time.Hour)}))

	all, err := b.st.RecentFailures(b.ctx, b.t0, 50)
	require.NoError(t, err)
	want := []core.Failure{
		{Kind: "job", At: b.at(4 * time.Minute), ConversationID: busy.ID, JobID: job.ID, Error: "telegram: 403 Forbidden: bot was blocked by the user"},
		{Kind: "turn", At: b.at(3 * time.Minute), ConversationID: unsent.ConversationID, RunID: unsent.ID, Error: "sending reply: discord: 403"},
		{Kind: "send", At: b.at(3 * time.Minute), ConversationID: unsent.ConversationID, RunID: unsent.ID, Error: "discord: 403"},
		{Kind: "send", At: b.at(2 * time.Minute), ConversationID: busy.ID, Error: "telegram: 502 Bad Gateway"},
		{Kind: "turn", At: b.at(time.Minute), ConversationID: turn.ConversationID, RunID: turn.ID, Error: "llm: 503 Service Unavailable"},
	}
	require.Equal(t, want, all)
	require.NotEqual(t, ok.ConversationID, unsent.ConversationID)

	top, err := b.st.RecentFailures(b.ctx, b.t0, 3)
	require.NoError(t, err)
	require.Equal(t, want[:3], top, "limit")

	later, err := b.st.RecentFailures(b.ctx, b.at(150*time.Second), 50)
	require.NoError(t, err)
	require.Equal(t, want[:3], later, "since")

	none, err := b.st.RecentFailures(b.ctx, b.at(time.Hour), 50)
	require.NoError(t, err)
	require.Empty(t, none)
}

// testTokensByDay: tokens per day in a zone and per model, across a day
// boundary that UTC does not have, across a DST change, over a span longer
// than one statement's days; runs from before models were kept are "".
func testTokensByDay(t *testing.T, open Opener) {
	b := setup(t, open)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	utcAt := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	n := 0
	run := func(at, model string, prompt, completion int) {
		n++
		b.turn(t, telegram, fmt.Sprintf("t%d", n), utcAt(at), core.RunCompletion{Status: core.RunSucceeded,
			Model: model, PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion})
	}
	run("2030-03-03T14:00:00Z", "gpt-4o", 1000, 100) // 23:00 in Tokyo, 03-03
	run("2030-03-04T14:30:00Z", "gpt-4o", 100, 10)   // 23:30 in Tokyo, 03-04
	run("2030-03-04T15:30:00Z", "gpt-4o", 200, 20)   // 00:30 in Tokyo, 03-05
	run("2030-03-04T15:40:00Z", "", 7, 3)            // a run from before models were kept
	run("2030-03-05T01:00:00Z", "gpt-4o-mini", 50, 5)
	// Summer time starts in Berlin on 2030-03-31: that day has 23 hours.
	run("2030-03-31T21:30:00Z", "gpt-4o", 1, 1) // 23:30 in Berlin, 03-31
	run("2030-03-31T22:30:00Z", "gpt-4o", 2, 2) // 00:30 in Berlin, 04-01
	// No tokens: left out.
	n++
	b.turn(t, telegram, "skipped", utcAt("2030-04-02T10:00:00Z"), core.RunCompletion{Status: core.RunSkipped, Error: "skipped"})

	got, err := b.st.TokensByDay(b.ctx, time.Date(2030, 3, 4, 0, 0, 0, 0, tokyo), tokyo)
	require.NoError(t, err)
	require.Equal(t, []core.TokenDay{
		{Day: "2030-03-04", Model: "gpt-4o", Prompt: 100, Completion: 10},
		{Day: "2030-03-05", Model: "", Prompt: 7, Completion: 3},
		{Day: "2030-03-05", Model: "gpt-4o", Prompt: 200, Completion: 20},
		{Day: "2030-03-05", Model: "gpt-4o-mini", Prompt: 50, Completion: 5},
		{Day: "2030-04-01", Model: "gpt-4o", Prompt: 3, Completion: 3},
	}, got)

	utc := []core.TokenDay{
		{Day: "2030-03-03", Model: "gpt-4o", Prompt: 1000, Completion: 100},
		{Day: "2030-03-04", Model: "", Prompt: 7, Completion: 3},
		{Day: "2030-03-04", Model: "gpt-4o", Prompt: 300, Completion: 30},
		{Day: "2030-03-05", Model: "gpt-4o-mini", Prompt: 50, Completion: 5},
		{Day: "2030-03-31", Model: "gpt-4o", Prompt: 3, Completion: 3},
	}
	got, err = b.st.TokensByDay(b.ctx, time.Date(2030, 3, 3, 0, 0, 0, 0, time.UTC), time.UTC)
	require.NoError(t, err)
	require.Equal(t, utc, got)
	got, err = b.st.TokensByDay(b.ctx, time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC)
	require.NoError(t, err)
	require.Equal(t, utc, got, "over more than two years of days")

	got, err = b.st.TokensByDay(b.ctx, time.Date(2030, 3, 31, 0, 0, 0, 0, berlin), berlin)
	require.NoError(t, err)
	require.Equal(t, []core.TokenDay{
		{Day: "2030-03-31", Model: "gpt-4o", Prompt: 1, Completion: 1},
		{Day: "2030-04-01", Model: "gpt-4o", Prompt: 2, Completion: 2},
	}, got)

	got, err = b.st.TokensByDay(b.ctx, time.Date(2030, 5, 1, 0, 0, 0, 0, time.UTC), time.UTC)
	require.NoError(t, err)
	require.Empty(t, got, "nothing since")
}

// testJobsAcross: jobs of every conversation with their conversation's
// platform, name and zone, filtered by status, kind, platform and due
// range, by due time or by last change, paged; CountJobs counts the same.
func testJobsAcross(t *testing.T, open Opener) {
	b := setup(t, open)
	ann, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "ann", ChannelUserID: "u-ann",
		DisplayName: "Ann", TimeZone: "Europe/Berlin", Text: "hi", Now: b.t0})
	require.NoError(t, err)
	bob, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: discord, ChannelThreadID: "bob", ChannelUserID: "u-bob",
		DisplayName: "Bob", Text: "hi", Now: b.t0})
	require.NoError(t, err)
	a, c := ann.Conversation.ID, bob.Conversation.ID
	mk := func(conv int64, kind core.JobKind, status core.JobStatus, due, updated time.Duration) int64 {
		j := &core.Job{ConversationID: conv, Kind: kind, Status: status, Text: "x", DueAt: b.at(due),
			CreatedAt: b.at(-time.Hour), UpdatedAt: b.at(updated)}
		if kind == core.JobAgentTurn {
			j.Recurrence, j.NextRunAt = "0 9 * * *", ptr(b.at(due))
		}
		require.NoError(t, b.st.CreateJob(b.ctx, j))
		return j.ID
	}
	j1 := mk(a, core.JobMessage, core.JobPending, time.Hour, -10*time.Minute)
	j2 := mk(c, core.JobMessage, core.JobPending, 2*time.Hour, -5*time.Minute)
	j3 := mk(a, core.JobAgentTurn, core.JobPending, 30*time.Minute, -20*time.Minute)
	j4 := mk(c, core.JobMessage, core.JobFailed, -time.Hour, -time.Minute)
	j5 := mk(a, core.JobProactive, core.JobSent, -2*time.Hour, -2*time.Minute)
	j6 := mk(c, core.JobMessage, core.JobCancelled, 3*time.Hour, -3*time.Minute)

	list := func(f core.JobFilter) []int64 {
		t.Helper()
		rows, err := b.st.JobsAcross(b.ctx, f)
		require.NoError(t, err)
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		n, err := b.st.CountJobs(b.ctx, f)
		require.NoError(t, err)
		if f.Limit == 0 && f.Offset == 0 {
			require.Equal(t, int64(len(ids)), n, "CountJobs counts what JobsAcross lists")
		}
		return ids
	}
	from, to := b.t0, b.at(2*time.Hour)
	require.Equal(t, []int64{j5, j4, j3, j1, j2, j6}, list(core.JobFilter{}), "every job, soonest due first")
	require.Equal(t, []int64{j3, j1, j2}, list(core.JobFilter{Statuses: []core.JobStatus{core.JobPending}}))
	require.Equal(t, []int64{j2, j6}, list(core.JobFilter{Statuses: []core.JobStatus{core.JobPending, core.JobCancelled}, Platform: discord}))
	require.Equal(t, []int64{j4, j1, j2, j6}, list(core.JobFilter{Kinds: []core.JobKind{core.JobMessage}}))
	require.Equal(t, []int64{j5, j3}, list(core.JobFilter{Kinds: []core.JobKind{core.JobAgentTurn, core.JobProactive}}))
	require.Equal(t, []int64{j4, j2, j6}, list(core.JobFilter{Platform: discord}))
	require.Empty(t, list(core.JobFilter{Platform: slack}))
	require.Equal(t, []int64{j3, j1}, list(core.JobFilter{DueFrom: &from, DueTo: &to}), "from inclusive, to exclusive")
	require.Equal(t, []int64{j5, j4}, list(core.JobFilter{DueTo: &from}))
	require.Equal(t, []int64{j3, j1, j2, j6}, list(core.JobFilter{DueFrom: &from}))
	require.Equal(t, []int64{j4, j5, j6, j2, j1, j3}, list(core.JobFilter{Recent: true}), "last changed first")
	require.Equal(t, []int64{j4}, list(core.JobFilter{Statuses: []core.JobStatus{core.JobFailed}, Recent: true}))
	require.Equal(t, []int64{j4, j3}, list(core.JobFilter{Limit: 2, Offset: 1}))
	require.Equal(t, []int64{j6}, list(core.JobFilter{Limit: 2, Offset: 5}))
	n, err := b.st.CountJobs(b.ctx, core.JobFilter{Limit: 2, Offset: 1, Platform: telegram})
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "a count ignores the page")

	rows, err := b.st.JobsAcross(b.ctx, core.JobFilter{Statuses: []core.JobStatus{core.JobPending}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, core.JobRow{Job: rows[0].Job, Platform: telegram, DisplayName: "Ann", TimeZone: "Europe/Berlin", BotID: "default"}, rows[0])
	j, err := b.st.Job(b.ctx, j3)
	require.NoError(t, err)
	require.Equal(t, j, rows[0].Job, "the job as stored")
	rows, err = b.st.JobsAcross(b.ctx, core.JobFilter{Platform: discord, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, core.JobRow{Job: rows[0].Job, Platform: discord, DisplayName: "Bob", BotID: "default"}, rows[0])
	require.Equal(t, j4, rows[0].ID)
}

// testRetryJob: a failed job becomes pending again, due now, its attempts
// from zero, the error it failed with kept in the note of who retried it;
// the scheduler takes it. A job that has not failed is refused.
func testRetryJob(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.userMessage(t, "a", b.t0)
	failed := &core.Job{ConversationID: conv.ID, Kind: core.JobMessage, Status: core.JobFailed, Text: "remember the milk",
		DueAt: b.at(-time.Hour), Attempts: 3, LastError: "telegram: 502 Bad Gateway", CreatedAt: b.at(-2 * time.Hour),
		UpdatedAt: b.at(-time.Hour)}
	require.NoError(t, b.st.CreateJob(b.ctx, failed))
	pending := &core.Job{ConversationID: conv.ID, Kind: core.JobMessage, Status: core.JobPending, Text: "later",
		DueAt: b.at(time.Hour), CreatedAt: b.t0}
	require.NoError(t, b.st.CreateJob(b.ctx, pending))

	now := b.at(5 * time.Minute)
	got, err := b.st.RetryJob(b.ctx, failed.ID, now, "console")
	require.NoError(t, err)
	want := *failed
	want.Status, want.DueAt, want.Attempts, want.UpdatedAt = core.JobPending, now, 0, now
	want.RetriedBy, want.RetriedAt = "console", &now
	want.LastError = "retried by console at 2030-03-04T05:11:07Z; it had failed: telegram: 502 Bad Gateway"
	require.Equal(t, want, got)
	stored, err := b.st.Job(b.ctx, failed.ID)
	require.NoError(t, err)
	require.Equal(t, want, stored)

	again, err := b.st.RetryJob(b.ctx, failed.ID, now, "console")
	require.ErrorIs(t, err, core.ErrNotFailed, "now pending")
	require.Equal(t, core.JobPending, again.Status)
	_, err = b.st.RetryJob(b.ctx, pending.ID, now, "console")
	require.ErrorIs(t, err, core.ErrNotFailed)
	_, err = b.st.RetryJob(b.ctx, pending.ID+100, now, "console")
	require.ErrorIs(t, err, core.ErrNotFound)

	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", now, now.Add(time.Minute), []core.JobKind{core.JobMessage}, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1, "the scheduler takes it again")
	require.Equal(t, failed.ID, claimed[0].ID)
	ok, err := b.st.CompleteMessageJob(b.ctx, failed.ID, "w", &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant,
		Content: "remember the milk", Source: core.SourceScheduledSend, CreatedAt: now})
	require.NoError(t, err)
	require.True(t, ok)
	sent, err := b.st.Job(b.ctx, failed.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobSent, sent.Status)
	require.Equal(t, "console", sent.RetriedBy, "the retry stays recorded once the job is sent")
	require.NotNil(t, sent.RetriedAt)
	require.True(t, now.Equal(*sent.RetriedAt), "retried at %v", sent.RetriedAt)
}

// testSearchConversations: by display name or channel user id (any case,
// LIKE's wildcards taken literally) or by the words of a message (as
// SearchMessages finds them), most recently active first, paged; deleted
// conversations and replaced texts are no longer found.
func testSearchConversations(t *testing.T, open Opener) {
	b := setup(t, open)
	add := func(thread, user, name, text string, at time.Duration) core.Conversation {
		res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: thread,
			ChannelUserID: user, DisplayName: name, Text: text, Now: b.at(at)})
		require.NoError(t, err)
		return res.Conversation
	}
	ann := add("a", "user-a", "Ann Smith", "I love sourdough bread", time.Minute)
	bob := add("b", "bob_99", "Bob", "the weather is nice", 2*time.Minute)
	zoe := add("c", "c-3", "Zoë", "Bread again? 我今天烤了面包", 3*time.Minute)
	dana := add("d", "d", "Dana 100%", "nothing here", 4*time.Minute)
	eve := add("e", "a999", "Eve", "hello", 5*time.Minute)
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: eve.ID, Role: core.RoleAssistant,
		Source: core.SourceSystem, Content: "Sorry, zebra trouble", CreatedAt: b.at(6 * time.Minute),
		Metadata: map[string]any{"failure_notice": true}}))

	search := func(q string, limit, offset int) []int64 {
		t.Helper()
		got, err := b.st.SearchConversations(b.ctx, q, limit, offset)
		require.NoError(t, err, q)
		return convIDs(got)
	}
	require.Equal(t, []int64{zoe.ID, ann.ID}, search("bread", 10, 0), "a word of a message, most recently active first")
	require.Equal(t, []int64{ann.ID}, search("bread", 1, 1), "paged")
	require.Equal(t, []int64{ann.ID}, search("sourdo", 0, 0), "a prefix")
	require.Equal(t, []int64{bob.ID}, search("BOB", 10, 0), "a name, any case")
	require.Equal(t, []int64{zoe.ID}, search("zoë", 10, 0))
	require.Equal(t, []int64{ann.ID}, search("nn sm", 10, 0), "inside a name")
	require.Equal(t, []int64{bob.ID}, search("_99", 10, 0), "a user id; _ is no wildcard")
	require.Equal(t, []int64{dana.ID}, search("100%", 10, 0), "% is no wildcard")
	require.Equal(t, []int64{zoe.ID}, search("面包", 10, 0), "Chinese")
	require.Equal(t, []int64{bob.ID}, search("nice weather", 10, 0), "every word, in one message")
	require.Empty(t, search("weather bread", 10, 0), "words of different messages")
	require.Empty(t, search("zebra", 10, 0), "failure notices are not searched")
	require.Empty(t, search("quixotic", 10, 0))
	_, err := b.st.SearchConversations(b.ctx, "   ", 10, 0)
	require.ErrorIs(t, err, core.ErrEmptyQuery)

	// A new text replaces the old in the index, and a deleted
	// conversation leaves it.
	msgs, err := b.st.Messages(b.ctx, ann.ID)
	require.NoError(t, err)
	m := msgs[0]
	m.Content = "rye only"
	require.NoError(t, b.st.SetMessageText(b.ctx, m))
	require.Empty(t, search("sourdough", 10, 0))
	require.Equal(t, []int64{ann.ID}, search("rye", 10, 0))
	_, err = b.st.DeleteConversation(b.ctx, zoe.ID, false)
	require.NoError(t, err)
	require.Empty(t, search("bread", 10, 0))
	require.Empty(t, search("面包", 10, 0))
	// A message written after the last search is found.
	add("a", "user-a", "Ann Smith", "fresh bread today", 7*time.Minute)
	require.Equal(t, []int64{ann.ID}, search("bread", 10, 0))
}

// testConversationTokens sums one conversation's runs only.
func testConversationTokens(t *testing.T, open Opener) {
	b := setup(t, open)
	r1 := b.turn(t, telegram, "a", b.t0, core.RunCompletion{Status: core.RunSucceeded, PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110})
	b.turn(t, telegram, "a", b.at(time.Minute), core.RunCompletion{Status: core.RunFailed, Error: "x", PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55})
	other := b.turn(t, telegram, "b", b.at(2*time.Minute), core.RunCompletion{Status: core.RunSucceeded, PromptTokens: 7, CompletionTokens: 3})
	p, c, err := b.st.ConversationTokens(b.ctx, r1.ConversationID)
	require.NoError(t, err)
	require.Equal(t, [2]int64{150, 15}, [2]int64{p, c})
	p, c, err = b.st.ConversationTokens(b.ctx, other.ConversationID)
	require.NoError(t, err)
	require.Equal(t, [2]int64{7, 3}, [2]int64{p, c})
	p, c, err = b.st.ConversationTokens(b.ctx, other.ConversationID+100)
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 0}, [2]int64{p, c}, "no such conversation")
}

// testRunModelStored: the model a run completed with is kept, by
// CompleteRun and CompleteRunAndClaim alike; a run that called none has "".
func testRunModelStored(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.turn(t, telegram, "a", b.t0, core.RunCompletion{Status: core.RunSucceeded, Model: "gpt-4o-2024-08-06", PromptTokens: 1})
	require.Equal(t, "gpt-4o-2024-08-06", run.Model)
	runs, err := b.st.Runs(b.ctx, run.ConversationID)
	require.NoError(t, err)
	require.Equal(t, "gpt-4o-2024-08-06", runs[0].Model)

	first := b.claimed(t, "b", "w", b.at(time.Minute))
	b.inbound(t, "c", "hi", b.at(time.Minute), true)
	next, err := b.st.CompleteRunAndClaim(b.ctx, first.ID, "w", core.RunCompletion{Status: core.RunSucceeded, Model: "llama3", Now: b.at(2 * time.Minute)})
	require.NoError(t, err)
	require.NotNil(t, next)
	require.Empty(t, next.Model, "not finished yet")
	stored, err := b.st.Run(b.ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, "llama3", stored.Model)

	skipped := b.turn(t, telegram, "d", b.at(3*time.Minute), core.RunCompletion{Status: core.RunSkipped, Error: "skipped"})
	require.Empty(t, skipped.Model)
}

// testOverviewMigration rolls a database with history back to before
// migration 10 and migrates again: the runs have model "", and on SQLite
// the messages indexed before are found across conversations.
func testOverviewMigration(t *testing.T, open Opener) {
	b := setup(t, open)
	b.turn(t, telegram, "a", b.t0, core.RunCompletion{Status: core.RunSucceeded, Model: "m", PromptTokens: 5})
	conv := b.inbound(t, "b", "an old message about 面包 and bread", b.at(time.Minute), false).Conversation
	found, err := b.st.SearchMessages(b.ctx, conv.ID, "bread", 10) // indexes it
	require.NoError(t, err)
	require.Len(t, found, 1)

	db := b.st.DB()
	for _, q := range []string{
		`DROP INDEX messages_created`, `DROP INDEX messages_undelivered`, `DROP INDEX runs_finished`,
		`DROP INDEX jobs_status_updated`, `DROP INDEX jobs_due`, `DROP INDEX jobs_updated`,
		`DROP INDEX jobs_status_due`, `CREATE INDEX jobs_status_due ON jobs (status, due_at)`,
		`ALTER TABLE runs DROP COLUMN model`, `ALTER TABLE jobs DROP COLUMN retried_by`, `ALTER TABLE jobs DROP COLUMN retried_at`,
		`DELETE FROM schema_migrations WHERE version = 10`,
	} {
		require.NoError(t, db.Exec(q).Error, q)
	}
	if b.st.Driver() != "postgres" {
		require.NoError(t, db.Exec(`DROP TABLE message_search_all`).Error)
	}
	require.NoError(t, b.st.Migrate(b.ctx))

	for _, q := range []string{"bread", "面包"} {
		got, err := b.st.SearchConversations(b.ctx, q, 10, 0)
		require.NoError(t, err)
		require.Equal(t, []int64{conv.ID}, convIDs(got), q)
	}
	days, err := b.st.TokensByDay(b.ctx, b.t0, time.UTC)
	require.NoError(t, err)
	require.Equal(t, []core.TokenDay{{Day: "2030-03-04", Model: "", Prompt: 5}}, days, "a run from before is model \"\"")
}

// testSeedLarge: SeedLarge's history is what it says, consistent (last
// seqs, search indexes caught up, sequences past the rows), and the store
// goes on from it.
func testSeedLarge(t *testing.T, open Opener) {
	b := setup(t, open)
	start := time.Now()
	require.NoError(t, SeedLarge(b.ctx, b.st, 2000, 200))
	require.Error(t, SeedLarge(b.ctx, b.st, 2000, 200), "only into an empty store")
	for table, n := range map[string]int64{"conversations": 10, "messages": 2000, "runs": 1000, "jobs": 200} {
		require.Equal(t, n, b.count(t, table, "1 = 1"), table)
	}
	require.Zero(t, b.count(t, "conversations c", `last_seq <> (SELECT MAX(seq) FROM messages m WHERE m.conversation_id = c.id)
		OR last_message_at <> (SELECT MAX(created_at) FROM messages m WHERE m.conversation_id = c.id)`))
	n, err := b.st.IndexPending(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "indexed already")

	conv, err := b.st.Conversation(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, "Ravi 10", conv.DisplayName)
	require.Equal(t, discord, conv.Platform, "10 % 3 == 1")
	got, err := b.st.SearchConversations(b.ctx, SeedRareWord, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{10}, convIDs(got))
	msgs, err := b.st.SearchMessages(b.ctx, 10, SeedRareWord, 10)
	require.NoError(t, err)
	require.Len(t, msgs, 2)

	failures, err := b.st.RecentFailures(b.ctx, start.Add(-2*SeedSpan), 1000)
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, f := range failures {
		kinds[f.Kind]++
	}
	require.Equal(t, map[string]int{"turn": 21, "send": 1, "job": 10}, kinds)
	days, err := b.st.TokensByDay(b.ctx, start.Add(-2*SeedSpan), time.UTC)
	require.NoError(t, err)
	models := map[string]bool{}
	for _, d := range days {
		models[d.Model] = true
	}
	require.Equal(t, map[string]bool{"": true, SeedModels[0]: true, SeedModels[1]: true}, models)
	pending, err := b.st.CountJobs(b.ctx, core.JobFilter{Statuses: []core.JobStatus{core.JobPending}})
	require.NoError(t, err)
	require.Equal(t, int64(80), pending)

	// New rows get new ids.
	res := b.inbound(t, "after-the-seed", "hi", time.Now(), true)
	require.Equal(t, int64(11), res.Conversation.ID)
	require.Equal(t, int64(2001), res.Message.ID)
	require.Equal(t, int64(1001), res.Run.ID)
	j := &core.Job{ConversationID: 1, Kind: core.JobMessage, Status: core.JobPending, DueAt: time.Now()}
	require.NoError(t, b.st.CreateJob(b.ctx, j))
	require.Equal(t, int64(201), j.ID)
}
