package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"

	"github.com/parleybot/parley/core"
)

// maxUpdatesBody bounds one getUpdates answer (at most 100 updates).
const maxUpdatesBody = 32 << 20

// apiError is a Bot API error answer to the adapter's own requests.
type apiError struct {
	method     string
	code       int
	desc       string
	retryAfter int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %d %s", e.method, e.code, e.desc)
}

// poll is the getUpdates loop. It hands each update to the core in order
// and confirms it (by asking for the next offset) only once handled, so
// updates not yet handled when the adapter stops come again after a
// restart. It backs off after a failed request.
func (a *Adapter) poll(ctx context.Context) {
	defer a.wg.Done()
	var offset int64
	var backoff time.Duration
	for {
		if backoff > 0 && !a.sleep(ctx, backoff) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		raws, err := a.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = a.nextPollBackoff(backoff, err)
			a.pollFailed(err, backoff)
			continue
		}
		a.pollSucceeded()
		backoff = 0
		before := offset
		var retry error
		for _, raw := range raws {
			id, ok, err := a.handleRaw(ctx, raw)
			if ctx.Err() != nil {
				return // not confirmed: Telegram sends it again next time
			}
			if err != nil {
				// Confirming a later update would confirm this one too.
				retry = err
				break
			}
			if ok && id >= offset {
				offset = id + 1
			}
		}
		if retry != nil {
			backoff = a.nextPollBackoff(backoff, retry)
			a.log.Warn("the core did not take a telegram update; it will be fetched again", "retry_in", backoff, "err", retry)
			continue
		}
		if len(raws) > 0 && offset == before {
			// Nothing could be confirmed; asking again would get the same
			// batch at once.
			err := fmt.Errorf("getUpdates: %d updates without a usable update_id", len(raws))
			backoff = a.nextPollBackoff(backoff, err)
			a.pollFailed(err, backoff)
		}
	}
}

// getUpdates asks for the updates from offset on, waiting up to
// PollTimeout for one to arrive. Each update is returned undecoded so that
// one the adapter cannot read does not hide the others.
func (a *Adapter) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	fields := [][2]string{
		{"timeout", strconv.Itoa(int(a.PollTimeout / time.Second))},
		{"allowed_updates", `["message"]`},
	}
	if offset > 0 {
		fields = append(fields, [2]string{"offset", strconv.FormatInt(offset, 10)})
	}
	for _, f := range fields {
		if err := form.WriteField(f[0], f[1]); err != nil {
			return nil, fmt.Errorf("getUpdates: building the request: %w", err)
		}
	}
	if err := form.Close(); err != nil {
		return nil, fmt.Errorf("getUpdates: building the request: %w", err)
	}
	u := a.apiURL() + "/bot" + a.Token.Reveal() + "/getUpdates"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, &body)
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", a.scrub(err))
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", a.scrub(err))
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUpdatesBody))
	if err != nil {
		return nil, fmt.Errorf("getUpdates: reading the answer: %w", a.scrub(err))
	}
	var r struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("getUpdates: HTTP %d with an answer that is not Bot API JSON", resp.StatusCode)
	}
	if !r.OK {
		code := r.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return nil, &apiError{method: "getUpdates", code: code, desc: r.Description, retryAfter: r.Parameters.RetryAfter}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(r.Result, &raws); err != nil {
		return nil, fmt.Errorf("getUpdates: the result is not a list of updates: %w", err)
	}
	return raws, nil
}

// nextPollBackoff doubles the wait after a failed poll, from pollBackoffMin
// up to pollBackoffMax, and waits at least as long as a 429 asks.
func (a *Adapter) nextPollBackoff(prev time.Duration, err error) time.Duration {
	next := min(max(prev*2, a.pollBackoffMin), a.pollBackoffMax)
	if ae, ok := err.(*apiError); ok && ae.retryAfter > 0 {
		next = max(next, time.Duration(ae.retryAfter)*time.Second)
	}
	return next
}

// pollFailed records a failed getUpdates for Health and logs it.
func (a *Adapter) pollFailed(err error, retryIn time.Duration) {
	a.healthMu.Lock()
	a.pollFailures++
	n := a.pollFailures
	a.pollLastErr = a.scrub(err).Error()
	a.healthMu.Unlock()
	a.log.Warn("polling telegram failed", "err", a.scrub(err), "failures_in_a_row", n, "retry_in", retryIn)
}

// pollSucceeded records a good getUpdates for Health.
func (a *Adapter) pollSucceeded() {
	a.healthMu.Lock()
	recovered := a.pollFailures >= a.unhealthyAfter
	a.pollFailures, a.pollLastErr = 0, ""
	a.healthMu.Unlock()
	if recovered {
		a.log.Info("polling telegram works again")
	}
}

// sleep waits d on the adapter's clock; false when ctx ended first.
func (a *Adapter) sleep(ctx context.Context, d time.Duration) bool {
	return core.Sleep(ctx, a.clock, d)
}
