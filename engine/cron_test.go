package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// Two schedulers (two processes' dispatchers on one database) wake at the
// same instants on one clock and race for every occurrence of 20 jobs that
// run every minute. Each occurrence runs once: one trigger in its
// conversation, one reply out of one of the two adapters.
func TestTwoSchedulersNeverRunAnOccurrenceTwice(t *testing.T) {
	t.Parallel()
	for _, db := range []struct {
		name string
		open func(testing.TB) *store.Store
	}{{"PostgreSQL", storetest.OpenPostgres}, {"SQLite", storetest.OpenSQLite}} {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			st := migrated(t, db.open(t))
			ctx := context.Background()
			clock := coretest.NewClock(t0)
			model := llmtest.NewServer(t)
			model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("on it") })
			client, err := llm.New(llm.Config{BaseURL: model.URL(), APIKey: "sk-test", Model: "m", Timeout: 5 * time.Second})
			require.NoError(t, err)

			const convs, minutes = 20, 5
			var jobs []core.Job
			for i := range convs {
				res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: fmt.Sprintf("u%d", i), Text: "hi", Now: t0})
				require.NoError(t, err)
				j := &core.Job{ConversationID: res.Conversation.ID, Name: fmt.Sprintf("job %d", i), Text: "say hi",
					Recurrence: "* * * * *", DueAt: t0.Add(time.Minute)}
				require.NoError(t, st.CreateRecurringJob(ctx, j, 10))
				jobs = append(jobs, *j)
			}
			var adapters []*coretest.Adapter
			fired := &firedCount{}
			for _, owner := range []string{"sched-a", "sched-b"} {
				ad := coretest.NewAdapter(web)
				d, err := engine.New(engine.Config{Store: st, LLM: client, Adapters: []core.Adapter{ad},
					Owner: owner, Clock: clock, PollInterval: time.Second, RecurringTurns: true, Metrics: fired})
				require.NoError(t, err)
				require.NoError(t, ad.Start(ctx, d))
				require.NoError(t, d.Start(ctx))
				t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })
				adapters = append(adapters, ad)
			}
			for m := 1; m <= minutes; m++ {
				clock.Advance(time.Minute)
				require.Eventually(t, func() bool {
					var done, open int64
					err := st.DB().Raw(`SELECT
						(SELECT COUNT(*) FROM runs WHERE kind = 'cron_turn' AND status = 'succeeded'),
						(SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running'))`).Row().Scan(&done, &open)
					return err == nil && done == int64(convs*m) && open == 0
				}, waitFor, 2*time.Millisecond, "minute %d never finished", m)
			}
			sent := len(adapters[0].Sent()) + len(adapters[1].Sent())
			require.Equal(t, convs*minutes, sent, "one reply per occurrence, from either process")
			require.EqualValues(t, convs*minutes, fired.n.Load(), "the two planned each occurrence once between them")
			for _, j := range jobs {
				msgs, err := st.Messages(ctx, j.ConversationID)
				require.NoError(t, err)
				seen := map[any]bool{}
				for _, m := range msgs {
					if m.Source == core.SourceCronTurn && m.Role == core.RoleUser {
						occ := m.Metadata["occurrence_at"]
						require.False(t, seen[occ], "occurrence %v of job %d triggered twice", occ, j.ID)
						seen[occ] = true
					}
				}
				require.Len(t, seen, minutes, "job %d", j.ID)
				got, err := st.Job(ctx, j.ID)
				require.NoError(t, err)
				require.True(t, got.NextRunAt.Equal(t0.Add((minutes+1)*time.Minute)), "job %d next at %v", j.ID, got.NextRunAt)
			}
		})
	}
}

// firedCount counts the occurrences the schedulers planned.
type firedCount struct{ n atomic.Int64 }

func (f *firedCount) Fired(k core.JobKind, _ time.Duration) {
	if k == core.JobAgentTurn {
		f.n.Add(1)
	}
}

func (f *firedCount) SendFailed(core.Platform)                                 {}
func (f *firedCount) Sent(core.Platform, string)                               {}
func (f *firedCount) TurnFinished(core.RunKind, core.RunStatus, time.Duration) {}
func (f *firedCount) ModelCalled(time.Duration, llm.Usage, error)              {}

