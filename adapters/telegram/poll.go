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
	"sync"
	"time"

	"github.com/parleybot/parley/internal/backoff"
)

// maxUpdatesBody bounds one getUpdates answer (at most 100 updates).
const maxUpdatesBody = 32 << 20

// allowedUpdatesJSON is allowedUpdates as getUpdates takes it.
var allowedUpdatesJSON = func() string {
	b, err := json.Marshal(allowedUpdates)
	if err != nil {
		panic(err) // a list of strings always encodes
	}
	return string(b)
}()

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

// poller is the getUpdates loop of polling mode, with the failures Health
// reports.
type poller struct {
	*state
	*inbound
}

// poll is the getUpdates loop. It hands each chat's updates to the core in
// order (handleBatch) and confirms them (by asking for the next offset) only
// once handled, so updates not yet handled when the adapter stops come
// again after a restart. It backs off after a failed request.
func (p *poller) poll(ctx context.Context) {
	defer p.wg.Done()
	var offset int64
	var backoff time.Duration
	for {
		if backoff > 0 && !p.sleep(ctx, backoff) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		raws, err := p.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = p.nextPollBackoff(backoff, err)
			p.pollFailed(err, backoff)
			continue
		}
		p.pollSucceeded()
		backoff = 0
		before := offset
		var retry error
		offset, retry = p.handleBatch(ctx, raws, offset)
		if ctx.Err() != nil {
			return // not confirmed: Telegram sends them again next time
		}
		if retry != nil {
			backoff = p.nextPollBackoff(backoff, retry)
			p.log.Warn("the core did not take a telegram update; it will be fetched again", "retry_in", backoff, "err", retry)
			continue
		}
		if len(raws) > 0 && offset == before {
			// Nothing could be confirmed; asking again would get the same
			// batch at once.
			err := fmt.Errorf("getUpdates: %d updates without a usable update_id", len(raws))
			backoff = p.nextPollBackoff(backoff, err)
			p.pollFailed(err, backoff)
		}
	}
}

// handleBatch hands a batch of updates to the core and returns the offset
// that confirms the ones it took, and the error of the first it could not
// take. Each chat's updates are handed over one after the other, in order;
// different chats' side by side, so that their messages are stored at
// once (on SQLite in one shared write transaction) rather than one write
// after another behind this loop, which was the bot's serial bottleneck. A
// chat stops at its first failure, so none of its later messages is stored
// ahead of it. Nothing from the first failure on is confirmed: those
// updates come again, and the ones another chat's lane already stored are
// known by their message id and not stored twice.
func (p *poller) handleBatch(ctx context.Context, raws []json.RawMessage, offset int64) (int64, error) {
	updates := make([]update, len(raws))
	lanes := map[int64][]int{}
	var chats []int64
	for i, raw := range raws {
		updates[i] = p.decodeRaw(raw)
		c := updates[i].chat()
		if _, seen := lanes[c]; !seen {
			chats = append(chats, c)
		}
		lanes[c] = append(lanes[c], i)
	}
	// handled[i] is set once update i is through, errs[i] if the core
	// refused it.
	handled := make([]bool, len(updates))
	errs := make([]error, len(updates))
	lane := func(idx []int) {
		for _, i := range idx {
			if u := updates[i]; u.upd != nil {
				errs[i] = p.handleUpdate(ctx, u.upd)
			}
			if errs[i] != nil || ctx.Err() != nil {
				return
			}
			handled[i] = true
		}
	}
	if len(chats) == 1 {
		lane(lanes[chats[0]])
	} else {
		var wg sync.WaitGroup
		for _, c := range chats {
			wg.Go(func() { lane(lanes[c]) })
		}
		wg.Wait()
	}
	for i, u := range updates {
		if errs[i] != nil {
			// Confirming a later update would confirm this one too.
			return offset, errs[i]
		}
		if !handled[i] {
			return offset, nil // cut short by ctx: not confirmed
		}
		if u.ok && u.id >= offset {
			offset = u.id + 1
		}
	}
	return offset, nil
}

// getUpdates asks for the updates from offset on, waiting up to
// PollTimeout for one to arrive. Each update is returned undecoded so that
// one the adapter cannot read does not hide the others.
func (p *poller) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	fields := [][2]string{
		{"timeout", strconv.Itoa(int(p.cfg.PollTimeout / time.Second))},
		{"allowed_updates", allowedUpdatesJSON},
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
	// The client's Timeout as the request's deadline: net/http watches a
	// client Timeout with two goroutines of its own for as long as the
	// long poll waits, a context deadline with a timer.
	client := *p.client
	if client.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, client.Timeout)
		defer cancel()
		client.Timeout = 0
	}
	u := p.apiURL() + "/bot" + p.cfg.Token.Reveal() + "/getUpdates"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, &body)
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", p.scrub(err))
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", p.scrub(err))
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUpdatesBody))
	if err != nil {
		return nil, fmt.Errorf("getUpdates: reading the answer: %w", p.scrub(err))
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
func (p *poller) nextPollBackoff(prev time.Duration, err error) time.Duration {
	next := backoff.Policy{Initial: p.pollBackoffMin, Max: p.pollBackoffMax}.Next(prev)
	if ae, ok := err.(*apiError); ok && ae.retryAfter > 0 {
		next = max(next, time.Duration(ae.retryAfter)*time.Second)
	}
	return next
}

// pollFailed records a failed getUpdates for Health and logs it.
func (p *poller) pollFailed(err error, retryIn time.Duration) {
	p.healthMu.Lock()
	p.pollFailures++
	n := p.pollFailures
	p.pollLastErr = p.scrub(err).Error()
	p.healthMu.Unlock()
	p.log.Warn("polling telegram failed", "err", p.scrub(err), "failures_in_a_row", n, "retry_in", retryIn)
}

// pollSucceeded records a good getUpdates for Health.
func (p *poller) pollSucceeded() {
	p.healthMu.Lock()
	recovered := p.pollFailures >= p.unhealthyAfter
	p.pollFailures, p.pollLastErr = 0, ""
	p.healthMu.Unlock()
	if recovered {
		p.log.Info("polling telegram works again")
	}
}
