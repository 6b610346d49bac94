// Package pace keeps an adapter's sends at its platform's pace (a bot-wide
// rate and a per-chat rate with a short burst) instead of finding the
// limits by 429s. Replies go ahead of background sends (core.WithBackground),
// and both ahead of a reply's partial updates (TryTake).
//
// A Pacer hands out send slots. The bot-wide rate is a steady spacing of
// slots (no bot-wide burst: a platform's "30 per second" is met in every
// second, not on average). Each chat has a token bucket (PerChatBurst
// messages at once, then PerChatPerSecond), kept as a GCRA "theoretical
// arrival time" per chat and forgotten once the chat's bucket is full
// again, so the state is bounded by the chats sent to in the last few
// seconds.
//
// Slots go to replies first, then to background sends, each in arrival
// order; a send whose chat must still wait does not hold up sends to other
// chats. Every wait goes through the core.Clock with core.Sleep, so a
// scheduled send gives up its doubt slot while it waits (core/doubt.go).
// A waiter sleeps until its planned slot and then looks again: a reply
// that came meanwhile sends it back to sleep, and a background send late
// back from its sleep (retaking its doubt slot) loses the slot to whoever
// is there. Nothing wakes a sleeper early, so the slot of a wait that is
// cancelled goes unused.
//
// The pacer runs Margin under the nominal rates: a request reaches the
// platform a round trip's jitter after its slot, so slots spaced exactly at
// the limit would now and then land two within one period and get a 429.
package pace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
)

// Margin is how far under the nominal rates a Pacer sends (5 %): it absorbs
// round-trip jitter, at the cost of draining a burst that much slower.
const Margin = 0.05

// Limits is a platform's sending pace. A zero rate is no limit.
type Limits struct {
	// PerSecond is messages per second for the whole bot (0: none).
	PerSecond float64 `yaml:"per_second"`
	// PerChatPerSecond is messages per second to one chat or channel (0: none).
	PerChatPerSecond float64 `yaml:"per_chat_per_second"`
	// PerChatBurst is how many messages one chat may get at once before
	// PerChatPerSecond applies (0: 1).
	PerChatBurst int `yaml:"per_chat_burst"`
}

// Validate refuses negative and non-finite values, naming each key under
// prefix (e.g. "send_rate" gives "send_rate.per_second").
func (l Limits) Validate(prefix string) error {
	key := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	var errs []error
	for _, r := range []struct {
		name string
		v    float64
	}{{"per_second", l.PerSecond}, {"per_chat_per_second", l.PerChatPerSecond}} {
		switch {
		case math.IsNaN(r.v) || math.IsInf(r.v, 0):
			errs = append(errs, fmt.Errorf("%s must be a finite number of messages per second, got %v", key(r.name), r.v))
		case r.v < 0:
			errs = append(errs, fmt.Errorf("%s must be 0 (no limit) or more, got %v", key(r.name), r.v))
		}
	}
	if l.PerChatBurst < 0 {
		errs = append(errs, fmt.Errorf("%s must be 0 (meaning 1) or more, got %d", key("per_chat_burst"), l.PerChatBurst))
	}
	return errors.Join(errs...)
}

// Pacer paces one bot's sends. It is safe for concurrent use. A nil
// *Pacer paces nothing.
type Pacer struct {
	clock core.Clock
	// every is the spacing of bot-wide slots; chatEvery the time one
	// chat's bucket takes to earn a message; 0: no such limit.
	every, chatEvery time.Duration
	chatBurst        int

	mu sync.Mutex
	// next is the earliest time of the next bot-wide slot.
	next time.Time
	// chats holds each chat's theoretical arrival time (GCRA): a message
	// may go once now >= tat - (burst-1)*chatEvery. A chat whose tat has
	// passed has a full bucket, the same as a chat never seen: forgotten
	// at the next sweep.
	chats   map[string]time.Time
	sweepAt int
	// waiters are the sends waiting, in arrival order.
	waiters []*waiter
	// queue is turn's scratch space.
	queue []*waiter
}

// waiter is one send waiting for its slot.
type waiter struct {
	chat       string
	background bool
	// asleep is true from the moment the waiter goes to sleep until it
	// holds the lock again; wake is when its timer fires. A background
	// send asleep past its wake is taking its doubt slot back (core.Sleep),
	// which may take a while: slots do not wait for it.
	asleep bool
	wake   time.Time
}

const (
	// minSweep is how many chats are remembered before idle ones are
	// looked for.
	minSweep = 1024
	// maxPlanned bounds how many slots turn simulates ahead, so that a
	// long queue costs bounded work per wake-up: a waiter further back
	// sleeps that far and looks again.
	maxPlanned = 256
	// maxInterval keeps a tiny rate's interval within a time.Duration.
	maxInterval = time.Duration(math.MaxInt64 / 4)
)

// New returns a Pacer for l on clock (nil: the system clock). Negative and
// non-finite values (which Validate refuses) are read as no limit.
func New(l Limits, clock core.Clock) *Pacer {
	if clock == nil {
		clock = core.SystemClock{}
	}
	return &Pacer{
		clock:     clock,
		every:     interval(l.PerSecond),
		chatEvery: interval(l.PerChatPerSecond),
		chatBurst: max(l.PerChatBurst, 1),
		chats:     map[string]time.Time{},
		sweepAt:   minSweep,
	}
}

// interval is the time between messages at rate per second, Margin under
// it; 0 for no limit.
func interval(rate float64) time.Duration {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return 0
	}
	ns := float64(time.Second) / (rate * (1 - Margin))
	if ns >= float64(maxInterval) {
		return maxInterval
	}
	return max(time.Duration(ns), 1)
}

