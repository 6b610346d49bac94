package web

import (
	"container/list"
	"sync"
	"time"
)

// keyedLimiter allows about n events per window for each key (an address,
// a client id): a burst of n, then one every window/n. It keeps one time
// per key (GCRA: the time at which the key's bucket is full again), and at
// most max keys: a key whose bucket is full again is forgotten at once (a
// fresh key behaves the same), and past max the least recently used key is
// forgotten, so a flood of new keys costs bounded memory.
type keyedLimiter struct {
	every  time.Duration // one event's share of the window
	window time.Duration // n × every: how far ahead a key may run
	max    int

	mu    sync.Mutex
	order *list.List // of *limitEntry, most recently used first
	byKey map[string]*list.Element
}

// limitEntry is one key's state: the bucket is full at full.
type limitEntry struct {
	key  string
	full time.Time
}

// newKeyedLimiter allows n events per window per key and tracks at most
// max keys; nil (no limit) when n is not positive.
func newKeyedLimiter(n int, window time.Duration, max int) *keyedLimiter {
	if n <= 0 {
		return nil
	}
	every := window / time.Duration(n)
	return &keyedLimiter{
		every:  every,
		window: every * time.Duration(n),
		max:    max,
		order:  list.New(),
		byKey:  map[string]*list.Element{},
	}
}

// take spends one event of key at now. When the key is over its limit it
// returns false and how long until the next event would be allowed. A nil
// limiter allows everything.
func (l *keyedLimiter) take(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetIdleLocked(now)
	el, ok := l.byKey[key]
	if !ok {
		for len(l.byKey) >= l.max {
			l.removeLocked(l.order.Back())
		}
		el = l.order.PushFront(&limitEntry{key: key, full: now})
		l.byKey[key] = el
	}
	e := el.Value.(*limitEntry)
	full := e.full
	if full.Before(now) {
		full = now
	}
	next := full.Add(l.every)
	if ahead := next.Sub(now); ahead > l.window {
		l.order.MoveToFront(el)
		return false, ahead - l.window
	}
	e.full = next
	l.order.MoveToFront(el)
	return true, 0
}

// forgetIdleLocked drops, from the least recently used end, keys whose
// bucket is full again: remembering them changes nothing.
func (l *keyedLimiter) forgetIdleLocked(now time.Time) {
	for back := l.order.Back(); back != nil; back = l.order.Back() {
		if back.Value.(*limitEntry).full.After(now) {
			return
		}
		l.removeLocked(back)
	}
}

func (l *keyedLimiter) removeLocked(el *list.Element) {
	delete(l.byKey, el.Value.(*limitEntry).key)
	l.order.Remove(el)
}

// tracked is how many keys the limiter remembers (for tests).
func (l *keyedLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byKey)
}

// recentSet remembers up to max strings, forgetting the least recently
// used past that: the client ids known to have a conversation.
type recentSet struct {
	max int

	mu    sync.Mutex
	order *list.List // of string, most recently used first
	byKey map[string]*list.Element
}

func newRecentSet(max int) *recentSet {
	return &recentSet{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// has reports whether s is remembered, and makes it the most recent.
func (r *recentSet) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.byKey[s]
	if ok {
		r.order.MoveToFront(el)
	}
	return ok
}

// add remembers s.
func (r *recentSet) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.byKey[s]; ok {
		r.order.MoveToFront(el)
		return
	}
	for len(r.byKey) >= r.max {
		back := r.order.Back()
		delete(r.byKey, back.Value.(string))
		r.order.Remove(back)
	}
	r.byKey[s] = r.order.PushFront(s)
}

// size is how many strings are remembered (for tests).
func (r *recentSet) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byKey)
}
