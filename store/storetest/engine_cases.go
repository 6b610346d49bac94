package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func testClaimFactWork(t *testing.T, open Opener) {
	b := setup(t, open)
	a := b.inbound(t, "a", "one", b.t0, false).Conversation
	b.inbound(t, "a", "two", b.at(time.Second), false)
	c := b.inbound(t, "c", "hello", b.t0, false).Conversation
	work, err := b.st.ClaimFactWork(b.ctx, 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []core.FactWork{{ConversationID: a.ID, FromSeq: 0, ToSeq: 2}, {ConversationID: c.ID, FromSeq: 0, ToSeq: 1}}, work)
	work, err = b.st.ClaimFactWork(b.ctx, 10)
	require.NoError(t, err)
	require.Empty(t, work, "claimed work is not handed out twice")

	b.inbound(t, "a", "three", b.at(2*time.Second), false)
	work, err = b.st.ClaimFactWork(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []core.FactWork{{ConversationID: a.ID, FromSeq: 2, ToSeq: 3}}, work)
	msgs, err := b.st.MessagesBetween(b.ctx, a.ID, work[0].FromSeq, work[0].ToSeq, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"three"}, contents(msgs))
	require.NoError(t, b.st.ReleaseFactWork(b.ctx, work[0]))
	again, err := b.st.ClaimFactWork(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, work, again, "released work comes back")
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

func testRememberAndForgetFacts(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "a", "hi", b.t0, false).Conversation
	for i, f := range []string{"one", "two", "three"} {
		got, evicted, err := b.st.RememberFact(b.ctx, conv.ID, f, 3, b.at(time.Duration(i)*time.Minute))
		require.NoError(t, err)
		require.Empty(t, evicted)
		require.Equal(t, []string{"F01", "F02", "F03"}[i], got.Key)
	}
	require.NoError(t, b.st.TouchFacts(b.ctx, conv.ID, []string{"F01"}, b.at(time.Hour)))
	got, evicted, err := b.st.RememberFact(b.ctx, conv.ID, "four", 3, b.at(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, "F04", got.Key)
	require.Equal(t, []string{"F02"}, evicted, "the least recently used")
	require.NoError(t, b.st.UpdateFact(b.ctx, conv.ID, "F03", "three, updated", b.at(3*time.Hour)))
	require.ErrorIs(t, b.st.UpdateFact(b.ctx, conv.ID, "F02", "gone", b.at(3*time.Hour)), core.ErrNotFound)
	f, err := b.st.ForgetFact(b.ctx, conv.ID, "F01")
	require.NoError(t, err)
	require.Equal(t, "one", f.Content)
	_, err = b.st.ForgetFact(b.ctx, conv.ID, "F01")
	require.ErrorIs(t, err, core.ErrNotFound)
	other := b.inbound(t, "b", "hi", b.t0, false).Conversation
	_, err = b.st.ForgetFact(b.ctx, other.ID, "F03")
	require.ErrorIs(t, err, core.ErrNotFound, "another conversation's fact is out of reach")
	facts, err := b.st.Facts(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"three, updated", "four"}, []string{facts[0].Content, facts[1].Content})
}