// Wait waits until one more message may go to chat: the next bot-wide slot
// that no reply waits for (a reply, ctx not core.IsBackground, goes ahead
// of every background send), once chat's bucket allows it. It returns an
// error wrapping ctx's when ctx ends first; the slot is then not used.
func (p *Pacer) Wait(ctx context.Context, chat string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting for a send slot: %w", err)
	}
	if p == nil || (p.every == 0 && p.chatEvery == 0) {
		return nil
	}
	w := &waiter{chat: chat, background: core.IsBackground(ctx)}
	p.mu.Lock()
	p.waiters = append(p.waiters, w)
	for {
		w.asleep = false
		now := p.clock.Now()
		at := p.turn(w, now)
		if !at.After(now) {
			p.grant(w, now)
			p.mu.Unlock()
			return nil
		}
		w.asleep, w.wake = true, at
		p.mu.Unlock()
		// Woken at its turn, a waiter looks again: a reply may have come
		// first, and a waiter ahead may have gone.
		ok := core.Sleep(ctx, p.clock, at.Sub(now))
		p.mu.Lock()
		if !ok {
			p.remove(w)
			p.mu.Unlock()
			return fmt.Errorf("waiting for a send slot: %w", ctx.Err())
		}
	}
}

// TryTake takes a slot for chat only if one is free now and no send waits
// for one: the lowest priority, for a reply's partial updates (drafts,
// edits), which a finished reply or a scheduled send never waits behind
// for more than the one slot taken. It reports whether it took one; a
// partial that gets none is skipped.
func (p *Pacer) TryTake(chat string) bool {
	if p == nil || (p.every == 0 && p.chatEvery == 0) {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if len(p.waiters) > 0 || p.next.After(now) || p.readyAt(chat, nil).After(now) {
		return false
	}
	w := &waiter{chat: chat}
	p.waiters = append(p.waiters, w)
	p.grant(w, now)
	return true
}

// turn is when w's slot comes as things stand at now. The bot-wide slots
// from max(next, now) on go to the waiters in order (replies, then
// background sends, each in arrival order), each slot to the first whose
// chat may have a message then. A background send that overslept its turn
// (by more than a timer's lateness) is passed over: it is taking its doubt
// slot back, and the slot goes to whoever is here. Callers hold p.mu.
func (p *Pacer) turn(w *waiter, now time.Time) time.Time {
	q := p.queue[:0]
	for pass := range 2 {
		for _, x := range p.waiters {
			if x.background != (pass == 1) {
				continue
			}
			if x != w && x.background && x.asleep && now.Sub(x.wake) > p.slack() {
				continue
			}
			q = append(q, x)
		}
	}
	defer func() {
		clear(q)
		p.queue = q[:0]
	}()
	v := now
	if p.next.After(v) {
		v = p.next
	}
	var tats map[string]time.Time // the chats' tats as the plan goes
	for range maxPlanned {
		pick := -1
		var soonest time.Time
		for i, x := range q {
			r := p.readyAt(x.chat, tats)
			if !r.After(v) {
				pick = i
				break
			}
			if soonest.IsZero() || r.Before(soonest) {
				soonest = r
			}
		}
		if pick < 0 {
			// Every chat waiting must wait for its bucket: the slot
			// goes to the first one ready.
			v = soonest
			continue
		}
		x := q[pick]
		if x == w {
			return v
		}
		q = slices.Delete(q, pick, pick+1)
		if p.chatEvery > 0 {
			if tats == nil {
				tats = map[string]time.Time{}
			}
			tats[x.chat] = laterOf(p.tat(x.chat, tats), v).Add(p.chatEvery)
		}
		v = v.Add(p.every)
	}
	// Far back in a long queue: look again then.
	return laterOf(v, p.readyAt(w.chat, tats))
}

// tat is chat's theoretical arrival time, from the plan's tats if it has
// one there. Callers hold p.mu.
func (p *Pacer) tat(chat string, tats map[string]time.Time) time.Time {
	if t, ok := tats[chat]; ok {
		return t
	}
	return p.chats[chat]
}

// readyAt is when chat's bucket allows one more message (zero: now).
// Callers hold p.mu.
func (p *Pacer) readyAt(chat string, tats map[string]time.Time) time.Time {
	if p.chatEvery == 0 {
		return time.Time{}
	}
	t := p.tat(chat, tats)
	if t.IsZero() {
		return t
	}
	return t.Add(-time.Duration(p.chatBurst-1) * p.chatEvery)
}

// grant gives w the slot at now. A slot taken a little late (by at most
// slack) keeps the schedule, so that late wake-ups do not slow a burst
// down; after a longer pause the next slot is a full spacing away.
// Callers hold p.mu.
func (p *Pacer) grant(w *waiter, now time.Time) {
	p.remove(w)
	if p.every > 0 {
		if !p.next.IsZero() && now.Sub(p.next) <= p.slack() {
			p.next = p.next.Add(p.every)
		} else {
			p.next = now.Add(p.every)
		}
	}
	if p.chatEvery == 0 {
		return
	}
	p.chats[w.chat] = laterOf(p.chats[w.chat], now).Add(p.chatEvery)
	if len(p.chats) > p.sweepAt {
		for c, t := range p.chats {
			if !t.After(now) {
				delete(p.chats, c)
			}
		}
		p.sweepAt = max(minSweep, 2*len(p.chats))
	}
}

// slack is how late a timer may wake a waiter and still be on time: a
// quarter of the spacing of bot-wide slots.
func (p *Pacer) slack() time.Duration { return p.every / 4 }

// remove takes w out of the waiters. Callers hold p.mu.
func (p *Pacer) remove(w *waiter) {
	for i, x := range p.waiters {
		if x == w {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			return
		}
	}
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
