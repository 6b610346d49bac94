package telegramtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-telegram/bot/models"
)

const (
	// webhookAttempts is how many times one update is POSTed before the
	// fake gives up on it (Telegram keeps trying far longer).
	webhookAttempts = 4
	// webhookBackoff is the first pause between attempts; it doubles.
	webhookBackoff = 20 * time.Millisecond
	// webhookTimeout bounds one delivery attempt.
	webhookTimeout = 5 * time.Second
)

// webhookDelivery registers the webhook (setWebhook and its kin) and
// POSTs the updates to it.
type webhookDelivery struct{ *state }

// Webhook returns the URL and secret token setWebhook set, "" if none.
func (s *webhookDelivery) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhookURL, s.webhookSecret
}

// setWebhook stores the webhook; updates still pending move to it unless
// drop_pending_updates is set. An empty url removes the webhook.
func (s *webhookDelivery) setWebhook(_ context.Context, p params) (any, *Fault) {
	raw := p["url"]
	if raw == "" {
		return s.deleteWebhook(context.Background(), p)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		f := badRequest("bad webhook: invalid webhook URL specified")
		return nil, &f
	}
	secret := p["secret_token"]
	if len(secret) > 256 || !validSecret(secret) {
		f := badRequest("bad webhook: secret token contains unallowed characters")
		return nil, &f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.setAllowed(p); f != nil {
		return nil, f
	}
	s.webhookURL, s.webhookSecret = raw, secret
	if p.bool("drop_pending_updates") {
		s.pending = nil
		s.whQueue = s.inflightOnly()
	} else {
		s.whQueue = append(s.whQueue, s.pending...)
		s.pending = nil
	}
	s.wakeDelivery()
	s.notify()
	return true, nil
}

// deleteWebhook removes the webhook; updates not yet delivered go back to
// getUpdates unless drop_pending_updates is set.
func (s *webhookDelivery) deleteWebhook(_ context.Context, p params) (any, *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookURL, s.webhookSecret = "", ""
	var back []queuedUpdate
	for _, q := range s.whQueue {
		if q.id != s.whInflight {
			back = append(back, q)
		}
	}
	s.whQueue = s.inflightOnly()
	if p.bool("drop_pending_updates") {
		s.pending = nil
	} else {
		s.pending = append(back, s.pending...)
	}
	s.notify()
	return true, nil
}

// inflightOnly is the webhook queue cut to the update being delivered, so
// the delivery loop finds it. Callers hold s.mu.
func (s *webhookDelivery) inflightOnly() []queuedUpdate {
	if len(s.whQueue) > 0 && s.whInflight != 0 && s.whQueue[0].id == s.whInflight {
		return s.whQueue[:1:1]
	}
	return nil
}

func (s *webhookDelivery) getWebhookInfo(context.Context, params) (any, *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := models.WebhookInfo{URL: s.webhookURL, PendingUpdateCount: len(s.pending) + len(s.whQueue)}
	if s.webhookURL != "" {
		info.MaxConnections = 40
		if s.whLastErr != "" {
			info.LastErrorDate = int(s.whLastErrAt.Unix())
			info.LastErrorMessage = s.whLastErr
		}
	}
	return info, nil
}

func validSecret(secret string) bool {
	for _, c := range secret {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// wakeDelivery nudges the delivery loop without blocking.
func (s *state) wakeDelivery() {
	select {
	case s.whWake <- struct{}{}:
	default:
	}
}

// deliverLoop POSTs webhook updates one at a time, in order, until close.
func (s *webhookDelivery) deliverLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.whWake:
		}
		for s.deliverOne() {
		}
	}
}

// deliverOne delivers the head of the webhook queue; it reports whether
// there may be more to do.
func (s *webhookDelivery) deliverOne() bool {
	s.mu.Lock()
	if s.webhookURL == "" || len(s.whQueue) == 0 {
		s.mu.Unlock()
		return false
	}
	q := s.whQueue[0]
	target, secret := s.webhookURL, s.webhookSecret
	s.whInflight = q.id
	s.mu.Unlock()

	err := s.post(q.raw, target, secret)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.whInflight = 0
	if len(s.whQueue) > 0 && s.whQueue[0].id == q.id {
		s.whQueue = s.whQueue[1:]
	}
	if err != nil {
		s.whLastErr = err.Error()
		s.whLastErrAt = s.now()
	}
	s.notify()
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// post delivers one update, retrying with a doubling pause.
func (s *webhookDelivery) post(raw []byte, target, secret string) error {
	pause := webhookBackoff
	var err error
	for attempt := range webhookAttempts {
		if attempt > 0 {
			t := time.NewTimer(pause)
			select {
			case <-s.done:
				t.Stop()
				return fmt.Errorf("server closed: %w", err)
			case <-t.C:
			}
			pause *= 2
		}
		if err = s.postOnce(raw, target, secret); err == nil {
			return nil
		}
	}
	return err
}

func (s *webhookDelivery) postOnce(raw []byte, target, secret string) error {
	ctx, cancel := context.WithTimeout(s.ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("building webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := s.whClient.Do(req)
	if err != nil {
		return fmt.Errorf("posting webhook update: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("wrong response from the webhook: %s", resp.Status)
	}
	return nil
}
