package pace

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// wait bounds every wait for goroutines (wall time); the pacer's own time
// is the fake clock's.
const wait = 5 * time.Second

// rig runs waiters on a fake clock and notes the order of their slots.
type rig struct {
	t       *testing.T
	clock   *coretest.Clock
	p       *Pacer
	granted chan string
	// asleep is how many waiters sleep on the clock when all is quiet.
	asleep int
}

func newRig(t *testing.T, l Limits) *rig {
	clock := coretest.NewClock(t0)
	return &rig{t: t, clock: clock, p: New(l, clock), granted: make(chan string, 1000)}
}

// start has a waiter named name wait for chat in the background (or as
// a reply) and reports its slot on r.granted. It returns once the waiter
// is asleep or granted, so waiters start in a known order.
func (r *rig) start(ctx context.Context, name, chat string, background bool, wantAsleep bool) {
	r.t.Helper()
	if background {
		ctx = core.WithBackground(ctx)
	}
	go func() {
		if err := r.p.Wait(ctx, chat); err != nil {
			r.granted <- name + ": " + err.Error()
			return
		}
		r.granted <- name
	}()
	if wantAsleep {
		r.asleep++
		r.clock.WaitForTimers(r.t, r.asleep, wait)
		return
	}
	r.expect(name)
}

// expect waits for the next slots to go to names, in order, then for the
// other waiters to be asleep again, and checks no one else got a slot.
func (r *rig) expect(names ...string) {
	r.t.Helper()
	for _, name := range names {
		select {
		case got := <-r.granted:
			require.Equal(r.t, name, got)
		case <-time.After(wait):
			require.FailNow(r.t, "no slot given", "want %s", name)
		}
	}
	r.settle()
}

// settle waits until every waiter still waiting sleeps on the clock again
// and checks that no slot was given meanwhile: asleep, none can take one.
func (r *rig) settle() {
	r.t.Helper()
	r.clock.WaitForTimers(r.t, r.asleep, wait)
	select {
	case got := <-r.granted:
		require.FailNow(r.t, "a slot given out of turn", got)
	default:
	}
}

// advance moves the clock by d; names are the waiters whose slots come.
func (r *rig) advance(d time.Duration, names ...string) {
	r.t.Helper()
	r.asleep -= len(names)
	r.clock.Advance(d)
	r.expect(names...)
}

func TestZeroLimitsNeverWait(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	p := New(Limits{PerChatBurst: 3}, clock)
	for i := range 100 {
		require.NoError(t, p.Wait(core.WithBackground(context.Background()), fmt.Sprint(i%2)))
	}
	var none *Pacer
	require.NoError(t, none.Wait(context.Background(), "1"), "a nil pacer paces nothing")
	require.Equal(t, t0, clock.Now())
}

func TestPerChatBurstThenRate(t *testing.T) {
	t.Parallel()
	r := newRig(t, Limits{PerChatPerSecond: 1, PerChatBurst: 3})
	every := interval(1)
	require.Equal(t, 1052631578*time.Nanosecond, every, "1/s with the margin: 1/0.95 s")
	for i := range 3 {
		r.start(context.Background(), fmt.Sprint("burst", i), "ada", true, false)
	}
	// Another chat has a bucket of its own.
	r.start(context.Background(), "grace", "grace", true, false)

	r.start(context.Background(), "fourth", "ada", true, true)
	r.advance(every - time.Nanosecond)
	r.advance(time.Nanosecond, "fourth")
	r.start(context.Background(), "fifth", "ada", true, true)
	r.advance(every, "fifth")

	// Idle for the bucket's length, the chat has its burst again.
	r.clock.Advance(3 * every)
	for i := range 3 {
		r.start(context.Background(), fmt.Sprint("again", i), "ada", false, false)
	}
	r.start(context.Background(), "after", "ada", false, true)
	r.advance(every, "after")
}

func TestBotWideRate(t *testing.T) {
	t.Parallel()
	r := newRig(t, Limits{PerSecond: 10})
	every := interval(10)
	r.start(context.Background(), "s0", "c0", true, false)
	for i := 1; i < 6; i++ {
		r.start(context.Background(), fmt.Sprint("s", i), fmt.Sprint("c", i), true, true)
	}
	r.advance(every / 2)
	r.advance(every-every/2, "s1")
	r.advance(every, "s2")
	// A slot taken late (a slow timer) keeps the schedule: the next is
	// still a spacing after the slot, not after the late send.
	r.advance(every+every/5, "s3")
	r.advance(every-every/5, "s4")
	// After a pause, the next slot is a full spacing after the last send.
	r.advance(3*every, "s5")
	r.start(context.Background(), "s6", "c6", true, true)
	r.advance(every - time.Nanosecond)
	r.advance(time.Nanosecond, "s6")
	// A spacing with nothing sent: a send goes at once.
	r.clock.Advance(every)
	r.start(context.Background(), "s7", "c7", true, false)
}

