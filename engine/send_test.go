package engine_test

import (
	"context"
	"errors"
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
)

func TestScheduledMessageRetriesWithBackoffThenFails(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, scheduled: true})
	b.model.Enqueue(llmtest.Text("hi"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "sched", "hello"))
	b.adapter.WaitSent(t, 1, waitFor)
	b.waitRun(t, "sched")
	conv, err := b.store.ConversationByThread(b.ctx, web, "sched")
	require.NoError(t, err)
	j := &core.Job{ConversationID: conv.ID, Text: "through a flaky platform", DueAt: t0.Add(time.Minute)}
	_, err = b.store.ScheduleMessage(b.ctx, j, false, 50)
	require.NoError(t, err)

	b.adapter.FailSends(errors.New("platform down"))
	job := func() core.Job {
		got, err := b.store.Job(b.ctx, j.ID)
		require.NoError(t, err)
		return got
	}
	advanceUntil := func(d time.Duration, cond func(core.Job) bool, what string) core.Job {
		t.Helper()
		clock.Advance(d)
		b.jobs.Wake()
		var got core.Job
		require.Eventually(t, func() bool { got = job(); return cond(got) }, waitFor, 2*time.Millisecond, what)
		return got
	}
	got := advanceUntil(time.Minute, func(g core.Job) bool { return g.Attempts == 1 }, "first attempt")
	require.Equal(t, core.JobPending, got.Status, "tried again later")
	require.Equal(t, "platform down", got.LastError)
	require.True(t, got.DueAt.Equal(t0.Add(time.Minute+30*time.Second)), "after 30s, got %v", got.DueAt)
	got = advanceUntil(30*time.Second, func(g core.Job) bool { return g.Attempts == 2 }, "second attempt")
	require.True(t, got.DueAt.Equal(t0.Add(2*time.Minute+30*time.Second)), "then after 60s, got %v", got.DueAt)
	got = advanceUntil(time.Minute, func(g core.Job) bool { return g.Attempts == 3 }, "third attempt")
	require.Equal(t, core.JobFailed, got.Status, "no attempts left (max 3)")
	require.Equal(t, "platform down", got.LastError, "the error is kept")
	require.Len(t, b.adapter.Sent(), 1, "only the first reply went out")
}

func TestScheduledMessagesOfOneConversationGoInOrderAndOthersAreNotHeldUp(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, scheduled: true})
	var convs []core.Conversation
	for _, u := range []string{"u1", "u2"} {
		b.model.Enqueue(llmtest.Text("hi " + u))
		require.NoError(t, b.adapter.Deliver(b.ctx, u, "hello"))
		b.waitRun(t, u)
		conv, err := b.store.ConversationByThread(b.ctx, web, u)
		require.NoError(t, err)
		convs = append(convs, conv)
	}
	b.adapter.WaitSent(t, 2, waitFor)
	// Three for u1 due together (created in reverse), one for u2.
	for i, text := range []string{"third", "second", "first"} {
		_, err := b.store.ScheduleMessage(b.ctx, &core.Job{ConversationID: convs[0].ID, Text: text,
			DueAt: t0.Add(time.Minute - time.Duration(i)*time.Second)}, false, 50)
		require.NoError(t, err)
	}
	_, err := b.store.ScheduleMessage(b.ctx, &core.Job{ConversationID: convs[1].ID, Text: "for u2", DueAt: t0.Add(time.Minute)}, false, 50)
	require.NoError(t, err)
	clock.Advance(time.Minute)
	b.jobs.Wake()
	sent := b.adapter.WaitSent(t, 6, waitFor)
	var u1 []string
	for _, s := range sent[2:] {
		if s.ChannelThreadID == "u1" {
			u1 = append(u1, s.Text)
			require.Regexp(t, `^job-\d+$`, s.IdempotencyKey, "a resend carries the same key")
		}
	}
	require.Equal(t, []string{"first", "second", "third"}, u1, "one conversation's messages in due order")
}

func TestAWokenJobLoopSendsAJobCreatedWhileItSlept(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ad := coretest.NewAdapter(web)
	waker := core.NewWaker()
	d, err := engine.New(engine.Config{Store: st, LLM: noModel{}, Adapters: []core.Adapter{ad},
		ScheduledMessages: true, JobWaker: waker, PollInterval: time.Hour})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, ad.Start(ctx, d))
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: "w", Text: "hi", Now: time.Now()})
	require.NoError(t, err)
	// The loop found nothing due and sleeps for an hour; a job due in
	// 50ms is created and the loop woken, as the schedule tool does.
	_, err = st.ScheduleMessage(ctx, &core.Job{ConversationID: res.Conversation.ID, Text: "soon", DueAt: time.Now().Add(50 * time.Millisecond)}, false, 50)
	require.NoError(t, err)
	waker.Wake()
	sent := ad.WaitSent(t, 1, waitFor)
	require.Equal(t, "soon", sent[0].Text)
}

