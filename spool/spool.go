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
	"github.com/parleybot/parley/internal/backoff"
	"github.com/parleybot/parley/internal/diskfault"
)

// ErrFull is returned for a message that came while the spool is full:
// that message is not kept, and the adapter must say so (the web chat
// answers 503 with Retry-After) or give it up.
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
	// store takes writes before it is given up: the store is fine, the
	// message is not.
	poisonAttempts = 5
	// logEvery spaces the lines about a store or a file that keeps
	// failing.
	logEvery = time.Minute
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
	// Probe, when set, tells a store that takes writes from one that does
	// not: a spooled message that keeps failing, with an error other than
	// core.ErrStoreUnavailable, while a probe passes is given up after a
	// few tries instead of holding up the others for ever. It must write
	// (store.ProbeWrite): a ping passes on a full disk. Without it no
	// message is given up. A message failing with core.ErrStoreUnavailable
	// is never given up.
	Probe func(ctx context.Context) error
	// RetryMin and RetryMax bound the wait between tries of the oldest
	// spooled message (default 500ms and 5s).
	RetryMin, RetryMax time.Duration
	Logger             *slog.Logger
	// Disk, for Parley's own tests where no small file system can be
	// mounted and filled: while it is full the spool's writes fail as on
	// a full disk (nil in production).
	Disk *diskfault.Disk
}

// Spool is a core.Host in front of the core's: HandleInbound
// returns at once, and the message reaches next from the spool's own
// goroutines, through the file while next fails. A message HandleInbound
// took is never dropped because the store cannot take it: it is tried
// again, with backoff, until the store or the file takes it.
type Spool struct {
	forward // what goes to the core as it is
	cfg     Config
	log     *slog.Logger
	next    core.Host
	file    *file

	mu sync.Mutex
	// queues hold, per conversation, the messages in memory; the
	// conversation's goroutine hands them over in order.
	queues map[string][]core.InboundMessage
	queued int
	// spooling: new messages go to the file, which is drained in order,
	// once no conversation's goroutine holds messages any more.
	spooling bool
	// fileErr is the last write to the file that failed (full, or its
	// disk failing), nil once one succeeds; full says it was ErrFull.
	fileErr  error
	full     bool
	fileLog  time.Time
	cause    error
	stopping bool
	changed  chan struct{}
	// emptied is closed (and replaced) each time a conversation's queue
	// in memory is gone: a change waits for its message to be handed on.
	emptied chan struct{}
	active  sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
	drained chan struct{}
}

// Open opens the spool in cfg.Dir, taking over what a process that died
// left there; nothing is handed to next before Start.
func Open(cfg Config, next core.Host) (*Spool, error) {
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
	f.disk = cfg.Disk
	s := &Spool{forward: forward{next}, cfg: cfg, log: cfg.Logger, next: next, file: f, queues: map[string][]core.InboundMessage{},
		changed: make(chan struct{}, 1), emptied: make(chan struct{})}
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
// the core, spools what did not (or, when the file cannot take it, tries
// the core once more), and closes the file. Nothing held in memory is
// lost by a clean stop unless neither the file nor the store takes it,
// which is logged.
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
	lost := 0
	for key, q := range s.queues {
		if err := s.file.appendMsgs(q, 0); err != nil {
			for _, m := range q {
				hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				if herr := s.next.HandleInbound(hctx, m); herr != nil {
					lost++
					errs = append(errs, fmt.Errorf("an inbound message of %s/%s is lost: %w", m.Platform, m.ChannelThreadID,
						errors.Join(err, herr)))
				}
				cancel()
			}
		}
		delete(s.queues, key)
	}
	if lost > 0 {
		s.log.Error("inbound messages held in memory are lost at stop: neither the spool's file nor the store takes them",
			"path", s.file.path, "messages", lost)
	}
	errs = append(errs, s.file.close())
	return errors.Join(errs...)
}