func TestRepliesGoAheadOfBackgroundSends(t *testing.T) {
	t.Parallel()
	r := newRig(t, Limits{PerSecond: 10, PerChatPerSecond: 1, PerChatBurst: 3})
	every := interval(10)
	r.start(context.Background(), "bg0", "u0", true, false)
	for i := 1; i <= 60; i++ {
		r.start(context.Background(), fmt.Sprint("bg", i), fmt.Sprint("u", i), true, true)
	}
	// Sixty scheduled sends wait; two users' replies take the next two
	// slots, in the order they came.
	r.start(context.Background(), "reply-a", "alice", false, true)
	r.start(context.Background(), "reply-b", "bob", false, true)
	r.advance(every, "reply-a")
	r.advance(every, "reply-b")
	r.advance(every, "bg1")
	r.advance(every, "bg2")
	// A reply to a chat that just had its burst waits for its own bucket,
	// and holds up no one meanwhile.
	for range 3 {
		r.start(context.Background(), "carol-burst", "carol", false, true)
		r.advance(every, "carol-burst")
	}
	r.start(context.Background(), "carol-fourth", "carol", false, true)
	// Carol's burst went at slots 5, 6 and 7; her bucket allows a fourth
	// message one (per-chat) interval after the first.
	carol := int((5*every + interval(1) + every - 1) / every)
	for slot := 8; slot < carol; slot++ {
		r.advance(every, fmt.Sprint("bg", slot-5))
	}
	r.advance(every, "carol-fourth")
	r.advance(every, fmt.Sprint("bg", carol-5))
}

func TestCancelledWaitGivesUpItsSlot(t *testing.T) {
	t.Parallel()
	r := newRig(t, Limits{PerSecond: 10})
	every := interval(10)
	r.start(context.Background(), "first", "a", false, false)
	ctx, cancel := context.WithCancel(context.Background())
	r.start(ctx, "cancelled", "b", true, true)
	r.start(context.Background(), "next", "c", true, true)
	cancel()
	r.asleep--
	r.expect("cancelled: waiting for a send slot: context canceled")
	// Its slot is not given to a sleeping waiter (nothing wakes one
	// early); the next comes in its own turn, and no slot is lost after.
	r.advance(every)
	r.advance(every, "next")
	r.start(context.Background(), "last", "d", true, true)
	r.advance(every, "last")

	done, stop := context.WithCancel(context.Background())
	stop()
	err := r.p.Wait(done, "e")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, New(Limits{}, r.clock).Wait(done, "e"), context.Canceled)
}

func TestOversleptBackgroundSendIsPassedOver(t *testing.T) {
	t.Parallel()
	p := New(Limits{PerSecond: 10}, coretest.NewClock(t0))
	every := interval(10)
	// late overslept its turn at t0 by more than a timer's lateness (it
	// waits for its doubt slot); present is here.
	late := &waiter{chat: "a", background: true, asleep: true, wake: t0}
	present := &waiter{chat: "b", background: true}
	reply := &waiter{chat: "c", asleep: true, wake: t0}
	p.next = t0
	p.waiters = []*waiter{late, present}
	now := t0.Add(every / 2)
	require.Equal(t, now, p.turn(present, now), "the slot goes to who is here")
	require.Equal(t, t0.Add(every), p.turn(present, t0), "on time, the first comes first")
	require.Equal(t, t0.Add(every/4).Add(every), p.turn(present, t0.Add(every/4)), "a timer's lateness is on time")
	// A reply is never passed over: it holds no doubt slot.
	p.waiters = []*waiter{late, present, reply}
	require.Equal(t, now.Add(every), p.turn(present, now))
}

func TestIdleChatsAreForgotten(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	p := New(Limits{PerChatPerSecond: 1, PerChatBurst: 3}, clock)
	for round := range 5 {
		for i := range 1000 {
			require.NoError(t, p.Wait(context.Background(), fmt.Sprint(round, "-", i)))
		}
		clock.Advance(time.Minute)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	require.LessOrEqual(t, len(p.chats), 2*minSweep, "chats idle for a minute are swept")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Limits{}.Validate("send_rate"))
	require.NoError(t, Limits{PerSecond: 30, PerChatPerSecond: 1, PerChatBurst: 3}.Validate("send_rate"))
	err := Limits{PerSecond: -1, PerChatPerSecond: -0.5, PerChatBurst: -2}.Validate("send_rate")
	require.ErrorContains(t, err, "send_rate.per_second must be 0 (no limit) or more, got -1")
	require.ErrorContains(t, err, "send_rate.per_chat_per_second must be 0 (no limit) or more, got -0.5")
	require.ErrorContains(t, err, "send_rate.per_chat_burst must be 0 (meaning 1) or more, got -2")
	require.EqualError(t, Limits{PerSecond: nan()}.Validate(""), "per_second must be a finite number of messages per second, got NaN")
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestTinyAndHugeRates(t *testing.T) {
	t.Parallel()
	require.Equal(t, maxInterval, interval(1e-300))
	require.Equal(t, time.Duration(1), interval(1e300))
	require.Zero(t, interval(-1))
	require.Zero(t, interval(nan()))
}

// A partial takes a slot only when one is free now and nobody waits: it
// is skipped rather than queued, and a reply after it waits at most the
// one slot it took.
func TestPartialsTakeOnlyFreeSlots(t *testing.T) {
	t.Parallel()
	r := newRig(t, Limits{PerSecond: 10, PerChatPerSecond: 1})
	every, chatEvery := interval(10), interval(1)
	require.True(t, r.p.TryTake("ada"), "an idle pacer has a slot")
	require.False(t, r.p.TryTake("grace"), "the bot-wide slot was just taken")
	r.clock.Advance(every)
	require.False(t, r.p.TryTake("ada"), "ada's bucket is empty for a second")
	require.True(t, r.p.TryTake("grace"))

	// A reply to ada waits for her bucket; while it waits, no partial
	// takes a slot, for any chat.
	r.start(context.Background(), "reply", "ada", false, true)
	r.clock.Advance(every)
	require.False(t, r.p.TryTake("linus"), "a reply waits: partials give way")
	r.advance(chatEvery-2*every, "reply")
	r.clock.Advance(every)
	require.True(t, r.p.TryTake("linus"))

	var none *Pacer
	require.True(t, none.TryTake("ada"), "a nil pacer paces nothing")
	require.True(t, New(Limits{}, r.clock).TryTake("ada"))
}