// noModel is never asked: no turn runs in the test.
type noModel struct{}

func (noModel) Run(context.Context, llm.Request) (llm.Result, error) {
	return llm.Result{}, errors.New("no model in this test")
}

// gateAdapter holds sends to one chat until released.
type gateAdapter struct {
	*coretest.Adapter
	slow    string
	release chan struct{}
	entered chan struct{}
}

func (a *gateAdapter) Send(ctx context.Context, m core.OutboundMessage) (core.SendResult, error) {
	if m.ChannelThreadID == a.slow {
		a.entered <- struct{}{}
		<-a.release
	}
	return a.Adapter.Send(ctx, m)
}

func TestASlowConversationHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clock := coretest.NewClock(t0)
	// Idempotent: a send that hangs is not in doubt beside the others
	// (doubt_test.go covers a platform where it is).
	ad := &gateAdapter{Adapter: coretest.NewAdapter(web), slow: "slow", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	ad.IdempotencyWindow = time.Hour
	d, err := engine.New(engine.Config{Store: st, LLM: noModel{}, Adapters: []core.Adapter{ad},
		ScheduledMessages: true, Clock: clock, PollInterval: time.Second})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, ad.Start(ctx, d))
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })
	jobFor := func(thread, text string, due time.Time) {
		res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: thread, Text: "hi", Now: t0})
		require.NoError(t, err)
		_, err = st.ScheduleMessage(ctx, &core.Job{ConversationID: res.Conversation.ID, Text: text, DueAt: due}, false, 50)
		require.NoError(t, err)
	}
	jobFor("slow", "stuck on a slow platform", t0.Add(time.Minute))
	jobFor("fast", "on time", t0.Add(2*time.Minute))
	// The job loop may arm its timer just after an Advance (it read the
	// time before): the clock moves a second at a time until what it
	// waits for has come, within a wall-clock deadline.
	step := func(until func() bool) {
		t.Helper()
		for deadline := time.Now().Add(waitFor); !until(); {
			require.True(t, time.Now().Before(deadline), "nothing came by %s", clock.Now())
			clock.Advance(time.Second)
			time.Sleep(5 * time.Millisecond) // the loops take the new time
		}
	}
	entered := false
	step(func() bool {
		select {
		case <-ad.entered:
			entered = true
		default:
		}
		return entered
	}) // the slow send has begun and hangs
	step(func() bool { return len(ad.Sent()) >= 1 })
	sent := ad.WaitSent(t, 1, waitFor)
	require.Equal(t, "on time", sent[0].Text, "the other conversation's message went out meanwhile")
	close(ad.release)
	sent = ad.WaitSent(t, 2, waitFor)
	require.Equal(t, "stuck on a slow platform", sent[1].Text)
}

// stallAdapter's first send waits, as a platform's flood control might,
// until its context gives up; later sends go through.
type stallAdapter struct {
	*coretest.Adapter
	stalled atomic.Int32
}

func (a *stallAdapter) Send(ctx context.Context, m core.OutboundMessage) (core.SendResult, error) {
	if a.stalled.Add(1) == 1 {
		<-ctx.Done()
		return core.SendResult{}, fmt.Errorf("waiting out a 429: %w", ctx.Err())
	}
	return a.Adapter.Send(ctx, m)
}

// A send that would outlast its job's lease is cut off before the lease
// ends and the job handed back, attempt unspent: no second process (nor
// this one) can claim it while it is still being sent.
func TestASendNeverOutlastsItsLease(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ad := &stallAdapter{Adapter: coretest.NewAdapter(web)}
	d, err := engine.New(engine.Config{Store: st, LLM: noModel{}, Adapters: []core.Adapter{ad},
		ScheduledMessages: true, JobLease: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, ad.Start(ctx, d))
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: "u1", Text: "hi", Now: time.Now()})
	require.NoError(t, err)
	j := &core.Job{ConversationID: res.Conversation.ID, Text: "on its way", DueAt: time.Now()}
	_, err = st.ScheduleMessage(ctx, j, false, 50)
	require.NoError(t, err)
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })

	sent := ad.WaitSent(t, 1, waitFor)
	require.Equal(t, "on its way", sent[0].Text)
	require.EqualValues(t, 2, ad.stalled.Load(), "cut off once, then sent")
	var got core.Job
	require.Eventually(t, func() bool { got, _ = st.Job(ctx, j.ID); return got.Status == core.JobSent }, waitFor, 5*time.Millisecond)
	require.Equal(t, 1, got.Attempts, "the cut-off send spent no attempt")
}