// HandleInbound takes msg and returns without waiting on the store. An
// error means msg was not kept, and the caller must say so or try again:
// the store cannot take messages and the spool cannot keep it (its file
// is full, or cannot be written), or the spool is stopped. A message
// taken is never dropped afterwards for want of a store.
func (s *Spool) HandleInbound(_ context.Context, msg core.InboundMessage) error {
	key := string(msg.Platform) + "\x00" + msg.ChannelThreadID
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[key]; ok {
		if s.spooling && s.fileErr != nil {
			// Its conversation's earlier messages wait in memory because
			// neither the store nor the file takes them: this one is
			// refused rather than held where a crash would lose it.
			return s.notKeptLocked(msg, s.fileErr)
		}
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
		if err := s.writeLocked([]core.InboundMessage{msg}); err != nil {
			return s.notKeptLocked(msg, err)
		}
		return nil
	}
	s.queues[key] = []core.InboundMessage{msg}
	s.queued++
	s.active.Add(1)
	go s.handOver(key)
	return nil
}

// handOver hands a conversation's messages to next in order, until none
// is left; while next fails they go to the file, and while the file
// fails too they stay in memory, in order, and both are tried again with
// backoff.
func (s *Spool) handOver(key string) {
	defer s.active.Done()
	wait := s.cfg.RetryMin
	for {
		s.mu.Lock()
		q := s.queues[key]
		if len(q) == 0 {
			delete(s.queues, key)
			s.emptiedLocked()
			s.wake()
			s.mu.Unlock()
			return
		}
		if s.stopping && s.ctx.Err() != nil {
			s.mu.Unlock()
			return // Stop spools the rest
		}
		if s.spooling && !s.stopping && s.spoolQueueLocked(key) == nil {
			s.mu.Unlock()
			return
		}
		stuck := s.spooling && !s.stopping // the file refused them just now
		msg := q[0]
		s.mu.Unlock()

		err := s.hand(msg)

		s.mu.Lock()
		switch {
		case err == nil:
			s.queues[key] = s.queues[key][1:]
			s.queued--
			s.mu.Unlock()
			wait = s.cfg.RetryMin
			continue
		case s.stopping:
			s.mu.Unlock()
			return // Stop spools msg and the rest
		case !stuck:
			// The store failed them: to the file, on the next pass.
			s.startSpooling(err)
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		// Neither the store nor the file takes them: they stay in
		// memory, where Stop still spools them.
		s.log.Debug("neither the store nor the inbound spool's file takes a conversation's messages; trying both again",
			"retry_in", wait, "messages", len(q), "err", err)
		if !s.sleep(wait) {
			return
		}
		wait = s.retry().Next(wait)
	}
}

// hand gives one message to the core.
func (s *Spool) hand(msg core.InboundMessage) error {
	ctx, cancel := context.WithTimeout(s.ctx, handTimeout)
	defer cancel()
	return s.next.HandleInbound(ctx, msg)
}

// spoolQueueLocked moves a conversation's queue to the file, in order,
// all of it or, when the file cannot take it, none.
func (s *Spool) spoolQueueLocked(key string) error {
	q := s.queues[key]
	if err := s.writeLocked(q); err != nil {
		return err
	}
	s.queued -= len(q)
	delete(s.queues, key)
	s.emptiedLocked()
	s.wake()
	return nil
}

// writeLocked appends msgs to the file, noting whether the file takes
// writes: a failure fails Health at once, a success clears it.
func (s *Spool) writeLocked(msgs []core.InboundMessage) error {
	err := s.file.appendMsgs(msgs, s.cfg.MaxBytes)
	if err == nil {
		s.fileErr, s.full = nil, false
		s.wake()
		return nil
	}
	s.fileFailedLocked(err)
	return err
}

// fileFailedLocked notes a failed write to the file, and logs it at most
// once a minute.
func (s *Spool) fileFailedLocked(err error) {
	s.fileErr, s.full = err, errors.Is(err, ErrFull)
	if now := time.Now(); now.Sub(s.fileLog) > logEvery {
		s.fileLog = now
		s.log.Error("the inbound spool cannot write its file while the store cannot take messages: new messages are refused "+
			"(the web chat answers 503), those already taken are kept in memory and tried again",
			"path", s.file.path, "max_bytes", s.cfg.MaxBytes, "err", err, "store_err", s.cause)
	}
}

// notKeptLocked is the error for a message neither the store nor the file
// took: the caller must say so or try again later.
func (s *Spool) notKeptLocked(msg core.InboundMessage, err error) error {
	if errors.Is(err, ErrFull) {
		return fmt.Errorf("%w (%s, %d bytes): the store has not taken messages since: %v", ErrFull, s.file.path, s.cfg.MaxBytes, s.cause)
	}
	why := "the spool is not handing messages over (not started, or stopped)"
	if s.cause != nil {
		why = "the store failed (" + s.cause.Error() + ")"
	}
	return fmt.Errorf("%w: the message from %s/%s could not be kept: %s and %w",
		core.ErrStoreUnavailable, msg.Platform, msg.ChannelThreadID, why, err)
}

func (s *Spool) startSpooling(cause error) {
	if s.spooling {
		return
	}
	s.spooling, s.cause = true, cause
	s.log.Warn("the store cannot take inbound messages; keeping them in the spool until it is back",
		"path", s.file.path, "err", cause)
}

// emptiedLocked tells the changes waiting that a queue is gone.
func (s *Spool) emptiedLocked() {
	close(s.emptied)
	s.emptied = make(chan struct{})
}

// wake tells the drain loop that something changed.
func (s *Spool) wake() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// retryable reports whether err from the core says only that the store
// cannot take writes now (or did not answer in time): such a message is
// tried again for as long as it takes, never given up.
func retryable(err error) bool {
	return errors.Is(err, core.ErrStoreUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// drain hands the file's messages to next, oldest first, once no
// conversation's goroutine holds any; it waits and tries again while
// next fails.
func (s *Spool) drain() {
	defer close(s.drained)
	d := &drainer{s: s, wait: s.cfg.RetryMin}
	// One message at a time, each time the spool is ready, until it stops.
	for s.waitReady() && d.next() {
	}
}

// waitReady waits until the spool holds messages and no conversation's
// goroutine holds any; false when the spool stops.
func (s *Spool) waitReady() bool {
	for {
		s.mu.Lock()
		ready := s.spooling && len(s.queues) == 0
		s.mu.Unlock()
		if ready {
			return true
		}
		select {
		case <-s.ctx.Done():
			return false
		case <-s.changed:
		}
	}
}

// drainer is drain's state from one message to the next.
type drainer struct {
	s    *Spool
	wait time.Duration // before the next try
	// handed counts the messages handed over since the spool last emptied.
	handed int
	// tries counts the oldest message's refusals that were not the store
	// being unavailable.
	tries int
	// failingSince is when the store began refusing the oldest message;
	// logged when that was last logged as a warning.
	failingSince, logged time.Time
}

// next hands the oldest message over, or empties the file when it holds
// none; false when the spool stops.
func (d *drainer) next() bool {
	s := d.s
	s.mu.Lock()
	if !s.file.pending() {
		err := s.resetLocked()
		s.mu.Unlock()
		return d.emptied(err)
	}
	msg, next, err := s.file.read(s.file.offset)
	s.mu.Unlock()
	if err != nil {
		s.log.Error("reading the inbound spool", "path", s.file.path, "err", err)
		return s.sleep(d.wait)
	}
	err = s.hand(msg)
	switch {
	case err != nil && s.ctx.Err() != nil:
		return false
	case err != nil && d.keep(err):
		return d.retryLater(err)
	case err != nil:
		s.log.Error("giving up a spooled message the store keeps refusing while it takes writes",
			"platform", msg.Platform, "thread", msg.ChannelThreadID, "platform_message_id", msg.PlatformMessageID, "err", err)
	default:
		d.handed++
	}
	d.tries, d.wait, d.failingSince = 0, s.cfg.RetryMin, time.Time{}
	return d.taken(next)
}

// resetLocked empties the file once everything in it is in the store:
// back to handing over directly.
func (s *Spool) resetLocked() error {
	err := s.file.reset()
	if err == nil {
		s.spooling, s.full, s.fileErr, s.cause = false, false, nil, nil
	} else {
		s.fileFailedLocked(err)
	}
	return err
}

// emptied follows the file's reset (err: it failed, and is tried again
// after the wait).
func (d *drainer) emptied(err error) bool {
	s := d.s
	if err != nil {
		s.log.Error("emptying the inbound spool", "err", err)
		return d.backOff()
	}
	if d.handed > 0 {
		s.log.Info("the store is back: every spooled message was handed to the core", "messages", d.handed)
	}
	d.handed, d.wait = 0, s.cfg.RetryMin
	return true
}

// keep reports whether a message the store refused with err is kept and
// tried again: while the store is unavailable, always; else for
// poisonAttempts tries, and past them while the store takes no writes.
func (d *drainer) keep(err error) bool {
	if d.failingSince.IsZero() {
		d.failingSince = time.Now()
	}
	if !retryable(err) {
		d.tries++
	}
	return retryable(err) || d.tries < poisonAttempts || !d.s.storeUp()
}

// retryLater waits to hand the oldest message over again, warning now
// and then while the store keeps refusing.
func (d *drainer) retryLater(err error) bool {
	s := d.s
	s.log.Debug("the store still cannot take a spooled message", "retry_in", d.wait, "err", err)
	if now := time.Now(); now.Sub(d.logged) > logEvery && now.Sub(d.failingSince) > logEvery {
		d.logged = now
		s.log.Warn("the store still cannot take the spooled messages; they are kept and tried again",
			"path", s.file.path, "bytes", s.State().Bytes, "for", now.Sub(d.failingSince).Round(time.Second), "err", err)
	}
	return d.backOff()
}

// taken records that the oldest message is done with, next being where
// the one after it starts.
func (d *drainer) taken(next int64) bool {
	s := d.s
	s.mu.Lock()
	err := s.file.taken(next)
	if err != nil {
		s.fileFailedLocked(err)
	}
	s.mu.Unlock()
	if err == nil {
		return true
	}
	// The message is handed over again after the wait; the store drops
	// it as a redelivery.
	s.log.Error("recording the inbound spool's progress", "err", err)
	return d.backOff()
}

// backOff sleeps the wait, then lengthens it; false when the spool stops.
func (d *drainer) backOff() bool {
	if !d.s.sleep(d.wait) {
		return false
	}
	d.wait = d.s.retry().Next(d.wait)
	return true
}

// storeUp reports whether the store takes writes, by its probe (false
// without one: no message is ever given up).
func (s *Spool) storeUp() bool {
	if s.cfg.Probe == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	return s.cfg.Probe(ctx) == nil
}

// retry is the backoff between tries of the oldest spooled messages.
func (s *Spool) retry() backoff.Policy {
	return backoff.Policy{Initial: s.cfg.RetryMin, Max: s.cfg.RetryMax}
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
	// Full is true while a message could not be spooled for the size
	// limit.
	Full bool
	// Failing is the last write to the file that failed, nil once one
	// succeeds (Full included).
	Failing error
	// Queued are the messages held in memory.
	Queued int
}

// State reports the spool's state.
func (s *Spool) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return State{Spooling: s.spooling, Bytes: s.file.size - s.file.offset, Full: s.full, Failing: s.fileErr,
		Queued: s.queued}
}

// Health fails, from the first failed write on, while the spool cannot
// write its file: full, or its disk full or failing. New messages are
// then refused until the store takes them again.
func (s *Spool) Health() error {
	st := s.State()
	switch {
	case st.Full:
		return fmt.Errorf("inbound spool %s is full (%d bytes): new messages are refused until the store takes what it holds",
			s.file.path, s.cfg.MaxBytes)
	case st.Failing != nil:
		return fmt.Errorf("inbound spool %s cannot write (%w): new messages are refused while the store cannot take them",
			s.file.path, st.Failing)
	}
	return nil
}
