package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/core/llm"
)

// MaxInboundBytes is the longest inbound text the core keeps; longer text is
// cut at a rune boundary and the model is told so.
const MaxInboundBytes = 16 << 10

// DefaultFailureMessage is sent when the model cannot answer.
const DefaultFailureMessage = "Sorry, I can't answer right now. Please try again in a little while."

// LLM is the model as the dispatcher uses it; *llm.Client implements it.
type LLM interface {
	Run(ctx context.Context, req llm.Request) (llm.Result, error)
}

// DispatcherConfig wires a Dispatcher. Store, LLM and at least one adapter
// are required; every other field has a default.
type DispatcherConfig struct {
	Store    Store
	LLM      LLM
	Plugins  []Plugin
	Adapters []Adapter
	Logger   *slog.Logger
	// Clock defaults to the system clock.
	Clock Clock
	// Owner names this worker in claimed runs (default host-pid-random).
	Owner string
	// Location is the default zone for new conversations (default UTC).
	Location *time.Location
	// AllowUsers lists "platform:user_id"; empty allows everyone.
	AllowUsers []string
	// FailureMessage is sent when the model fails (default DefaultFailureMessage).
	FailureMessage string
	// MaxToolRounds bounds tool rounds per turn (default: the LLM's own).
	MaxToolRounds int
	// HistoryLimit is how many recent messages a turn sees (default 50).
	HistoryLimit int
	// HistoryCacheSize is how many conversations' windows are kept in
	// memory (default 4096).
	HistoryCacheSize int
	// Workers is how many turns execute at once (default 8).
	Workers int
	// StaleAfter is when a running run without heartbeat is reaped (default 2m).
	StaleAfter time.Duration
	// TurnTimeout bounds one turn end to end (default 5m).
	TurnTimeout time.Duration
	// PollInterval is the fallback wake-up for runs planned by other
	// processes (default 2s).
	PollInterval time.Duration
	// TypingInterval is how often the typing indicator is refreshed (default 4s).
	TypingInterval time.Duration
}

// Dispatcher is the core engine: it records inbound DMs, plans runs, and
// executes them with the enabled plugins over the LLM, replying through the
// adapter the conversation came from.
type Dispatcher struct {
	cfg      DispatcherConfig
	log      *slog.Logger
	adapters map[Platform]Adapter
	// platforms are the ones this dispatcher can deliver to; it claims
	// only their runs.
	platforms []Platform
	allow     map[string]bool
	history   *historyCache

	wake chan struct{}

	mu       sync.Mutex
	stopping bool
	cancel   context.CancelFunc
	runCtx   context.Context
	loopDone chan struct{}
	turns    sync.WaitGroup
}

// NewDispatcher checks cfg and fills in defaults.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("dispatcher: no store")
	}
	if cfg.LLM == nil {
		return nil, errors.New("dispatcher: no llm")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Owner == "" {
		cfg.Owner = newOwnerID()
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.FailureMessage == "" {
		cfg.FailureMessage = DefaultFailureMessage
	}
	if cfg.HistoryLimit <= 0 {
		cfg.HistoryLimit = 50
	}
	if cfg.HistoryCacheSize <= 0 {
		cfg.HistoryCacheSize = 4096
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = 2 * time.Minute
	}
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = 5 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.TypingInterval <= 0 {
		cfg.TypingInterval = 4 * time.Second
	}
	d := &Dispatcher{
		cfg:      cfg,
		log:      cfg.Logger,
		adapters: map[Platform]Adapter{},
		allow:    map[string]bool{},
		wake:     make(chan struct{}, 1),
		history:  newHistoryCache(cfg.HistoryLimit, cfg.HistoryCacheSize),
	}
	for _, a := range cfg.Adapters {
		if prev, dup := d.adapters[a.Platform()]; dup {
			return nil, fmt.Errorf("dispatcher: adapters %q and %q both serve platform %s", prev.Name(), a.Name(), a.Platform())
		}
		d.adapters[a.Platform()] = a
		d.platforms = append(d.platforms, a.Platform())
	}
	if len(d.platforms) == 0 {
		return nil, errors.New("dispatcher: no adapter")
	}
	for _, u := range cfg.AllowUsers {
		d.allow[u] = true
	}
	return d, nil
}

// Owner is the id this dispatcher claims runs under.
func (d *Dispatcher) Owner() string { return d.cfg.Owner }

// Start launches the claim loop. Runs left queued by an earlier process are
// picked up; runs whose worker died are reaped after StaleAfter.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		return errors.New("dispatcher: already started")
	}
	if n, err := d.cfg.Store.ReapStaleRuns(ctx, d.cfg.Clock.Now().Add(-d.cfg.StaleAfter)); err != nil {
		return fmt.Errorf("reaping stale runs: %w", err)
	} else if n > 0 {
		d.log.Warn("failed runs left running by a stopped worker", "count", n)
	}
	// Turns outlive the caller's ctx on purpose: Stop decides when they end.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.runCtx, d.cancel = runCtx, cancel
	d.loopDone = make(chan struct{})
	go d.claimLoop(runCtx)
	return nil
}

