package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// inboundGap records a user message with a session gap.
func (b *testBundle) inboundGap(t *testing.T, thread, text string, now time.Time, gap time.Duration) core.InboundResult {
	t.Helper()
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform: telegram, ChannelThreadID: thread, ChannelUserID: "user-" + thread,
		Text: text, Now: now, PlanRun: true, SessionGap: gap,
	})
	require.NoError(t, err)
	return res
}

func testSessionRecordsSplitAtTheGap(t *testing.T, open Opener) {
	b := setup(t, open)
	const gap = 10 * time.Minute
	first := b.inboundGap(t, "chat", "hi", b.t0, gap)
	require.True(t, first.NewRecord, "the first message starts a record")
	require.Nil(t, first.EndedRecordID)
	rec1 := *first.Conversation.CurrentRecordID
	require.Equal(t, rec1, *first.Message.SessionRecordID)

	// A reply a little later joins the record and moves its last message time.
	run, err := b.st.ClaimRun(b.ctx, "w", b.at(time.Minute))
	require.NoError(t, err)
	reply := &core.Message{Role: core.RoleAssistant, Content: "hello", Source: core.SourceReply}
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w", core.RunCompletion{Status: core.RunSucceeded,
		Messages: []*core.Message{reply}, Now: b.at(time.Minute)}))
	require.Equal(t, rec1, *reply.SessionRecordID, "a run's messages join the current record")

	// Exactly the gap after the reply: the same record.
	same := b.inboundGap(t, "chat", "still here", b.at(time.Minute+gap), gap)
	require.False(t, same.NewRecord, "a gap of exactly session_gap keeps the record")
	require.Equal(t, rec1, *same.Message.SessionRecordID)

	// One microsecond more than the gap after that: a new record, and
	// the old one ends at its last message.
	last := b.at(time.Minute + gap)
	next := b.inboundGap(t, "chat", "back again", last.Add(gap+time.Microsecond), gap)
	require.True(t, next.NewRecord)
	require.Equal(t, rec1, *next.EndedRecordID)
	rec2 := *next.Conversation.CurrentRecordID
	require.NotEqual(t, rec1, rec2)
	require.Equal(t, rec2, *next.Message.SessionRecordID)

	old, err := b.st.SessionRecord(b.ctx, rec1)
	require.NoError(t, err)
	require.NotNil(t, old.EndedAt)
	require.True(t, old.EndedAt.Equal(last), "ended at its last message, got %v", old.EndedAt)
	cur, err := b.st.SessionRecord(b.ctx, rec2)
	require.NoError(t, err)
	require.Nil(t, cur.EndedAt)
	require.True(t, cur.StartedAt.Equal(last.Add(gap+time.Microsecond)))

	prev, err := b.st.PreviousSessionRecord(b.ctx, first.Conversation.ID, cur.StartedAt)
	require.NoError(t, err)
	require.Equal(t, rec1, prev.ID)
	_, err = b.st.PreviousSessionRecord(b.ctx, first.Conversation.ID, b.t0)
	require.ErrorIs(t, err, core.ErrNotFound)

	since, err := b.st.SessionRecordsSince(b.ctx, first.Conversation.ID, last.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, since, 1, "the ended record is older than since")
	require.Equal(t, rec2, since[0].ID)

	// A message appended without a record (a scheduled send) joins the
	// current one.
	m := &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant, Content: "reminder", Source: core.SourceScheduledSend}
	require.NoError(t, b.st.AppendMessage(b.ctx, m))
	require.Equal(t, rec2, *m.SessionRecordID)

	// Another conversation's records are its own.
	other := b.inboundGap(t, "other", "hi", last, gap)
	require.NotEqual(t, rec1, *other.Conversation.CurrentRecordID)
	require.NotEqual(t, rec2, *other.Conversation.CurrentRecordID)
}

