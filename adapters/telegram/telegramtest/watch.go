package telegramtest

import (
	"context"
	"time"
)

// WatchSent calls f, from one goroutine and in order, for every message the
// bot sends from now on, with the time the fake recorded it, until ctx
// ends. Load tests use it to time thousands of replies without a waiter
// per chat.
func (s *chatAPI) WatchSent(ctx context.Context, f func(m SentMessage, at time.Time)) {
	s.mu.Lock()
	seen := len(s.sent)
	s.mu.Unlock()
	go func() {
		for {
			s.mu.Lock()
			fresh := append([]SentMessage(nil), s.sent[seen:]...)
			seen = len(s.sent)
			changed := s.changed
			s.mu.Unlock()
			now := time.Now()
			for _, m := range fresh {
				f(m, now)
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
	}()
}
