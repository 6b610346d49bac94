package discordtest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// faultInjector is how tests make the fake fail: rate limits, errors,
// refused markup and blocked users.
type faultInjector struct{ *state }

// Discord's JSON error codes used by the fake.
const (
	codeUnknownChannel   = 10003
	codeEmptyMessage     = 50006
	codeCannotSendToUser = 50007
	codeInvalidFormBody  = 50035
	codeInvalidJSON      = 50109
)

// fault is one scheduled failure of a route.
type fault struct {
	status     int
	code       int
	message    string
	retryAfter time.Duration // > 0 for a rate limit
	// pass is how many calls of the route still succeed before this fault
	// fires (RateLimitAfter).
	pass int
}

// RateLimitNext makes the next call of route (see Calls) answer 429 like
// Discord: body {"message":"You are being rate limited.","retry_after":
// <seconds as a float>,"global":false} and the headers Retry-After (whole
// seconds, rounded up), X-RateLimit-Limit, X-RateLimit-Remaining (0),
// X-RateLimit-Reset, X-RateLimit-Reset-After, X-RateLimit-Bucket and
// X-RateLimit-Scope ("user"). discordgo sleeps retry_after and retries.
// Faults of one route form a queue in the order they were scheduled.
func (s *faultInjector) RateLimitNext(route string, retryAfter time.Duration) {
	s.addFault(route, fault{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// RateLimitAfter lets n calls of route succeed, then answers one with a
// rate limit as RateLimitNext does (for a split reply whose later part is
// limited). The n calls count from when the faults queued before it have
// fired.
func (s *faultInjector) RateLimitAfter(route string, n int, retryAfter time.Duration) {
	s.addFault(route, fault{status: http.StatusTooManyRequests, retryAfter: retryAfter, pass: n})
}

// FailNext makes the next call of route answer status with the JSON body
// {"message":message,"code":code}, e.g. 400 / 50035 "Invalid Form Body" or
// 403 / 50007 "Cannot send messages to this user". discordgo returns it as
// a *discordgo.RESTError.
func (s *faultInjector) FailNext(route string, status, code int, message string) {
	s.addFault(route, fault{status: status, code: code, message: message})
}

// LoseNextAnswer makes the next call of route act as usual but answer 500
// instead of its result, as when Discord's answer is lost after it acted:
// a message is created, and the client does not know it.
func (s *faultInjector) LoseNextAnswer(route string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[route]++
}

// takeLost consumes one LoseNextAnswer of route.
func (s *state) takeLost(route string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost[route] == 0 {
		return false
	}
	s.lost[route]--
	return true
}

// RefuseNextMarkup makes the next message with content answer 400 / 50035
// "Invalid Form Body" with Discord's nested errors naming "content", as
// if Discord had refused the content's markup. Messages without content
// (an embed alone) pass and do not count. Refusals form a queue, as
// FailNext's do.
func (s *faultInjector) RefuseNextMarkup() { s.RefuseMarkupAfter(0) }

// RefuseMarkupAfter lets n messages with content through, then refuses
// one as RefuseNextMarkup does (for a split reply whose later part is
// refused).
func (s *faultInjector) RefuseMarkupAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markupFaults = append(s.markupFaults, n)
}

// takeMarkupFault consumes one message with content from the refusal
// queue and reports whether to refuse it.
func (s *chatAPI) takeMarkupFault() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.markupFaults) == 0 {
		return false
	}
	if s.markupFaults[0] > 0 {
		s.markupFaults[0]--
		return false
	}
	s.markupFaults = s.markupFaults[1:]
	return true
}

func (s *state) addFault(route string, f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[route] = append(s.faults[route], f)
}

// takeFault pops the next fault of route, if any.
func (s *state) takeFault(route string) (fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[route]
	if len(q) == 0 {
		return fault{}, false
	}
	if q[0].pass > 0 {
		q[0].pass--
		return fault{}, false
	}
	s.faults[route] = q[1:]
	if q[0].retryAfter > 0 {
		s.rateLimited++
	}
	return q[0], true
}