func testFreezePromptKeepsTheFirst(t *testing.T, open Opener) {
	b := setup(t, open)
	res := b.inbound(t, "chat", "hi", b.t0, false)
	rec := *res.Conversation.CurrentRecordID
	kept, err := b.st.FreezePrompt(b.ctx, rec, `[{"Level":0,"Name":"persona","Text":"first"}]`)
	require.NoError(t, err)
	require.Equal(t, `[{"Level":0,"Name":"persona","Text":"first"}]`, kept)
	kept, err = b.st.FreezePrompt(b.ctx, rec, `[{"Level":0,"Name":"persona","Text":"second"}]`)
	require.NoError(t, err)
	require.Equal(t, `[{"Level":0,"Name":"persona","Text":"first"}]`, kept, "a record's stack never changes")
	r, err := b.st.SessionRecord(b.ctx, rec)
	require.NoError(t, err)
	require.Equal(t, kept, r.Prompt)
}

func testSummarizedRecords(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "chat", "hi", b.t0, false).Conversation
	var ids []int64
	for i, sum := range []string{"one", "", "three", "four"} {
		r := &core.SessionRecord{ConversationID: conv.ID, StartedAt: b.at(time.Duration(i+1) * time.Hour), Summary: sum}
		require.NoError(t, b.st.CreateSessionRecord(b.ctx, r))
		ids = append(ids, r.ID)
	}
	require.Len(t, ids, 4)
	got, err := b.st.SummarizedRecords(b.ctx, conv.ID, b.at(4*time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, got, 2, "only summarised records that started before")
	require.Equal(t, "three", got[0].Summary, "newest first")
	require.Equal(t, "one", got[1].Summary)
	got, err = b.st.SummarizedRecords(b.ctx, conv.ID, b.at(5*time.Hour), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"four"}, []string{got[0].Summary})
}

func testFinalMood(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "chat", "hi", b.t0, false).Conversation
	rec := *conv.CurrentRecordID
	require.NoError(t, b.st.SetFinalMood(b.ctx, rec, `{"valence":-0.20,"arousal":0.20}`))
	r, err := b.st.SessionRecord(b.ctx, rec)
	require.NoError(t, err)
	require.Equal(t, `{"valence":-0.20,"arousal":0.20}`, r.FinalMood)
}

func testClaimEndedRecords(t *testing.T, open Opener) {
	b := setup(t, open)
	const gap = 10 * time.Minute
	quiet := b.inboundGap(t, "quiet", "bye", b.t0, gap).Conversation
	busy := b.inboundGap(t, "busy", "still here", b.at(55*time.Minute), gap).Conversation
	rolled := b.inboundGap(t, "rolled", "first", b.t0, gap).Conversation
	b.inboundGap(t, "rolled", "next day", b.at(50*time.Minute), gap)

	now := b.at(time.Hour)
	recs, err := b.st.ClaimEndedRecords(b.ctx, now, gap, 10)
	require.NoError(t, err)
	got := map[int64]core.SessionRecord{}
	for _, r := range recs {
		got[r.ConversationID] = r
	}
	require.Len(t, recs, 2, "the quiet one and the one a newer record ended; not the busy one")
	require.Contains(t, got, quiet.ID)
	require.Contains(t, got, rolled.ID)
	require.NotContains(t, got, busy.ID)
	require.True(t, got[quiet.ID].EndedAt.Equal(b.t0), "a quiet record ends at its last message")
	require.Equal(t, *rolled.CurrentRecordID, got[rolled.ID].ID, "the rolled-over conversation's first record")

	again, err := b.st.ClaimEndedRecords(b.ctx, now, gap, 10)
	require.NoError(t, err)
	require.Empty(t, again, "claimed records are not handed out twice")
	require.NoError(t, b.st.SaveSummary(b.ctx, got[quiet.ID].ID, "They said goodbye."))
	require.NoError(t, b.st.ReleaseRecord(b.ctx, got[rolled.ID].ID))
	again, err = b.st.ClaimEndedRecords(b.ctx, now, gap, 10)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Equal(t, got[rolled.ID].ID, again[0].ID, "a released record comes back")
	r, err := b.st.SessionRecord(b.ctx, got[quiet.ID].ID)
	require.NoError(t, err)
	require.Equal(t, "They said goodbye.", r.Summary)

	// The quiet conversation's user comes back: a new record starts.
	next := b.inboundGap(t, "quiet", "hello again", b.at(2*time.Hour), gap)
	require.True(t, next.NewRecord)
}
