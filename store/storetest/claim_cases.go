package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// inboundOn records a planned user message on a platform's thread.
func (b *testBundle) inboundOn(t *testing.T, p core.Platform, thread string, now time.Time) core.InboundResult {
	t.Helper()
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform: p, ChannelThreadID: thread, ChannelUserID: thread, Text: "hi", Now: now, PlanRun: true,
	})
	require.NoError(t, err)
	return res
}

func testClaimScoped(t *testing.T, open Opener) {
	b := setup(t, open)
	onWeb := b.inboundOn(t, web, "w", b.t0)
	con := b.inboundOn(t, console, "c", b.at(time.Second))

	run, err := b.st.ClaimRun(b.ctx, "chat", b.at(time.Minute), console)
	require.NoError(t, err)
	require.NotNil(t, run)
	require.Equal(t, con.Run.ID, run.ID, "the older web run is not the console's to claim")

	run, err = b.st.ClaimRun(b.ctx, "chat", b.at(time.Minute), console)
	require.NoError(t, err)
	require.Nil(t, run)

	run, err = b.st.ClaimRun(b.ctx, "bot", b.at(time.Minute), web, telegram)
	require.NoError(t, err)
	require.NotNil(t, run)
	require.Equal(t, onWeb.Run.ID, run.ID)
}

func testCompleteAndClaim(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.claimed(t, "chat-1", "w1", b.t0)
	other := b.inboundOn(t, web, "web-1", b.at(time.Second))
	queued := b.inboundOn(t, telegram, "chat-2", b.at(2*time.Second))

	reply := &core.Message{Role: core.RoleAssistant, Content: "done", Source: core.SourceReply}
	next, err := b.st.CompleteRunAndClaim(b.ctx, first.ID, "w1", core.RunCompletion{
		Status: core.RunSucceeded, Messages: []*core.Message{reply}, Now: b.at(3 * time.Second),
	}, telegram)
	require.NoError(t, err)
	require.NotNil(t, next)
	require.Equal(t, queued.Run.ID, next.ID, "only telegram runs were asked for")
	require.Equal(t, core.RunRunning, next.Status)
	require.Equal(t, "w1", next.Owner)
	require.Equal(t, int64(2), reply.Seq)

	done, err := b.st.Run(b.ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunSucceeded, done.Status)

	// Losing the run claims nothing and writes nothing.
	next, err = b.st.CompleteRunAndClaim(b.ctx, first.ID, "w1", core.RunCompletion{Status: core.RunFailed, Now: b.at(4 * time.Second)})
	require.ErrorIs(t, err, core.ErrLostRun)
	require.Nil(t, next)
	webRun, err := b.st.Run(b.ctx, other.Run.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunQueued, webRun.Status)

	// With nothing due, the next run is nil.
	next, err = b.st.CompleteRunAndClaim(b.ctx, queued.Run.ID, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(5 * time.Second)}, telegram)
	require.NoError(t, err)
	require.Nil(t, next)
}

func testHasPendingRuns(t *testing.T, open Opener) {
	b := setup(t, open)
	pending, err := b.st.HasPendingRuns(b.ctx)
	require.NoError(t, err)
	require.False(t, pending)

	b.inboundOn(t, web, "w", b.t0)
	pending, err = b.st.HasPendingRuns(b.ctx)
	require.NoError(t, err)
	require.True(t, pending)
	pending, err = b.st.HasPendingRuns(b.ctx, console)
	require.NoError(t, err)
	require.False(t, pending, "a web run is not the console's")

	run, err := b.st.ClaimRun(b.ctx, "w1", b.at(time.Second))
	require.NoError(t, err)
	pending, err = b.st.HasPendingRuns(b.ctx, web)
	require.NoError(t, err)
	require.True(t, pending, "a running run is pending")
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(2 * time.Second)}))
	pending, err = b.st.HasPendingRuns(b.ctx, web)
	require.NoError(t, err)
	require.False(t, pending)
}

// A message whose turn is due at once is claimed in its own transaction
// when asked (ClaimFor); one with a debounce ahead, or whose conversation
// is busy, is left queued for the claim loop.
func testRecordInboundClaims(t *testing.T, open Opener) {
	b := setup(t, open)
	record := func(thread string, now, runAfter time.Time) core.InboundResult {
		t.Helper()
		res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
			Platform: telegram, ChannelThreadID: thread, Text: "hi", Now: now, PlanRun: true,
			RunAfter: runAfter, ClaimFor: "w1",
		})
		require.NoError(t, err)
		require.NotNil(t, res.Run)
		return res
	}
	now := record("now", b.t0, b.t0)
	require.Equal(t, core.RunRunning, now.Run.Status)
	require.Equal(t, "w1", now.Run.Owner)
	require.Equal(t, b.t0, *now.Run.StartedAt)
	require.Equal(t, b.t0, *now.Run.HeartbeatAt)
	stored, err := b.st.Run(b.ctx, now.Run.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunRunning, stored.Status)
	run, err := b.st.ClaimRun(b.ctx, "w2", b.at(time.Minute))
	require.NoError(t, err)
	require.Nil(t, run, "the claimed run is no one else's")

	later := record("later", b.at(time.Second), b.at(2*time.Second))
	require.Equal(t, core.RunQueued, later.Run.Status, "a debounced turn waits for the claim loop")

	busy := record("now", b.at(3*time.Second), b.at(3*time.Second))
	require.Equal(t, core.RunQueued, busy.Run.Status, "a conversation runs one turn at a time")
	require.NotEqual(t, now.Run.ID, busy.Run.ID)

	require.NoError(t, b.st.CompleteRun(b.ctx, now.Run.ID, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(4 * time.Second)}))
	var claimed []int64
	runs, err := b.st.ClaimRuns(b.ctx, "w2", b.at(time.Minute), 10)
	require.NoError(t, err)
	for _, r := range runs {
		claimed = append(claimed, r.ID)
	}
	require.ElementsMatch(t, []int64{later.Run.ID, busy.Run.ID}, claimed)
}
