// Package coretest has in-memory helpers for testing code built on core: an
// Adapter that records what the bot sends, and a controllable clock.
package coretest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// Sent is one message the bot sent through an Adapter.
type Sent struct {
	ChannelThreadID string
	Text            string
	IdempotencyKey  string
	// Files are the files sent with Text as their caption (SendFiles).
	Files []core.OutboundFile
}

// Adapter is an in-memory core.Adapter: Deliver plays a user's DM, and every
// message the bot sends is recorded. SendErr, when set, fails sends.
type Adapter struct {
	PlatformName core.Platform
	MaxLength    int
	// IdempotencyWindow, when set, makes the adapter drop a send whose
	// idempotency key it has seen (however long ago), answering with the
	// first send's ids, as Discord's nonce does, and report the window
	// (core.Capabilities.IdempotencyWindow).
	IdempotencyWindow time.Duration

	mu      sync.Mutex
	h       core.InboundHandler
	sent    []Sent
	typing  int
	next    int
	sendErr error
	changed chan struct{}
	byKey   map[string]core.SendResult
}

var (
	_ core.Adapter         = (*Adapter)(nil)
	_ core.TypingIndicator = (*Adapter)(nil)
	_ core.FileSender      = (*Adapter)(nil)
)

// NewAdapter returns an adapter for platform p.
func NewAdapter(p core.Platform) *Adapter {
	return &Adapter{PlatformName: p, MaxLength: 4096, changed: make(chan struct{})}
}

// Name is the platform name.
func (a *Adapter) Name() string { return string(a.PlatformName) }

// Platform is the platform the adapter serves.
func (a *Adapter) Platform() core.Platform { return a.PlatformName }

// Capabilities reports MaxLength, typing and IdempotencyWindow.
func (a *Adapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: a.MaxLength, Markup: "plain", Typing: true, IdempotencyWindow: a.IdempotencyWindow}
}

// Start keeps the handler for Deliver.
func (a *Adapter) Start(_ context.Context, h core.Host) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.h = h
	return nil
}

// Stop forgets the handler.
func (a *Adapter) Stop(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.h = nil
	return nil
}

// FailSends makes every later Send fail with err (nil restores success).
func (a *Adapter) FailSends(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sendErr = err
}

// Send records the message, split at MaxLength, and returns part ids.
func (a *Adapter) Send(_ context.Context, m core.OutboundMessage) (core.SendResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sendErr != nil {
		return core.SendResult{}, a.sendErr
	}
	if res, ok := a.byKey[m.IdempotencyKey]; ok && a.IdempotencyWindow > 0 {
		return res, nil
	}
	var res core.SendResult
	for _, part := range textsplit.Split(m.Text, a.MaxLength) {
		a.next++
		a.sent = append(a.sent, Sent{ChannelThreadID: m.ChannelThreadID, Text: part, IdempotencyKey: m.IdempotencyKey})
		res.PlatformMessageIDs = append(res.PlatformMessageIDs, fmt.Sprintf("%s-%d", a.PlatformName, a.next))
	}
	if a.IdempotencyWindow > 0 && m.IdempotencyKey != "" {
		if a.byKey == nil {
			a.byKey = map[string]core.SendResult{}
		}
		a.byKey[m.IdempotencyKey] = res
	}
	a.notify()
	return res, nil
}

// SendFiles records msg's files with its text as their caption, as one
// message (core.FileSender).
func (a *Adapter) SendFiles(_ context.Context, m core.OutboundMessage) (core.SendResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sendErr != nil {
		return core.SendResult{}, a.sendErr
	}
	a.next++
	a.sent = append(a.sent, Sent{ChannelThreadID: m.ChannelThreadID, Text: m.Text, IdempotencyKey: m.IdempotencyKey, Files: m.Files})
	a.notify()
	return core.SendResult{PlatformMessageIDs: []string{fmt.Sprintf("%s-%d", a.PlatformName, a.next)}}, nil
}

// Typing counts typing indications.
func (a *Adapter) Typing(context.Context, string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.typing++
	return nil
}

// Deliver plays a DM from a user into the core, as the platform would.
func (a *Adapter) Deliver(ctx context.Context, threadID, text string) error {
	a.mu.Lock()
	h := a.h
	a.next++
	id := fmt.Sprintf("in-%d", a.next)
	a.mu.Unlock()
	if h == nil {
		return fmt.Errorf("coretest adapter %s is not started", a.PlatformName)
	}
	return h.HandleInbound(ctx, core.InboundMessage{
		Platform:          a.PlatformName,
		ChannelThreadID:   threadID,
		ChannelUserID:     threadID,
		DisplayName:       "User " + threadID,
		Text:              text,
		PlatformMessageID: id,
		SentAt:            time.Now(),
		Direct:            true,
	})
}

// Sent returns everything sent so far.
func (a *Adapter) Sent() []Sent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Sent(nil), a.sent...)
}

// TypingCount is how many typing indications were shown.
func (a *Adapter) TypingCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.typing
}

// WaitSent waits until at least n messages were sent, failing t after
// timeout, and returns them.
func (a *Adapter) WaitSent(t testing.TB, n int, timeout time.Duration) []Sent {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		if len(a.sent) >= n {
			out := append([]Sent(nil), a.sent...)
			a.mu.Unlock()
			return out
		}
		ch := a.changed
		a.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("coretest: waited %v for %d sent messages, got %d: %+v", timeout, n, len(a.Sent()), a.Sent())
			return nil
		}
	}
}

// notify wakes waiters; a.mu must be held.
func (a *Adapter) notify() {
	close(a.changed)
	a.changed = make(chan struct{})
}
