// Package spool keeps inbound messages the store cannot take: for
// platforms that never deliver a message again (Discord's gateway, the web
// chat), a message that arrives while the database is down or locked goes
// to a local append-only file and is handed to the core, in order, once
// the store is back. The adapter's goroutine never waits on the store:
// messages are handed over from goroutines of the spool's own, one per
// conversation with messages in hand, so a conversation's messages stay
// in order and conversations do not wait for each other.
package spool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
)

// ErrFull is returned for a message that came while the spool is full:
// that message is lost, as it would have been without a spool.
var ErrFull = fmt.Errorf("the inbound spool is full: %w", core.ErrInboundLost)

// Defaults.
const (
	DefaultMaxBytes = 64 << 20
	// DefaultMaxQueued bounds the messages held in memory, waiting for
	// their conversation's earlier ones; more go to the file.
	DefaultMaxQueued = 10000
	// handTimeout bounds one hand-over to the core.
	handTimeout = 30 * time.Second
	// poisonAttempts is how often a spooled message is tried while the
	// store answers its probe before it is given up: the store is fine,
	// the message is not.
	poisonAttempts = 5
)

// Config configures a Spool.
type Config struct {
	// Dir is where the spool file lives (created if missing).
	Dir string
	// MaxBytes bounds the file (default DefaultMaxBytes).
	MaxBytes int64
	// MaxQueued bounds the messages held in memory (default
	// DefaultMaxQueued).
	MaxQueued int
	// Probe, when set, tells a store that is back from one that is not:
	// a spooled message that fails while it passes is given up after a
	// few tries instead of holding up the others for ever. Without it no
	// message is given up.
	Probe func(ctx context.Context) error
	// RetryMin and RetryMax bound the wait between tries of the oldest
	// spooled message (default 500ms and 5s).
	RetryMin, RetryMax time.Duration
	Logger             *slog.Logger
}

// Spool is a core.InboundHandler in front of the core's: HandleInbound
// returns at once, and the message reaches next from the spool's own
// goroutines, through the file while next fails.
type Spool struct {
	cfg  Config
	log  *slog.Logger
	next core.InboundHandler
	file *file

	mu sync.Mutex
	// queues hold, per conversation, the messages in memory; the
	// conversation's goroutine hands them over in order.
	queues map[string][]core.InboundMessage
	queued int
	// spooling: new messages go to the file, which is drained in order,
	// once no conversation's goroutine holds messages any more.
	spooling bool
	// full is set while a message could not be spooled.
	full     bool
	fullLog  time.Time
	cause    error
	stopping bool
	changed  chan struct{}
	active   sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
	drained  chan struct{}
}

