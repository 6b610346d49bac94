package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store/storetest"
)

// A replica hears runs and jobs due soon that any process queues in its
// schema, and nothing else: not a job due in a month (its poll finds it),
// not the work of a deployment in another schema of the database.
func TestListenHearsWorkDueSoonInItsSchema(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresDSN(t)
	st, writer := storetest.OpenPostgresAt(t, dsn), storetest.OpenPostgresAt(t, dsn)
	neighbour := storetest.OpenPostgres(t)
	ctx := context.Background()
	require.NoError(t, st.Migrate(ctx))
	require.NoError(t, neighbour.Migrate(ctx))

	heard := make(chan string, 16)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Listen(lctx, func(topic string) { heard <- topic }) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	next := func() string {
		t.Helper()
		select {
		case topic := <-heard:
			return topic
		case <-time.After(10 * time.Second):
			t.Fatal("nothing heard")
			return ""
		}
	}
	require.Equal(t, []string{"runs", "jobs"}, []string{next(), next()}, "once listening, for what was queued before")

	inbound := func(on interface {
		RecordInbound(context.Context, core.InboundRecord) (core.InboundResult, error)
	}, thread string, plan bool) core.InboundResult {
		res, err := on.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: thread, Text: "hi",
			Now: time.Now(), PlanRun: plan})
		require.NoError(t, err)
		return res
	}
	// Not heard: the neighbour's run and job, and a job due in a month.
	n := inbound(neighbour, "n1", true)
	_, err := neighbour.ScheduleMessage(ctx, &core.Job{ConversationID: n.Conversation.ID, Text: "theirs", DueAt: time.Now()}, false, 50)
	require.NoError(t, err)
	conv := inbound(writer, "u1", false).Conversation
	_, err = writer.ScheduleMessage(ctx, &core.Job{ConversationID: conv.ID, Text: "next month", DueAt: time.Now().AddDate(0, 1, 0)}, false, 50)
	require.NoError(t, err)
	// Heard, in order and with nothing before them: a run and a job due
	// now, each naming its bot.
	inbound(writer, "u2", true)
	_, err = writer.ScheduleMessage(ctx, &core.Job{ConversationID: conv.ID, Text: "now", DueAt: time.Now()}, false, 50)
	require.NoError(t, err)
	require.Equal(t, "runs:default", next(), "the month-away job and the neighbour's work notified")
	require.Equal(t, "jobs:default", next())
	ada := writer.ForBot("ada")
	inbound(ada, "u2", true)
	require.Equal(t, "runs:ada", next(), "the same thread on another bot")
}
