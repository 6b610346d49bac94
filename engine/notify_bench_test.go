package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/store/storetest"
)

// BenchmarkJobsBesideIdleReplicas creates 10,000 message jobs one by one
// (16 writers, as an API client might), due in a month, on PostgreSQL,
// beside 0 or 3 idle replicas that LISTEN (a job due that far ahead
// notifies none of them: migration 9). It reports jobs created per second.
func BenchmarkJobsBesideIdleReplicas(b *testing.B) {
	for _, replicas := range []int{0, 3} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			for range b.N {
				benchJobsBesideReplicas(b, replicas)
			}
		})
	}
}

func benchJobsBesideReplicas(b *testing.B, replicas int) {
	b.StopTimer()
	const jobs, writers, convs = 10_000, 16, 100
	ctx := context.Background()
	dsn := storetest.PostgresDSN(b)
	st := storetest.OpenPostgresAt(b, dsn)
	require.NoError(b, st.Migrate(ctx))
	for range replicas {
		rs := storetest.OpenPostgresAt(b, dsn)
		d, err := engine.New(engine.Config{Store: rs, LLM: noModel{}, Adapters: []core.Adapter{coretest.NewAdapter(web)},
			ScheduledMessages: true, Listener: rs})
		require.NoError(b, err)
		require.NoError(b, d.Start(ctx))
		b.Cleanup(func() { require.NoError(b, d.Stop(context.Background())) })
	}
	ids := make([]int64, convs)
	for i := range ids {
		res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: fmt.Sprintf("u%d", i), Text: "hi", Now: time.Now()})
		require.NoError(b, err)
		ids[i] = res.Conversation.ID
	}
	due := time.Now().AddDate(0, 1, 0)
	b.StartTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for k := w; k < jobs; k += writers {
				j := &core.Job{ConversationID: ids[k%convs], Text: fmt.Sprintf("job %d", k), DueAt: due.Add(time.Duration(k) * time.Second)}
				if _, err := st.ScheduleMessage(ctx, j, false, jobs); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
	b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
}
