package web

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"
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

	mu   sync.Mutex
	keys *simplelru.LRU[string, *limitEntry]
}

// limitEntry is one key's state: the bucket is full at full.
type limitEntry struct {
	full time.Time
}

// newKeyedLimiter allows n events per window per key and tracks at most
// max keys; nil (no limit) when n is not positive.
func newKeyedLimiter(n int, window time.Duration, max int) *keyedLimiter {
	if n <= 0 {
		return nil
	}
	every := window / time.Duration(n)
	keys := newLRU[string, *limitEntry](max)
	return &keyedLimiter{every: every, window: every * time.Duration(n), keys: keys}
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
	// Get makes key the most recently used; a new key past max pushes
	// out the least recently used.
	e, ok := l.keys.Get(key)
	if !ok {
		e = &limitEntry{full: now}
		l.keys.Add(key, e)
	}
	full := e.full
	if full.Before(now) {
		full = now
	}
	next := full.Add(l.every)
	if ahead := next.Sub(now); ahead > l.window {
		return false, ahead - l.window
	}
	e.full = next
	return true, 0
}

// forgetIdleLocked drops, from the least recently used end, keys whose
// bucket is full again: remembering them changes nothing.
func (l *keyedLimiter) forgetIdleLocked(now time.Time) {
	for {
		_, e, ok := l.keys.GetOldest()
		if !ok || e.full.After(now) {
			return
		}
		l.keys.RemoveOldest()
	}
}

// tracked is how many keys the limiter remembers (for tests).
func (l *keyedLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys.Len()
}

// recentSet remembers up to max strings, forgetting the least recently
// used past that: the client ids known to have a conversation.
type recentSet struct {
	keys *lru.Cache[string, struct{}]
}

func newRecentSet(max int) *recentSet {
	// New fails only on a size below one.
	keys, _ := lru.New[string, struct{}](max)
	return &recentSet{keys: keys}
}

// has reports whether s is remembered, and makes it the most recent.
func (r *recentSet) has(s string) bool {
	_, ok := r.keys.Get(s)
	return ok
}

// add remembers s.
func (r *recentSet) add(s string) {
	r.keys.Add(s, struct{}{})
}

// size is how many strings are remembered (for tests).
func (r *recentSet) size() int {
	return r.keys.Len()
}

// newLRU returns an LRU of at most size entries, for a caller that holds
// its own lock.
func newLRU[K comparable, V any](size int) *simplelru.LRU[K, V] {
	// NewLRU fails only on a size below one.
	c, _ := simplelru.NewLRU[K, V](max(size, 1), nil)
	return c
}