// RateLimited returns how many requests the fake answered 429, those of
// RateLimitNext and RateLimitAfter and those over WithChannelRateLimit.
func (s *faultInjector) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateLimited
}

// admit takes one message for channelID from WithChannelRateLimit's
// bucket; when the bucket is empty it counts a 429 and returns how long
// until the channel takes one more. Integer durations keep the edge
// exact: a message at the very instant a slot frees is admitted.
func (s *chatAPI) admit(channelID string) (wait time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if wait := s.chanLimit.Wait(channelID, now); wait > 0 {
		s.rateLimited++
		s.notify()
		return wait, false
	}
	s.chanLimit.Take(channelID, now)
	return 0, true
}

// Block makes the user block the bot (or close their DMs): messages and
// typing in the DM channel with that user answer 403 with code 50007
// "Cannot send messages to this user".
func (s *faultInjector) Block(userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[userID] = true
}

// Unblock undoes Block.
func (s *faultInjector) Unblock(userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.blocked, userID)
}

// apiError is Discord's JSON error body.
type apiError struct {
	Message string          `json:"message"`
	Code    int             `json:"code"`
	Errors  json.RawMessage `json:"errors,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e apiError) {
	writeJSON(w, status, e)
}

func unauthorized() apiError   { return apiError{Message: "401: Unauthorized"} }
func notFound() apiError       { return apiError{Message: "404: Not Found"} }
func unknownChannel() apiError { return apiError{Message: "Unknown Channel", Code: codeUnknownChannel} }
func cannotSend() apiError {
	return apiError{Message: "Cannot send messages to this user", Code: codeCannotSendToUser}
}

// invalidField is 50035 "Invalid Form Body" with Discord's nested errors
// object naming the field.
func invalidField(field, code, message string) apiError {
	errs, _ := json.Marshal(map[string]any{
		field: map[string]any{"_errors": []map[string]string{{"code": code, "message": message}}},
	})
	return apiError{Message: "Invalid Form Body", Code: codeInvalidFormBody, Errors: errs}
}

// writeFault answers with a scheduled fault.
func writeFault(w http.ResponseWriter, route string, f fault) {
	if f.retryAfter <= 0 {
		writeError(w, f.status, apiError{Message: f.message, Code: f.code})
		return
	}
	writeRateLimit(w, route, 5, f.retryAfter)
}

// writeRateLimit answers 429 as Discord does for a route's bucket of
// limit requests, free again after retryAfter.
func writeRateLimit(w http.ResponseWriter, route string, limit int, retryAfter time.Duration) {
	secs := retryAfter.Seconds()
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", "0")
	// Real time, not WithNow's clock: clients compare it with their own.
	reset := float64(time.Now().Add(retryAfter).UnixMilli()) / 1000
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(reset, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", fmt.Sprintf("fake-%x", route))
	h.Set("X-RateLimit-Scope", "user")
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"message":     "You are being rate limited.",
		"retry_after": secs,
		"global":      false,
	})
}

// HoldAnswers makes calls of route (e.g. "messages"), from now on, act
// (the message is created) and then hold their answer until
// ReleaseAnswers or until the client goes away, which then never hears
// of it: a bot killed in that window does not know its message exists.
func (s *faultInjector) HoldAnswers(route string) { s.holds.Hold(route) }

// ReleaseAnswers answers the held calls of route and holds no more.
func (s *faultInjector) ReleaseAnswers(route string) { s.holds.Release(route) }

// WaitHeld waits until n calls of route have had their answer held.
func (s *faultInjector) WaitHeld(t testing.TB, route string, n int, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, func() bool { return s.holds.Held(route) >= n },
		func() string { return fmt.Sprintf("%d held answers of %s, got %d", n, route, s.holds.Held(route)) })
}
