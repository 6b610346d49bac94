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
	"github.com/parleybot/parley/store"
)

// ledgerAdapter checks, as each scheduled send begins, how many messages
// the platform has already taken whose jobs are not yet recorded sent:
// the duplicates a crash at that instant would cause. Its first sends
// wait until `together` of them are in flight, to show that many may be.
type ledgerAdapter struct {
	*coretest.Adapter
	st       *store.Store
	together int
	full     chan struct{} // closed once `together` sends were in flight
	wasFull  bool

	mu        sync.Mutex
	inFlight  int
	most      int // sends in flight at once, at most
	taken     []int64
	mostDoubt int // taken and unrecorded, with the one beginning, at most
	errs      []string
}

func newLedger(st *store.Store, p core.Platform, window time.Duration, together int) *ledgerAdapter {
	a := &ledgerAdapter{Adapter: coretest.NewAdapter(p), st: st, together: together, full: make(chan struct{})}
	a.IdempotencyWindow = window
	return a
}

func (a *ledgerAdapter) Send(ctx context.Context, m core.OutboundMessage) (core.SendResult, error) {
	var id int64
	if _, err := fmt.Sscanf(m.IdempotencyKey, "job-%d", &id); err != nil {
		return a.Adapter.Send(ctx, m) // a turn's reply
	}
	a.mu.Lock()
	a.inFlight++
	a.most = max(a.most, a.inFlight)
	if a.inFlight == a.together && !a.wasFull {
		a.wasFull = true
		close(a.full)
	}
	taken := append([]int64(nil), a.taken...)
	a.mu.Unlock()

	doubt := 1 // this one
	for _, t := range taken {
		j, err := a.st.Job(ctx, t)
		if err != nil {
			return core.SendResult{}, err
		}
		if j.Status != core.JobSent {
			doubt++
		}
	}
	select {
	case <-a.full:
	case <-time.After(waitFor):
		a.mu.Lock()
		a.errs = append(a.errs, fmt.Sprintf("job %d waited %v for %d sends in flight at once", id, waitFor, a.together))
		a.mu.Unlock()
	}
	res, err := a.Adapter.Send(ctx, m)
	a.mu.Lock()
	a.inFlight--
	a.taken = append(a.taken, id)
	a.mostDoubt = max(a.mostDoubt, doubt)
	a.mu.Unlock()
	return res, err
}

// scheduleFor records a DM from thread on platform p and schedules a
// message to it.
func scheduleFor(t *testing.T, st *store.Store, p core.Platform, thread, text string, now, due time.Time) int64 {
	t.Helper()
	res, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: p, ChannelThreadID: thread, Text: "hi", Now: now})
	require.NoError(t, err)
	j := &core.Job{ConversationID: res.Conversation.ID, Text: text, DueAt: due}
	_, err = st.ScheduleMessage(t.Context(), j, false, 50)
	require.NoError(t, err)
	return j.ID
}

