package app

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
)

func TestJobsListAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.writeConfig(t, "")
	st := b.openStoreFile(t)
	require.NoError(t, st.Migrate(context.Background()))
	res, err := st.RecordInbound(context.Background(), core.InboundRecord{Platform: web.Platform, ChannelThreadID: "c1",
		Text: "hi", Now: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	j := &core.Job{ConversationID: res.Conversation.ID, Text: "Don't forget\nthe dentist", DueAt: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)}
	_, err = st.ScheduleMessage(context.Background(), j, false, 50)
	require.NoError(t, err)
	require.NoError(t, st.CreateRecurringJob(context.Background(), &core.Job{ConversationID: res.Conversation.ID, Name: "check-in",
		Text: "ask how they are", Recurrence: "0 9 * * *", DueAt: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)}, 10))

	run := func(args ...string) (int, string, string) { return b.cli(cfg, args...) }
	code, out, _ := run("jobs", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "ID  CONVERSATION  KIND        STATUS   DUE (UTC)            ATTEMPTS  TEXT")
	require.Contains(t, out, "message     pending  2026-11-24 08:00:00  0         Don't forget the dentist")
	require.Contains(t, out, "agent_turn  pending  2026-11-24 09:00:00  0         check-in (0 9 * * *)")

	code, out, _ = run("jobs", "list", "--status", "sent")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "dentist")
	code, _, errOut := run("jobs", "list", "--status", "done")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `--status "done": want pending, sending, sent, cancelled or failed`)

	code, out, _ = run("jobs", "cancel", "1")
	require.Equal(t, 0, code)
	require.Equal(t, "job 1 cancelled: Don't forget the dentist\n", out)
	code, _, errOut = run("jobs", "cancel", "1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cancelling job 1: it is cancelled, not pending")
	code, _, errOut = run("jobs", "cancel", "99")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "job 99: not found")
	code, _, _ = run("jobs", "cancel", "x")
	require.Equal(t, 2, code)
	code, out, _ = run("jobs", "list", "--conversation", "1", "--status", "cancelled")
	require.Equal(t, 0, code)
	require.Contains(t, out, "cancelled")
}
