// Package fakewait lets a test wait on a fake platform's state: the fakes
// (discordtest, slacktest) keep their state under one mutex and close a
// "changed" channel whenever it changes, and Until waits on that.
package fakewait

import (
	"sync"
	"testing"
	"time"
)

// Until waits until cond (called with mu held) is true, failing t after
// timeout or when done closes. changed (called with mu held) returns the
// channel the fake closes at its next change; name and what (called
// without mu) make the failure message.
func Until(t testing.TB, name string, mu sync.Locker, changed func() <-chan struct{}, done <-chan struct{},
	timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		mu.Lock()
		ok := cond()
		ch := changed()
		mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("%s: waited %v for %s", name, timeout, what())
			return
		case <-done:
			t.Fatalf("%s: server closed while waiting for %s", name, what())
			return
		}
	}
}
