package slacktest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// faultInjector is how tests make the fake fail: rate limits, errors,
// refused markup, revoked tokens and blocked users.
type faultInjector struct{ *state }

// fault is one scheduled failure of a Web API method.
type fault struct {
	// pass is how many calls still succeed before this fault fires
	// (RateLimitAfter).
	pass       int
	retryAfter time.Duration // > 0: a rate limit
	code       string        // an {"ok":false} error code
	status     int           // an HTTP error status with an HTML body
}

// RateLimitNext makes the next call of method answer like Slack's rate
// limiter: HTTP 429, Retry-After in whole seconds (rounded up, at least 1)
// and {"ok":false,"error":"ratelimited"}. slack-go returns it as a
// *slack.RateLimitedError. Faults of one method form a queue in the order
// they were scheduled.
func (s *faultInjector) RateLimitNext(method string, retryAfter time.Duration) {
	s.RateLimitAfter(method, 0, retryAfter)
}

// RateLimitAfter lets n calls of method succeed, then rate-limits one as
// RateLimitNext does (for a split reply whose later part is limited). The
// n calls count from when the faults queued before it have fired.
func (s *faultInjector) RateLimitAfter(method string, n int, retryAfter time.Duration) {
	if retryAfter <= 0 {
		retryAfter = time.Second
	}
	s.addFault(method, &fault{pass: n, retryAfter: retryAfter})
}

// FailNext makes the next call of method answer HTTP 200
// {"ok":false,"error":code}, e.g. "invalid_auth", "channel_not_found" or
// "internal_error". slack-go returns it as a slack.SlackErrorResponse.
func (s *faultInjector) FailNext(method string, code string) {
	s.addFault(method, &fault{code: code})
}

// FailNextStatus makes the next call of method answer the HTTP status
// with an HTML body, as Slack's front end does on 5xx. slack-go returns it
// as a slack.StatusCodeError.
func (s *faultInjector) FailNextStatus(method string, status int) {
	s.addFault(method, &fault{status: status})
}

// RefuseNextMarkup makes the next chat.postMessage in mrkdwn fail as if
// Slack had refused its markup: a post with blocks answers invalid_blocks,
// one with text only invalid_arguments, each with response_metadata
// naming the JSON pointer of the refused text ("/blocks/0/text",
// "/text"). A post with mrkdwn off and no mrkdwn section (the plain text
// a bot sends instead) is not refused and does not count. Refusals form a
// queue, as FailNext's do.
func (s *faultInjector) RefuseNextMarkup() { s.RefuseMarkupAfter(0) }

// RefuseMarkupAfter lets n posts in mrkdwn through, then refuses one as
// RefuseNextMarkup does (for a split reply whose later part is refused).
func (s *faultInjector) RefuseMarkupAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markupFaults = append(s.markupFaults, n)
}

// refuseMarkup consumes a post in mrkdwn from the refusal queue; when it
// is refused it returns the error code and the JSON pointer to name.
func (s *chatAPI) refuseMarkup(p params) (code, pointer string) {
	pointer = "/text"
	formatted := p["mrkdwn"] != "false"
	if nonEmptyJSONList(p["blocks"]) {
		blocks, bad := readBlocks(p["blocks"])
		if bad != "" {
			return "", "" // the post fails as it is
		}
		formatted = false
		for i, b := range blocks {
			if b.Type == "section" && b.TextType == "mrkdwn" {
				formatted, pointer = true, fmt.Sprintf("/blocks/%d/text", i)
				break
			}
		}
	}
	if !formatted {
		return "", ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.markupFaults) == 0 {
		return "", ""
	}
	if s.markupFaults[0] > 0 {
		s.markupFaults[0]--
		return "", ""
	}
	s.markupFaults = s.markupFaults[1:]
	if strings.HasPrefix(pointer, "/blocks/") {
		return "invalid_blocks", pointer
	}
	return "invalid_arguments", pointer
}

func (s *state) addFault(method string, f *fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], f)
}

// takeFault consumes one call from the method's fault queue and returns
// the fault to answer with, if any.
func (s *state) takeFault(method string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[method]
	if len(q) == 0 {
		return nil
	}
	if q[0].pass > 0 {
		q[0].pass--
		return nil
	}
	s.faults[method] = q[1:]
	if q[0].retryAfter > 0 {
		s.rateLimited++
	}
	return q[0]
}

// RateLimited returns how many requests the fake answered 429, those of
// RateLimitNext and RateLimitAfter and those over WithChannelRateLimit.
func (s *faultInjector) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateLimited
}

// admit takes one post for the channel chat.postMessage names from
// WithChannelRateLimit's bucket; when the bucket is empty it counts a 429
// and returns the fault to answer with. Integer durations keep the edge
// exact: a post at the very instant a slot frees is admitted.
func (s *chatAPI) admit(channel string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A post to a user id goes into the DM with them, whose limit it
	// shares (opened or not yet). Unknown channels are limited too; the
	// post fails afterwards as it would.
	if u, ok := s.dmUser[channel]; ok {
		channel = u
	}
	now := s.now()
	if wait := s.chanLimit.Wait(channel, now); wait > 0 {
		s.rateLimited++
		s.notify()
		return &fault{retryAfter: wait}
	}
	s.chanLimit.Take(channel, now)
	return nil
}

// writeFault answers with a scheduled fault.
func writeFault(w http.ResponseWriter, f *fault) {
	switch {
	case f.retryAfter > 0:
		secs := max(1, int(math.Ceil(f.retryAfter.Seconds())))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
	case f.status != 0:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(f.status)
		_, _ = fmt.Fprintf(w, "<html><body><h1>%d %s</h1></body></html>\n", f.status, http.StatusText(f.status))
	default:
		writeError(w, f.code)
	}
}

// RevokeTokens revokes both tokens: every later Web API call with either
// answers token_revoked, socket tickets stop working and live socket
// connections are closed (slack-go's Socket Mode client then fails to
// reconnect and its Run returns the token_revoked error).
func (s *faultInjector) RevokeTokens() {
	s.mu.Lock()
	s.revoked = true
	clear(s.tickets)
	conns := s.connsLocked()
	for _, c := range conns {
		c.routable = false
	}
	s.notify()
	s.mu.Unlock()
	for _, c := range conns {
		msg := websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "token revoked")
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(writeTimeout))
		_ = c.ws.UnderlyingConn().Close()
	}
}

// Block makes posts to the DM with userID fail with is_archived and
// conversations.open with the user fail with user_disabled, as when the
// user was deactivated.
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

// DropSockets closes every socket connection abruptly, without a close
// frame, as a network failure would. Envelopes not yet acked on them go
// out again (retry_attempt +1) on the next connection.
func (s *socketMode) DropSockets() {
	s.mu.Lock()
	conns := s.connsLocked()
	for _, c := range conns {
		c.routable = false
	}
	s.notify()
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.UnderlyingConn().Close()
	}
}

// Disconnect sends {"type":"disconnect","reason":reason} on every live
// socket connection, as Slack does before it recycles one ("warning",
// "refresh_requested"); slack-go then reconnects. Those connections get
// no new envelopes; the ones not acked on them go out again once the
// client closes them.
func (s *socketMode) Disconnect(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	frame := mustJSON(map[string]any{
		"type":       "disconnect",
		"reason":     reason,
		"debug_info": map[string]any{"host": "fake"},
	})
	for c := range s.conns {
		if c.routable {
			c.routable = false
			c.enqueueLocked(frame)
		}
	}
	s.notify()
}
