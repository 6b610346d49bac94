package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func testRecentMessages(t *testing.T, open Opener) {
	b := setup(t, open)
	var convID int64
	for i := 1; i <= 5; i++ {
		convID = b.inbound(t, "chat-1", fmt.Sprintf("m%d", i), b.at(time.Duration(i)*time.Second), false).Conversation.ID
	}
	b.inbound(t, "other", "elsewhere", b.t0, false)

	msgs, err := b.st.RecentMessages(b.ctx, convID, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"m3", "m4", "m5"}, contents(msgs), "the newest, oldest first")

	msgs, err = b.st.RecentMessages(b.ctx, convID, 50)
	require.NoError(t, err)
	require.Equal(t, []string{"m1", "m2", "m3", "m4", "m5"}, contents(msgs))

	msgs, err = b.st.RecentMessages(b.ctx, convID, 0)
	require.NoError(t, err)
	require.Empty(t, msgs)

	msgs, err = b.st.RecentMessages(b.ctx, 99999, 10)
	require.NoError(t, err)
	require.Empty(t, msgs)
}

func contents(msgs []core.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

func testAppendMessage(t *testing.T, open Opener) {
	b := setup(t, open)
	in := b.inbound(t, "chat-1", "hi", b.t0, false)
	rec := &core.SessionRecord{ConversationID: in.Conversation.ID, StartedAt: b.t0}
	require.NoError(t, b.st.CreateSessionRecord(b.ctx, rec))

	m := &core.Message{
		ConversationID: in.Conversation.ID, Role: core.RoleAssistant, Source: core.SourceScheduledSend,
		Content: "reminder", PlatformMessageID: "p-1", SessionRecordID: &rec.ID, CreatedAt: b.at(time.Second),
	}
	require.NoError(t, b.st.AppendMessage(b.ctx, m))
	require.NotZero(t, m.ID)
	require.Equal(t, int64(2), m.Seq)

	noTime := &core.Message{ConversationID: in.Conversation.ID, Role: core.RoleSystem, Source: core.SourceSystem, Content: "x"}
	require.NoError(t, b.st.AppendMessage(b.ctx, noTime))
	require.Equal(t, int64(3), noTime.Seq)
	require.False(t, noTime.CreatedAt.IsZero(), "the store's clock stamps a message without a time")
	require.Equal(t, time.UTC, noTime.CreatedAt.Location())

	msgs, err := b.st.Messages(b.ctx, in.Conversation.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	require.Equal(t, *m, msgs[1])
	require.Equal(t, *noTime, msgs[2])
}

func testNotFound(t *testing.T, open Opener) {
	b := setup(t, open)
	_, err := b.st.Conversation(b.ctx, 424242)
	require.ErrorIs(t, err, core.ErrNotFound)
	require.ErrorContains(t, err, "424242")

	_, err = b.st.ConversationByThread(b.ctx, slack, "nowhere")
	require.ErrorIs(t, err, core.ErrNotFound)

	_, err = b.st.Run(b.ctx, 424242)
	require.ErrorIs(t, err, core.ErrNotFound)

	_, err = b.st.Job(b.ctx, 424242)
	require.ErrorIs(t, err, core.ErrNotFound)

	_, err = b.st.DeleteConversation(b.ctx, 424242, false)
	require.ErrorIs(t, err, core.ErrNotFound)

	m := &core.Message{ConversationID: 424242, Role: core.RoleAssistant, Source: core.SourceAPI, Content: "x", CreatedAt: b.t0}
	require.ErrorIs(t, b.st.AppendMessage(b.ctx, m), core.ErrNotFound)
	require.Zero(t, m.ID)

	require.ErrorIs(t, b.st.CompleteRun(b.ctx, 424242, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.t0}), core.ErrLostRun)
}

func testTimesUTC(t *testing.T, open Opener) {
	b := setup(t, open)
	zone := time.FixedZone("IST", 5*3600+1800)
	// Nanoseconds beyond the microsecond are dropped; the instant is kept.
	local := time.Date(2031, 7, 8, 23, 59, 58, 123456789, zone)
	want := time.Date(2031, 7, 8, 18, 29, 58, 123456000, time.UTC)

	res := b.inbound(t, "chat-1", "hi", local, true)
	require.Equal(t, want, res.Message.CreatedAt)
	require.Equal(t, want, res.Run.RunAfter)
	require.Equal(t, time.UTC, res.Run.RunAfter.Location())

	conv, err := b.st.Conversation(b.ctx, res.Conversation.ID)
	require.NoError(t, err)
	requireUTC(t, want, conv.CreatedAt)
	requireUTC(t, want, conv.UpdatedAt)

	msgs, err := b.st.Messages(b.ctx, conv.ID)
	require.NoError(t, err)
	requireUTC(t, want, msgs[0].CreatedAt)

	claimAt := local.Add(time.Second)
	run, err := b.st.ClaimRun(b.ctx, "w1", claimAt)
	require.NoError(t, err)
	requireUTC(t, want, run.RunAfter)
	requireUTC(t, want.Add(time.Second), *run.StartedAt)
	requireUTC(t, want.Add(time.Second), *run.HeartbeatAt)
	requireUTC(t, want, run.CreatedAt)
	requireUTC(t, want.Add(time.Second), run.UpdatedAt)

	due := time.Date(2031, 12, 31, 22, 0, 0, 999999999, time.FixedZone("PST", -8*3600))
	job := &core.Job{ConversationID: conv.ID, Kind: core.JobMessage, Status: core.JobPending, DueAt: due, CreatedAt: local}
	require.NoError(t, b.st.CreateJob(b.ctx, job))
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	requireUTC(t, time.Date(2032, 1, 1, 6, 0, 0, 999999000, time.UTC), got.DueAt)
	requireUTC(t, want, got.CreatedAt)

	// The claimed run left the queue.
	next, err := b.st.NextRunAfter(b.ctx)
	require.NoError(t, err)
	require.Nil(t, next)
}

func requireUTC(t *testing.T, want, got time.Time) {
	t.Helper()
	require.Equal(t, time.UTC, got.Location())
	require.True(t, want.Equal(got), "want %s, got %s", want, got)
	require.Equal(t, want, got)
}

func testMetadataRoundTrip(t *testing.T, open Opener) {
	b := setup(t, open)
	meta := map[string]any{
		"platform_message_ids": []any{"a-1", "a-2"},
		"edited":               true,
		"score":                1.5,
		"count":                float64(3),
		"nested":               map[string]any{"emoji": "🦜", "quote": `say "hi"`, "none": nil},
	}
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform: slack, ChannelThreadID: "D1", Text: "hi", Metadata: meta, Now: b.t0,
	})
	require.NoError(t, err)
	msgs, err := b.st.Messages(b.ctx, res.Conversation.ID)
	require.NoError(t, err)
	require.Equal(t, meta, msgs[0].Metadata)

	var raw string
	require.NoError(t, b.st.DB().Raw(`SELECT metadata FROM messages WHERE id = ?`, res.Message.ID).Row().Scan(&raw))
	require.Contains(t, raw, `"platform_message_ids":["a-1","a-2"]`, "metadata is stored as JSON text")

	plain := b.inbound(t, "chat-2", "no metadata", b.t0, false)
	got, err := b.st.Messages(b.ctx, plain.Conversation.ID)
	require.NoError(t, err)
	require.Nil(t, got[0].Metadata)
}