// Stop stops claiming runs and waits for in-flight turns to finish until ctx
// is done, then cancels them. Inbound messages that arrive meanwhile are
// still stored and their runs stay queued for the next start.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	d.stopping = true
	cancel := d.cancel
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	d.signal() // the claim loop notices it is stopping
	done := make(chan struct{})
	go func() {
		<-d.loopDone
		d.turns.Wait()
		close(done)
	}()
	select {
	case <-done:
		cancel()
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		return fmt.Errorf("stopping dispatcher: in-flight turns cancelled: %w", ctx.Err())
	}
}

func (d *Dispatcher) isStopping() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopping
}

// HandleInbound records a direct message and plans a turn to answer it. It
// implements InboundHandler.
func (d *Dispatcher) HandleInbound(ctx context.Context, msg InboundMessage) error {
	log := d.log.With("platform", msg.Platform, "thread", msg.ChannelThreadID)
	if !msg.Direct {
		log.Debug("ignoring a message that is not a direct message")
		return nil
	}
	if len(d.allow) > 0 && !d.allow[string(msg.Platform)+":"+msg.ChannelUserID] {
		log.Debug("ignoring a user not in bot.allow_users", "user", msg.ChannelUserID)
		return nil
	}
	text := msg.Text
	if strings.TrimSpace(text) == "" {
		log.Debug("ignoring an empty message")
		return nil
	}
	var meta map[string]any
	if len(text) > MaxInboundBytes {
		meta = map[string]any{"truncated_from_bytes": len(text)}
		text = truncateUTF8(text, MaxInboundBytes)
	}
	if msg.Platform == "" || msg.ChannelThreadID == "" {
		return errors.New("inbound message without platform or channel thread id")
	}
	res, err := d.cfg.Store.RecordInbound(ctx, InboundRecord{
		Platform:          msg.Platform,
		ChannelThreadID:   msg.ChannelThreadID,
		ChannelUserID:     msg.ChannelUserID,
		DisplayName:       msg.DisplayName,
		TimeZone:          d.cfg.Location.String(),
		Text:              text,
		PlatformMessageID: msg.PlatformMessageID,
		Metadata:          meta,
		Now:               d.cfg.Clock.Now().UTC(),
		PlanRun:           true,
	})
	if err != nil {
		return fmt.Errorf("recording inbound message: %w", err)
	}
	d.history.appended(res.Conversation, res.Message)
	log.Debug("inbound message stored", "conversation", res.Conversation.ID, "seq", res.Message.Seq)
	d.signal()
	return nil
}

// History returns the newest limit messages of the conversation at
// (platform, channelThreadID), oldest first; none if it does not exist.
func (d *Dispatcher) History(ctx context.Context, p Platform, channelThreadID string, limit int) ([]Message, error) {
	conv, err := d.cfg.Store.ConversationByThread(ctx, p, channelThreadID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding conversation: %w", err)
	}
	msgs, err := d.cfg.Store.RecentMessages(ctx, conv.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	return msgs, nil
}

// signal wakes the claim loop without blocking.
func (d *Dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// claimLoop is the one claimer of this process: it claims a due run whenever
// a turn slot is free and runs it in its own goroutine. One claimer means no
// claim is wasted on a run a sibling already took, which matters on SQLite
// where every claim queues for the single writer.
func (d *Dispatcher) claimLoop(ctx context.Context) {
	defer close(d.loopDone)
	slots := make(chan struct{}, d.cfg.Workers)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if d.isStopping() {
			return
		}
		run, err := d.cfg.Store.ClaimRun(ctx, d.cfg.Owner, d.cfg.Clock.Now().UTC(), d.platforms...)
		if err != nil && ctx.Err() == nil {
			d.log.Error("claiming a run", "err", err)
		}
		if run != nil {
			d.turns.Add(1)
			go func() {
				defer d.turns.Done()
				// A busy slot goes from run to run: completing one claims
				// the next in the same transaction.
				for next := run; next != nil; {
					next = d.execute(ctx, next)
				}
				<-slots
				// Its conversation may have a run queued behind it.
				d.signal()
			}()
			continue
		}
		<-slots
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d.idleWait(ctx))
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-timer.C:
		}
	}
}

// idleWait is how long an idle worker sleeps: until the next queued run is
// due, at most PollInterval (runs planned by other processes).
func (d *Dispatcher) idleWait(ctx context.Context) time.Duration {
	wait := d.cfg.PollInterval
	next, err := d.cfg.Store.NextRunAfter(ctx)
	if err != nil || next == nil {
		return wait
	}
	// A due run that could not be claimed waits for its conversation's
	// running run; that worker looks again when it finishes.
	if until := next.Sub(d.cfg.Clock.Now()); until > 0 && until < wait {
		wait = until
	}
	return wait
}

func newOwnerID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