// cronRig is a dispatcher serving recurring jobs on a clock the test
// moves, with one web conversation ("u1") and a recurring job due a minute
// after t0.
type cronRig struct {
	st      *store.Store
	clock   *coretest.Clock
	model   *llmtest.Server
	adapter *coretest.Adapter
	disp    *engine.Dispatcher
	conv    core.Conversation
	job     core.Job
}

func newCronRig(t *testing.T) *cronRig {
	t.Helper()
	ctx := context.Background()
	r := &cronRig{st: openStore(t), clock: coretest.NewClock(t0), model: llmtest.NewServer(t), adapter: coretest.NewAdapter(web)}
	client, err := llm.New(llm.Config{BaseURL: r.model.URL(), APIKey: "sk-test", Model: "m", Timeout: 5 * time.Second})
	require.NoError(t, err)
	r.disp, err = engine.New(engine.Config{Store: r.st, LLM: client, Adapters: []core.Adapter{r.adapter},
		Clock: r.clock, PollInterval: time.Second, RecurringTurns: true})
	require.NoError(t, err)
	require.NoError(t, r.adapter.Start(ctx, r.disp))
	res, err := r.st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: "u1", Text: "hi", Now: t0})
	require.NoError(t, err)
	r.conv = res.Conversation
	r.job = core.Job{ConversationID: r.conv.ID, Name: "stand-up", Text: "Ask what they plan today.", Recurrence: "every 1h", DueAt: t0.Add(time.Minute)}
	require.NoError(t, r.st.CreateRecurringJob(ctx, &r.job, 10))
	require.NoError(t, r.disp.Start(ctx))
	return r
}

// cronRun waits for the job's run to reach status.
func (r *cronRig) cronRun(t *testing.T, status core.RunStatus) core.Run {
	t.Helper()
	var got core.Run
	require.Eventually(t, func() bool {
		runs, err := r.st.Runs(context.Background(), r.conv.ID)
		if err != nil {
			return false
		}
		for _, run := range runs {
			if run.Kind == core.RunCronTurn && run.Status == status {
				got = run
				return true
			}
		}
		return false
	}, waitFor, 2*time.Millisecond, "no cron run became %s", status)
	return got
}

func TestACronTurnCutByShutdownStillTellsTheUser(t *testing.T) {
	t.Parallel()
	r := newCronRig(t)
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	r.model.Enqueue(llmtest.Text("too late").WithHold(gate))
	r.clock.Advance(time.Minute)
	r.model.WaitRequests(t, 1, waitFor)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, r.disp.Stop(ctx), "in-flight turns cancelled")
	sent := r.adapter.Sent()
	require.Len(t, sent, 1)
	require.Equal(t, `Scheduled job "stand-up" could not run this time. It runs again Sunday 22 November, 10:01.`, sent[0].Text)
	run, err := r.st.Runs(context.Background(), r.conv.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunCanceled, run[len(run)-1].Status)
	msgs, err := r.st.Messages(context.Background(), r.conv.ID)
	require.NoError(t, err)
	require.Equal(t, sent[0].Text, msgs[len(msgs)-1].Content, "the notice is in the transcript")
}

func TestACronTurnOfACancelledJobIsSkipped(t *testing.T) {
	t.Parallel()
	r := newCronRig(t)
	t.Cleanup(func() { require.NoError(t, r.disp.Stop(context.Background())) })
	// A user turn runs, held, when the job comes due: its turn queues.
	gate := make(chan struct{})
	r.model.Enqueue(llmtest.Text("sure").WithHold(gate))
	require.NoError(t, r.adapter.Deliver(context.Background(), "u1", "hello?"))
	r.model.WaitRequests(t, 1, waitFor)
	r.clock.Advance(time.Minute)
	r.cronRun(t, core.RunQueued)

	_, err := r.st.CancelJob(context.Background(), r.conv.ID, r.job.ID, "cli")
	require.NoError(t, err)
	close(gate)
	run := r.cronRun(t, core.RunSkipped)
	require.Equal(t, "skipped: the recurring job was cancelled before its turn started", run.Error)
	require.Len(t, r.model.Requests(), 1, "no model call for it")
	require.Len(t, r.adapter.WaitSent(t, 1, waitFor), 1)
	msgs, err := r.st.Messages(context.Background(), r.conv.ID)
	require.NoError(t, err)
	for _, m := range msgs {
		require.NotEqual(t, core.SourceCronTurn, m.Source, "no trigger for a run that never started")
	}
}