func testDeleteCascades(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.claimed(t, "doomed", "w1", b.t0)
	convID := run.ConversationID
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{
		Status: core.RunSucceeded, Now: b.at(time.Second),
		Messages: []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: "bye"}},
	}))
	b.inbound(t, "doomed", "again", b.at(2*time.Second), true)
	rec := &core.SessionRecord{ConversationID: convID, StartedAt: b.t0}
	require.NoError(t, b.st.CreateSessionRecord(b.ctx, rec))
	job := &core.Job{ConversationID: convID, Kind: core.JobMessage, Status: core.JobPending, DueAt: b.at(time.Hour), CreatedAt: b.t0}
	require.NoError(t, b.st.CreateJob(b.ctx, job))

	keep := b.inbound(t, "kept", "stay", b.t0, true)

	d, err := b.st.DeleteConversation(b.ctx, convID, false)
	require.NoError(t, err)
	require.Equal(t, core.Deletion{Deleted: true, Jobs: 1}, d)

	_, err = b.st.Conversation(b.ctx, convID)
	require.ErrorIs(t, err, core.ErrNotFound)
	for _, table := range []string{"messages", "runs", "session_records", "jobs"} {
		require.Equal(t, int64(0), b.count(t, table, "conversation_id = ?", convID), table)
	}
	_, err = b.st.Job(b.ctx, job.ID)
	require.ErrorIs(t, err, core.ErrNotFound)

	require.Equal(t, int64(1), b.count(t, "messages", "conversation_id = ?", keep.Conversation.ID))
	require.Equal(t, int64(1), b.count(t, "runs", "conversation_id = ?", keep.Conversation.ID))
}