// On a platform that cannot drop a repeat, a scheduled send begins only
// once at most max_sends_in_doubt-1 others the platform took are still
// unrecorded: a crash at any instant sends at most that many twice. A
// platform that drops repeats (Discord's nonce) sends side by side
// meanwhile, unless it forgets a key before a crashed send would go out
// again (a window under twice the job lease).
func TestSendsInDoubtAreBoundedPerPlatform(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		inDoubt   int
		lease     time.Duration
		dcWindow  time.Duration
		dcAtOnce  int // Discord sends in flight at once: exactly, or at least 8
		dcBounded bool
	}{
		{name: "max_sends_in_doubt=1", inDoubt: 1, lease: time.Minute, dcWindow: 2 * time.Minute, dcAtOnce: 8},
		{name: "max_sends_in_doubt=3", inDoubt: 3, lease: time.Minute, dcWindow: 2 * time.Minute, dcAtOnce: 8},
		{name: "lease longer than Discord remembers", inDoubt: 1, lease: 5 * time.Minute, dcWindow: 2 * time.Minute, dcAtOnce: 1, dcBounded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			tg := newLedger(st, telegram, 0, tc.inDoubt)
			dc := newLedger(st, discord, tc.dcWindow, tc.dcAtOnce)
			d, err := engine.New(engine.Config{Store: st, LLM: noModel{}, Adapters: []core.Adapter{tg, dc},
				ScheduledMessages: true, MaxSendsInDoubt: tc.inDoubt, JobLease: tc.lease, PollInterval: 50 * time.Millisecond})
			require.NoError(t, err)
			ctx := t.Context()
			now := time.Now()
			const perPlatform = 30
			for i := range perPlatform {
				scheduleFor(t, st, telegram, fmt.Sprintf("t%d", i), fmt.Sprintf("telegram %d", i), now, now)
				scheduleFor(t, st, discord, fmt.Sprintf("d%d", i), fmt.Sprintf("discord %d", i), now, now)
			}
			require.NoError(t, d.Start(ctx))
			t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })

			require.Len(t, tg.WaitSent(t, perPlatform, waitFor), perPlatform)
			require.Len(t, dc.WaitSent(t, perPlatform, waitFor), perPlatform)
			require.Eventually(t, func() bool { return d.SendsInFlight() == 0 }, waitFor, 5*time.Millisecond)
			for _, a := range []*ledgerAdapter{tg, dc} {
				a.mu.Lock()
				require.Empty(t, a.errs)
				a.mu.Unlock()
			}
			require.Equal(t, tc.inDoubt, tg.most, "Telegram sends in flight at once")
			require.LessOrEqual(t, tg.mostDoubt, tc.inDoubt, "Telegram messages taken and not recorded sent when a send began, with it")
			if tc.dcBounded {
				require.Equal(t, tc.dcAtOnce, dc.most, "Discord sends in flight at once")
				require.LessOrEqual(t, dc.mostDoubt, tc.inDoubt, "Discord messages taken and not recorded sent when a send began, with it")
			} else {
				require.GreaterOrEqual(t, dc.most, tc.dcAtOnce, "Discord's sends go side by side")
			}
			jobs, err := st.Jobs(ctx, 0, core.JobSent, 100)
			require.NoError(t, err)
			require.Len(t, jobs, 2*perPlatform, "every job recorded sent")
		})
	}
}

// sleepyAdapter's first send is refused with a 429 and waits it out on
// the clock, as the Telegram and Slack adapters do (core.Sleep).
type sleepyAdapter struct {
	*coretest.Adapter
	clock  *coretest.Clock
	once   sync.Once
	sleeps chan time.Time // when the 429's wait began
}

func (a *sleepyAdapter) Send(ctx context.Context, m core.OutboundMessage) (core.SendResult, error) {
	first := false
	a.once.Do(func() { first = true })
	if first {
		a.sleeps <- a.clock.Now()
		if !core.Sleep(ctx, a.clock, 3*time.Second) {
			return core.SendResult{}, ctx.Err()
		}
	}
	return a.Adapter.Send(ctx, m)
}

// A send waiting out a 429 is not in doubt (the platform refused it), so
// it gives its slot to the platform's next send meanwhile.
func TestASendWaitingOutA429LetsTheNextOneGo(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clock := coretest.NewClock(t0)
	ad := &sleepyAdapter{Adapter: coretest.NewAdapter(telegram), clock: clock, sleeps: make(chan time.Time, 1)}
	d, err := engine.New(engine.Config{Store: st, LLM: noModel{}, Adapters: []core.Adapter{ad},
		ScheduledMessages: true, Clock: clock, PollInterval: time.Second})
	require.NoError(t, err)
	ctx := t.Context()
	scheduleFor(t, st, telegram, "first", "rate limited", t0, t0.Add(time.Minute))
	scheduleFor(t, st, telegram, "second", "not held up", t0, t0.Add(time.Minute+time.Second))
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })
	t.Cleanup(func() { clock.Advance(time.Hour) }) // a failed test's sleeper wakes: Stop lets a begun send finish

	clock.Advance(time.Minute)
	var from time.Time
	select {
	case from = <-ad.sleeps: // the first waits out its 429
	case <-time.After(waitFor):
		t.Fatal("the first message was not sent")
	}
	clock.Advance(time.Second)
	sent := ad.WaitSent(t, 1, waitFor)
	require.Equal(t, "not held up", sent[0].Text, "the second went while the first waited")
	clock.Advance(from.Add(3 * time.Second).Sub(clock.Now()))
	// The sleeper reports its start before it sets its timer: should the
	// clock have moved on between the two, its wait ends later than
	// from+3s, so the clock goes on a second at a time until it does.
	require.Eventually(t, func() bool {
		if len(ad.Sent()) >= 2 {
			return true
		}
		clock.Advance(time.Second)
		return false
	}, waitFor, 10*time.Millisecond, "the rate-limited message was never sent")
	sent = ad.WaitSent(t, 2, waitFor)
	require.Equal(t, "rate limited", sent[1].Text)
}
