package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// A completion that a failed batch runs again, alone, still appends its
// reply: the first try's message ids, rolled back with it, must not pass
// the reply off as one stored before it was sent.
func TestCompletionRunAgainAfterABatchRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, Options{Driver: DriverSQLite, DSN: filepath.Join(t.TempDir(), "rerun.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, st.Migrate(ctx))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in, err := st.RecordInbound(ctx, core.InboundRecord{Platform: "web", ChannelThreadID: "t", Text: "hello",
		Now: now, PlanRun: true})
	require.NoError(t, err)
	run, err := st.ClaimRun(ctx, "w", now)
	require.NoError(t, err)
	require.NotNil(t, run)

	w, err := newCompletion(run.ID, "w", core.RunCompletion{Status: core.RunSucceeded, Now: now,
		Messages: []*core.Message{{Role: core.RoleAssistant, Content: "hi"}}}, st.q.t(now))
	require.NoError(t, err)
	boom := errors.New("boom")
	ops := []*writeOp{
		{ctx: ctx, fn: func(tx *gorm.DB) error { _, err := st.finishIn(tx, w, false, nil); return err }, err: make(chan error, 1)},
		{ctx: ctx, fn: func(*gorm.DB) error { return boom }, err: make(chan error, 1)},
	}
	st.batch.run(ops)
	require.NoError(t, <-ops[0].err)
	require.ErrorIs(t, <-ops[1].err, boom)

	msgs, err := st.Messages(ctx, in.Conversation.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Equal(t, "hi", msgs[1].Content)
	require.Equal(t, msgs[1].ID, w.msgs[0].ID)
	require.Equal(t, int64(2), msgs[1].Seq)
}
