package slacktest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// eventsAPI delivers events by HTTP POST to the app's request URL, and
// posts signed requests for tests.
type eventsAPI struct {
	*state
	*delivery
}

const (
	// httpAttemptTimeout is how long Slack waits for an answer to one
	// Events API request before it counts as a timeout.
	httpAttemptTimeout = 3 * time.Second
	// maxResponse bounds the answer body the fake reads.
	maxResponse = 1 << 20
)

// httpItem is one Events API delivery waiting for the worker.
type httpItem struct {
	ev       *event
	retryNum int    // X-Slack-Retry-Num, 0 for a first delivery
	reason   string // X-Slack-Retry-Reason of a retry
}

// UseEventsAPI switches event delivery from Socket Mode to HTTP POSTs to
// url, signed with the signing secret. Events waiting for a socket move
// to url; live socket connections stay open but get no more events. It
// may be called again to change the URL; there is no way back to Socket
// Mode.
func (s *eventsAPI) UseEventsAPI(url string) {
	if url == "" {
		panic("slacktest: UseEventsAPI needs a URL")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventsURL = url
	pending := s.pending
	s.pending = nil
	for _, env := range pending {
		if env.auto && env.ev.acked {
			continue
		}
		s.deliverLocked(env.ev, env.attempt, env.auto)
	}
	wake(s.httpWake)
}

// httpWorker delivers Events API requests one at a time, in order, until
// the server closes.
func (s *eventsAPI) httpWorker() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.httpWake:
		}
		for s.deliverHTTPOne() {
		}
	}
}

// deliverHTTPOne delivers the head of the queue, with its retries; it
// reports whether there may be more to do.
func (s *eventsAPI) deliverHTTPOne() bool {
	s.mu.Lock()
	if len(s.httpQueue) == 0 || s.closed {
		s.mu.Unlock()
		return false
	}
	it := s.httpQueue[0]
	s.httpQueue = s.httpQueue[1:]
	target := s.eventsURL
	s.mu.Unlock()

	retryNum, reason := it.retryNum, it.reason
	for auto := 0; ; auto++ {
		ok, why := s.postOnce(target, it.ev.body, retryNum, reason)
		s.mu.Lock()
		it.ev.deliveries++
		if ok {
			it.ev.acked = true
		}
		retry := !ok && auto < maxAutoRetries
		if retry {
			it.ev.retries++
			retryNum, reason = it.ev.retries, why
		}
		s.notify()
		s.mu.Unlock()
		if !retry {
			return true
		}
		timer := time.NewTimer(s.retryDelay)
		select {
		case <-s.done:
			timer.Stop()
			return false
		case <-timer.C:
		}
	}
}

// postOnce makes one delivery attempt. It reports whether the app
// acknowledged it (a 2xx answer) and, if not, the retry reason.
func (s *eventsAPI) postOnce(target string, body []byte, retryNum int, reason string) (bool, string) {
	ctx, cancel := context.WithTimeout(s.ctx, httpAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return false, "http_error"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	if retryNum > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retryNum))
		req.Header.Set("X-Slack-Retry-Reason", reason)
	}
	SignRequest(req, body, s.signingSecret, time.Now())
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return false, "http_timeout"
		}
		return false, "http_error"
	}
	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	if errors.Is(err, context.DeadlineExceeded) {
		return false, "http_timeout"
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return false, "http_error"
	}
	return true, ""
}

// SignRequest sets X-Slack-Request-Timestamp (at, in Unix seconds) and
// X-Slack-Signature ("v0=" and the hex HMAC-SHA256 of "v0:<ts>:<body>"
// keyed with secret), as Slack signs Events API requests.
func SignRequest(req *http.Request, body []byte, secret string, at time.Time) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	_, _ = mac.Write([]byte("v0:" + ts + ":"))
	_, _ = mac.Write(body)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}

// PostEvent POSTs body to url as Slack would: Content-Type
// application/json, signed with the server's secret at the current time
// unless header already has X-Slack-Signature. Every header in header is
// copied over the defaults. It returns the answer's status and body (at
// most 1 MiB). It is not an event delivery: Acked and Deliveries do not
// see it.
func (s *eventsAPI) PostEvent(ctx context.Context, url string, body []byte, header http.Header) (status int, respBody []byte, err error) {
	return s.postSigned(ctx, url, "application/json", "event", body, header)
}

// postSigned POSTs body as Slack does, signed unless header already has
// X-Slack-Signature, with header copied over the defaults; what names the
// request in errors.
func (s *state) postSigned(ctx context.Context, url, contentType, what string, body []byte, header http.Header) (status int, respBody []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("building %s request: %w", what, err)
	}
	req.Header.Set("Content-Type", contentType)
	for k, vs := range header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("X-Slack-Signature") == "" {
		SignRequest(req, body, s.signingSecret, time.Now())
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("posting %s: %w", what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	respBody, err = io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return resp.StatusCode, respBody, fmt.Errorf("reading %s answer: %w", what, err)
	}
	return resp.StatusCode, respBody, nil
}

// VerifyURL does Slack's URL verification of an Events API endpoint: it
// POSTs a signed url_verification with a random challenge and checks that
// the answer is a 2xx echoing it, as plain text or as JSON
// {"challenge":…}.
func (s *eventsAPI) VerifyURL(ctx context.Context, url string) error {
	challenge := randomHex(16)
	body := mustJSON(map[string]string{
		"token":     verificationToken,
		"challenge": challenge,
		"type":      "url_verification",
	})
	status, resp, err := s.PostEvent(ctx, url, body, nil)
	if err != nil {
		return fmt.Errorf("url verification: %w", err)
	}
	if status < 200 || status > 299 {
		return fmt.Errorf("url verification: answer status %d", status)
	}
	if strings.TrimSpace(string(resp)) == challenge {
		return nil
	}
	var echo struct {
		Challenge string `json:"challenge"`
	}
	if json.Unmarshal(resp, &echo) == nil && echo.Challenge == challenge {
		return nil
	}
	const show = 100
	got := string(resp)
	if len(got) > show {
		got = got[:show] + "…"
	}
	return fmt.Errorf("url verification: answer %q does not echo the challenge", got)
}
