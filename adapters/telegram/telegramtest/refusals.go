package telegramtest

import (
	"math"
	"strings"
	"time"
)

// refusals are the methods the fake answers as an older Bot API server
// does, and the methods under a flood wait.
type refusals struct {
	// gone are methods answered 404 "Not Found", as for a method the
	// server does not know.
	gone map[string]bool
	// flood are methods answered 429 until the time given.
	flood map[string]time.Time
}

// RefuseMethod makes the server answer method (e.g. "sendMessageDraft")
// as a Bot API server that predates it does any unknown method: 404 "Not
// Found". AllowMethod undoes it.
func (s *faultInjector) RefuseMethod(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused.gone[strings.ToLower(method)] = true
}

// AllowMethod undoes RefuseMethod.
func (s *faultInjector) AllowMethod(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refused.gone, strings.ToLower(method))
}

// FloodWait puts method under Telegram's flood control for d on the
// server's clock (WithNow): every call of it until then is answered 429
// "Too Many Requests: retry after N" with parameters.retry_after N, the
// whole seconds left (at least 1). A storm of 429s on drafts or edits is
// FloodWait("sendMessageDraft", 5*time.Second). A d of 0 lifts it.
func (s *faultInjector) FloodWait(method string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(method)
	if d <= 0 {
		delete(s.refused.flood, key)
		return
	}
	s.refused.flood[key] = s.now().Add(d)
}

// refusal returns the answer for a (lower-cased) method the server
// refuses now, if it does.
func (s *state) refusal(method string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused.gone[method] {
		f := notFound()
		return &f
	}
	until, ok := s.refused.flood[method]
	if !ok {
		return nil
	}
	left := until.Sub(s.now())
	if left <= 0 {
		delete(s.refused.flood, method)
		return nil
	}
	f := TooManyRequests(max(1, int(math.Ceil(left.Seconds()))))
	return &f
}