func testJobRoundTrip(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "chat-1", "remind me", b.t0, false).Conversation
	job := &core.Job{
		ConversationID:        conv.ID,
		Kind:                  core.JobAgentTurn,
		Status:                core.JobSending,
		Text:                  "check in",
		Name:                  "morning",
		DueAt:                 b.at(time.Hour),
		Recurrence:            "0 9 * * *",
		NextRunAt:             ptr(b.at(time.Hour)),
		CatchUp:               core.CatchUpNone,
		Attempts:              2,
		LastError:             "adapter down",
		Origin:                "tool",
		CreatedByToolCallID:   "call-1",
		CancelledByToolCallID: "call-2",
		Owner:                 "w1",
		LeaseUntil:            ptr(b.at(time.Hour + time.Minute)),
		PlatformMessageID:     "tg-5",
		SentAt:                ptr(b.at(2 * time.Hour)),
		CreatedAt:             b.at(time.Second),
		UpdatedAt:             b.at(2 * time.Second),
	}
	want := *job
	require.NoError(t, b.st.CreateJob(b.ctx, job))
	require.NotZero(t, job.ID)
	want.ID = job.ID
	require.Equal(t, want, *job)

	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, want, got)

	minimal := &core.Job{ConversationID: conv.ID, Kind: core.JobMessage, Status: core.JobPending, DueAt: b.t0}
	require.NoError(t, b.st.CreateJob(b.ctx, minimal))
	got, err = b.st.Job(b.ctx, minimal.ID)
	require.NoError(t, err)
	require.Nil(t, got.LeaseUntil)
	require.Nil(t, got.SentAt)
	require.False(t, got.CreatedAt.IsZero())
	require.Equal(t, got.CreatedAt, got.UpdatedAt)
	require.Equal(t, *minimal, got)
}

func testSessionRecordRoundTrip(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "chat-1", "hi", b.t0, false).Conversation
	second := &core.SessionRecord{
		ConversationID: conv.ID, StartedAt: b.at(time.Hour), Summary: "talked about cats",
		FinalMood: `{"valence":0.4}`, CreatedAt: b.at(time.Hour), UpdatedAt: b.at(2 * time.Hour),
	}
	first := &core.SessionRecord{
		ConversationID: conv.ID, StartedAt: b.t0, EndedAt: ptr(b.at(30 * time.Minute)),
		Summary: "greetings", FinalMood: `{"valence":0.1}`, CreatedAt: b.t0, UpdatedAt: b.at(30 * time.Minute),
	}
	wantSecond, wantFirst := *second, *first
	require.NoError(t, b.st.CreateSessionRecord(b.ctx, second))
	require.NoError(t, b.st.CreateSessionRecord(b.ctx, first))
	wantSecond.ID, wantFirst.ID = second.ID, first.ID

	got, err := b.st.SessionRecords(b.ctx, conv.ID)
	require.NoError(t, err)
	// The first message started the conversation's own record, at t0.
	require.Len(t, got, 3)
	require.NotNil(t, conv.CurrentRecordID)
	require.Equal(t, *conv.CurrentRecordID, got[0].ID, "the inbound message's record")
	require.Equal(t, []core.SessionRecord{wantFirst, wantSecond}, got[1:], "records come by start time")
}

func testConversationsList(t *testing.T, open Opener) {
	b := setup(t, open)
	var ids []int64
	for i := range 5 {
		ids = append(ids, b.inbound(t, fmt.Sprintf("chat-%d", i), "hi", b.t0, false).Conversation.ID)
	}
	all, err := b.st.Conversations(b.ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, all, 5)

	page, err := b.st.Conversations(b.ctx, 2, 1)
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.Equal(t, []int64{ids[1], ids[2]}, []int64{page[0].ID, page[1].ID})
	require.Equal(t, "chat-1", page[0].ChannelThreadID)
}

// testSetMessageText: a voice note's transcript becomes its stored text,
// found by search, its seq unchanged.
func testSetMessageText(t *testing.T, open Opener) {
	b := setup(t, open)
	in := b.inbound(t, "voice", "", b.t0, false)
	m := in.Message
	m.Content = "remember the sourdough starter"
	m.Metadata = map[string]any{"spoken": true}
	require.NoError(t, b.st.SetMessageText(b.ctx, m))
	msgs, err := b.st.Messages(b.ctx, in.Conversation.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "remember the sourdough starter", msgs[0].Content)
	require.Equal(t, true, msgs[0].Metadata["spoken"])
	require.Equal(t, m.Seq, msgs[0].Seq)
	_, err = b.st.IndexPending(b.ctx)
	require.NoError(t, err)
	m.Content = "remember the sourdough levain"
	require.NoError(t, b.st.SetMessageText(b.ctx, m), "again, once indexed")
	_, err = b.st.IndexPending(b.ctx)
	require.NoError(t, err)
	found, err := b.st.SearchMessages(b.ctx, in.Conversation.ID, "levain", 10)
	require.NoError(t, err)
	require.Len(t, found, 1, "the new text is searchable")
	found, err = b.st.SearchMessages(b.ctx, in.Conversation.ID, "starter", 10)
	require.NoError(t, err)
	require.Empty(t, found, "the old text is not")
}