// Open opens the spool in cfg.Dir, taking over what a process that died
// left there; nothing is handed to next before Start.
func Open(cfg Config, next core.InboundHandler) (*Spool, error) {
	if cfg.Dir == "" {
		return nil, errors.New("inbound spool: no directory")
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = 500 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f, err := openFile(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Spool{cfg: cfg, log: cfg.Logger, next: next, file: f, queues: map[string][]core.InboundMessage{},
		changed: make(chan struct{}, 1)}
	if f.pending() {
		s.spooling = true
		s.log.Warn("the inbound spool holds messages from before the last stop; they are handed to the core first",
			"path", f.path, "bytes", f.size-f.offset)
	}
	return s, nil
}

// Path is the spool file's path.
func (s *Spool) Path() string { return s.file.path }

// Start begins handing messages over, the spooled ones first.
func (s *Spool) Start(ctx context.Context) {
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.drained = make(chan struct{})
	go s.drain()
}

// Stop stops intake: it waits until ctx for the messages in hand to reach
// the core, spools what did not, and closes the file. Nothing held in
// memory is lost by a clean stop.
func (s *Spool) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	waited := make(chan struct{})
	go func() { s.active.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	if s.cancel != nil {
		s.cancel()
		<-s.drained
	}
	<-waited // a hand-over in flight ends with the cancel
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for key, q := range s.queues {
		for _, m := range q {
			if err := s.file.appendMsg(m, 0); err != nil {
				errs = append(errs, err)
			}
		}
		delete(s.queues, key)
	}
	errs = append(errs, s.file.close())
	return errors.Join(errs...)
}

// HandleInbound takes msg and returns without waiting on the store: an
// error means only that the spool is full (or stopped) and msg is lost.
func (s *Spool) HandleInbound(_ context.Context, msg core.InboundMessage) error {
	key := string(msg.Platform) + "\x00" + msg.ChannelThreadID
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[key]; ok {
		// Behind the conversation's earlier messages, in memory even
		// while spooling: they reach the file first.
		s.queues[key] = append(q, msg)
		s.queued++
		return nil
	}
	if s.stopping || s.ctx == nil || s.spooling || s.queued >= s.cfg.MaxQueued {
		switch {
		case s.ctx == nil || s.stopping:
			// Before Start or after Stop: kept for the drain.
			s.spooling = true
		case !s.spooling:
			s.startSpooling(errors.New("too many messages waiting for the store"))
		}
		return s.spoolLocked(msg)
	}
	s.queues[key] = []core.InboundMessage{msg}
	s.queued++
	s.active.Add(1)
	go s.handOver(key)
	return nil
}

// handOver hands a conversation's messages to next in order, until none
// is left or next fails; then what is left goes to the file.
func (s *Spool) handOver(key string) {
	defer s.active.Done()
	for {
		s.mu.Lock()
		q := s.queues[key]
		if len(q) == 0 {
			delete(s.queues, key)
			s.wake()
			s.mu.Unlock()
			return
		}
		if s.spooling && !s.stopping {
			s.spoolQueueLocked(key)
			s.mu.Unlock()
			return
		}
		if s.stopping && s.ctx.Err() != nil {
			s.mu.Unlock()
			return // Stop spools the rest
		}
		msg := q[0]
		s.mu.Unlock()

		err := s.hand(msg)

		s.mu.Lock()
		if err != nil && !s.stopping {
			s.startSpooling(err)
			s.spoolQueueLocked(key) // msg is still first
			s.mu.Unlock()
			return
		}
		if err != nil {
			s.mu.Unlock()
			return // Stop spools msg and the rest
		}
		s.queues[key] = s.queues[key][1:]
		s.queued--
		s.mu.Unlock()
	}
}

// hand gives one message to the core.
func (s *Spool) hand(msg core.InboundMessage) error {
	ctx, cancel := context.WithTimeout(s.ctx, handTimeout)
	defer cancel()
	return s.next.HandleInbound(ctx, msg)
}

// spoolQueueLocked moves a conversation's queue to the file, in order.
func (s *Spool) spoolQueueLocked(key string) {
	for _, m := range s.queues[key] {
		_ = s.spoolLocked(m) // a loss is logged there
		s.queued--
	}
	delete(s.queues, key)
	s.wake()
}

// spoolLocked appends msg to the file.
func (s *Spool) spoolLocked(msg core.InboundMessage) error {
	err := s.file.appendMsg(msg, s.cfg.MaxBytes)
	if err == nil {
		s.full = false
		s.wake()
		return nil
	}
	s.full = errors.Is(err, ErrFull)
	if now := time.Now(); now.Sub(s.fullLog) > time.Minute {
		s.fullLog = now
		s.log.Error("an inbound message could not be spooled and is lost; the store is not taking messages and the spool cannot hold more",
			"path", s.file.path, "max_bytes", s.cfg.MaxBytes, "platform", msg.Platform, "thread", msg.ChannelThreadID, "err", err)
	}
	if s.full {
		return fmt.Errorf("%w (%s, %d bytes): the store has not taken messages since: %v", ErrFull, s.file.path, s.cfg.MaxBytes, s.cause)
	}
	return err
}

func (s *Spool) startSpooling(cause error) {
	if s.spooling {
		return
	}
	s.spooling, s.cause = true, cause
	s.log.Warn("the store cannot take inbound messages; keeping them in the spool until it is back",
		"path", s.file.path, "err", cause)
}

// wake tells the drain loop that something changed.
func (s *Spool) wake() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// drain hands the file's messages to next, oldest first, once no
// conversation's goroutine holds any; it waits and tries again while
// next fails.
func (s *Spool) drain() {
	defer close(s.drained)
	wait := s.cfg.RetryMin
	handed, tries := 0, 0
	for {
		s.mu.Lock()
		ready := s.spooling && len(s.queues) == 0
		idle := !s.spooling
		s.mu.Unlock()
		if idle || !ready {
			select {
			case <-s.ctx.Done():
				return
			case <-s.changed:
				continue
			}
		}
		s.mu.Lock()
		if !s.file.pending() {
			// Everything is in the store: back to handing over directly.
			err := s.file.reset()
			if err == nil {
				s.spooling, s.full, s.cause = false, false, nil
			}
			s.mu.Unlock()
			if err != nil {
				s.log.Error("emptying the inbound spool", "err", err)
				if !s.sleep(wait) {
					return
				}
				continue
			}
			if handed > 0 {
				s.log.Info("the store is back: every spooled message was handed to the core", "messages", handed)
			}
			handed = 0
			continue
		}
		msg, next, err := s.file.read(s.file.offset)
		s.mu.Unlock()
		if err != nil {
			s.log.Error("reading the inbound spool", "path", s.file.path, "err", err)
			if !s.sleep(wait) {
				return
			}
			continue
		}
		err = s.hand(msg)
		if err != nil && s.ctx.Err() != nil {
			return
		}
		if err != nil {
			tries++
			if tries < poisonAttempts || !s.storeUp() {
				s.log.Debug("the store still cannot take a spooled message", "retry_in", wait, "err", err)
				if !s.sleep(wait) {
					return
				}
				wait = min(2*wait, s.cfg.RetryMax)
				continue
			}
			s.log.Error("giving up a spooled message the store keeps refusing while it is up",
				"platform", msg.Platform, "thread", msg.ChannelThreadID, "platform_message_id", msg.PlatformMessageID, "err", err)
		} else {
			handed++
		}
		tries, wait = 0, s.cfg.RetryMin
		s.mu.Lock()
		err = s.file.taken(next)
		s.mu.Unlock()
		if err != nil {
			s.log.Error("recording the inbound spool's progress", "err", err)
		}
	}
}

// storeUp reports whether the store answers its probe (false without
// one: no message is ever given up).
func (s *Spool) storeUp() bool {
	if s.cfg.Probe == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	return s.cfg.Probe(ctx) == nil
}

func (s *Spool) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// State is what the spool holds, for /healthz and /metrics.
type State struct {
	// Spooling is true while messages go through the file.
	Spooling bool
	// Bytes are the file's bytes not yet handed over.
	Bytes int64
	// Full is true while a message could not be spooled.
	Full bool
	// Queued are the messages held in memory.
	Queued int
}

// State reports the spool's state.
func (s *Spool) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return State{Spooling: s.spooling, Bytes: s.file.size - s.file.offset, Full: s.full, Queued: s.queued}
}

// Health fails while the spool is full: messages are being lost.
func (s *Spool) Health() error {
	st := s.State()
	if st.Full {
		return fmt.Errorf("inbound spool %s is full (%d bytes): new messages are lost until the store is back", s.file.path, s.cfg.MaxBytes)
	}
	return nil
}
