package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/engine/history"
	"github.com/parleybot/parley/engine/intake"
	"github.com/parleybot/parley/engine/jobs"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/engine/promises"
	"github.com/parleybot/parley/engine/turns"
)

// Config wires a Dispatcher. Store, LLM and at least one adapter
// are required; every other field has a default.
type Config struct {
	Store    core.Store
	LLM      core.LLM
	Plugins  []core.Plugin
	Adapters []core.Adapter
	Logger   *slog.Logger
	// Clock defaults to the system clock.
	Clock core.Clock
	// Owner names this worker in claimed runs (default host-pid-random).
	Owner string
	// Location is the default zone for new conversations (default UTC).
	Location *time.Location
	// Gate says who may talk to the bot (bot.dm_policy, owners,
	// allow_users); nil lets everyone in. Under pairing, Store keeps who
	// was let in (intake.Pairings).
	Gate *access.Gate
	// FailureMessage is sent when the model fails (default bot.failure_message's, config.DefaultFailureMessage).
	FailureMessage string
	// BusyMessage is sent under BusyReject (default bot.busy_message's, config.DefaultBusyMessage).
	BusyMessage string
	// AckReaction is the emoji the bot reacts with to the user's message
	// while a turn works on it, on adapters that can (bot.ack_reaction;
	// default "": none).
	AckReaction string
	// Debounce delays a user turn after each message, so that a burst is
	// answered in one turn (default 0).
	Debounce time.Duration
	// DuringGeneration is what a message does while its conversation's turn
	// runs (default BusyQueue).
	DuringGeneration core.BusyPolicy
	// Streaming shows replies growing on the adapters that can
	// (bot.streaming; default off here, on in `parley run`). Its Visible
	// defaults to the core's filter (streamVisible).
	Streaming outbox.Streaming
	// MaxToolRounds bounds tool rounds per turn (default: the LLM's own).
	MaxToolRounds int
	// HistoryLimit is how many recent messages a turn sees (default 50).
	HistoryLimit int
	// HistoryCacheSize is how many conversations' windows are kept in
	// memory (default 4096).
	HistoryCacheSize int
	// MaxTurns bounds the turns in flight at once (default
	// DefaultMaxTurns). A turn spends nearly all its time waiting on the
	// model, so this is not a CPU bound: it bounds memory (about
	// TurnMemory each), while the model client bounds requests in flight
	// (llm.max_concurrency).
	MaxTurns int
	// StaleAfter is when a running run without heartbeat is reaped (default 2m).
	StaleAfter time.Duration
	// HeartbeatInterval is how often running runs send a heartbeat
	// (default StaleAfter/4, at most 5s).
	HeartbeatInterval time.Duration
	// ReapInterval is how often stale runs are looked for (default
	// StaleAfter/4, at most 30s).
	ReapInterval time.Duration
	// TurnTimeout bounds one turn end to end (default 5m).
	TurnTimeout time.Duration
	// PollInterval is the fallback wake-up for runs planned by other
	// processes, and how often the job loop reads the next due time
	// (default 2s). On PostgreSQL a job due more than a minute ahead
	// notifies no one, so keep it under a minute.
	PollInterval time.Duration
	// TypingInterval is how often the typing indicator is refreshed (default 4s).
	TypingInterval time.Duration
	// JobMaxAttempts bounds the runs a proactive follow-up gets before it
	// is marked failed (scheduler.max_attempts, default 3).
	JobMaxAttempts int
	// ContinueNudge is the hidden user message that asks the model to go on
	// after a reply that wanted to say more (default DefaultContinueNudge).
	ContinueNudge string
	// ScheduledMessages makes this dispatcher send due message jobs
	// (scheduled private messages); off, they wait for one that does.
	ScheduledMessages bool
	// RecurringTurns makes this dispatcher run recurring jobs' turns
	// (schedule_recurring_turn); off, they wait for one that does.
	RecurringTurns bool
	// LateGrace is how late a scheduled message may still go out, or a
	// recurring job's missed occurrence still run, after downtime; older
	// ones are missed (scheduler.late_grace, default 24h).
	LateGrace time.Duration
	// JobLease is how long a claimed job is this process's before another
	// may take it over (scheduler.job_lease, default 1m).
	JobLease time.Duration
	// MaxSendsInDoubt is how many scheduled sends to one platform without
	// idempotent sends may be in doubt at once, each a duplicate should
	// this process die (scheduler.max_sends_in_doubt, default 4; see
	// doubt.go).
	MaxSendsInDoubt int
	// Media says what turns do with the files users send.
	Media core.MediaConfig
	// Voice says when replies go out as voice notes (default never).
	Voice core.VoiceReplies
	// Metrics, when set, is told about turns, model calls, sends and jobs.
	Metrics core.Metrics
	// Promises, when set, gives a reply that promises a later message
	// without scheduling it one more round (bot.promise_check; default
	// off here, on in `parley run`).
	Promises *promises.Checker
	// Listener, when set, tells this dispatcher when other processes queue
	// work (PostgreSQL's LISTEN/NOTIFY), so replicas need not wait for
	// their next poll.
	Listener core.WorkListener
	// Commands answers chat commands (/help, /new, …) without the model;
	// nil: none, and every /word is text for the model.
	Commands core.CommandHandler
	// JobWaker, when set, is what plugins that create jobs (the schedule
	// tools) call to wake the job loop, so a job due soon is not left to
	// the loop's next look (default: a waker of its own).
	JobWaker *core.Waker
	// Limits bound what one user may cost (bot.limits; default none).
	// With any set, Store must implement LimitStore. See limits.go.
	Limits core.UserLimits
}

// Dispatcher composes the engines: intake takes what users send, turns
// answer, jobs keep promises on time, and every message leaves through
// one Outbox. It starts and stops them together and is the Host the
// adapters are handed.
type Dispatcher struct {
	cfg    Config
	log    *slog.Logger
	outbox *outbox.Outbox
	intake *intake.Engine
	turns  *turns.Engine
	jobs   *jobs.Engine
	// turnWake and jobWake wake the claim loop and the job loop.
	turnWake *core.Waker
	jobWake  *core.Waker

	mu         sync.Mutex
	cancel     context.CancelFunc
	listenDone chan struct{}
}

var _ core.Host = (*Dispatcher)(nil)

// New checks cfg, fills in its defaults and wires the engines.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("dispatcher: no store")
	}
	if cfg.LLM == nil {
		return nil, errors.New("dispatcher: no llm")
	}
	session, proactive := policies(cfg.Plugins)
	if err := withDefaults(&cfg, session); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, log: cfg.Logger, turnWake: core.NewWaker(), jobWake: cfg.JobWaker}
	hist := history.New(cfg.HistoryLimit, cfg.HistoryCacheSize)
	var err error
	d.outbox, err = outbox.New(outbox.Config{
		Adapters: cfg.Adapters, Store: cfg.Store, History: hist, Metrics: cfg.Metrics, Clock: cfg.Clock,
		Logger: cfg.Logger, JobLease: cfg.JobLease, MaxSendsInDoubt: cfg.MaxSendsInDoubt, Streaming: cfg.Streaming,
	})
	if err != nil {
		return nil, err
	}
	tcfg := turns.Config{
		Store: cfg.Store, LLM: cfg.LLM, Plugins: cfg.Plugins, Outbox: d.outbox, History: hist,
		Logger: cfg.Logger, Clock: cfg.Clock, Owner: cfg.Owner, Location: cfg.Location, Metrics: cfg.Metrics,
		Session: session, Proactive: proactive, Wake: d.turnWake, JobWake: d.jobWake,
		FailureMessage: cfg.FailureMessage, AckReaction: cfg.AckReaction, ContinueNudge: cfg.ContinueNudge, MaxToolRounds: cfg.MaxToolRounds,
		MaxTurns: cfg.MaxTurns, RecordCacheSize: cfg.HistoryCacheSize, JobMaxAttempts: cfg.JobMaxAttempts,
		StaleAfter: cfg.StaleAfter, HeartbeatInterval: cfg.HeartbeatInterval, ReapInterval: cfg.ReapInterval,
		TurnTimeout: cfg.TurnTimeout, PollInterval: cfg.PollInterval, TypingInterval: cfg.TypingInterval,
		LateGrace: cfg.LateGrace, Media: cfg.Media, Voice: cfg.Voice, Promises: cfg.Promises,
	}
	// The turns engine is made first (intake stops its runs), and told
	// about the limits once intake has checked them.
	d.turns = turns.New(tcfg)
	// A store that can create jobs answers reminders' buttons (package
	// store's does); with another, they are refused as stale.
	reminders, _ := cfg.Store.(intake.ReminderStore)
	pairings, _ := cfg.Store.(intake.Pairings)
	if pairings == nil && cfg.Gate.Decide("", "") == access.Pair {
		return nil, errors.New("bot.dm_policy pairing needs a store that keeps pairings (package store's)")
	}
	d.intake, err = intake.New(intake.Config{
		Store: cfg.Store, Outbox: d.outbox, Logger: cfg.Logger, Clock: cfg.Clock, Location: cfg.Location,
		Metrics: cfg.Metrics, Commands: cfg.Commands, Gate: cfg.Gate, Pairings: pairings, Limits: cfg.Limits,
		Session: session, BusyMessage: cfg.BusyMessage, Debounce: cfg.Debounce, DuringGeneration: cfg.DuringGeneration,
		Turns: d.turns, Handoff: d.turns.Handoff(), TurnWake: d.turnWake,
		Reminders: reminders, JobWake: d.jobWake,
	})
	if err != nil {
		return nil, err
	}
	if cfg.Limits.Enabled() {
		d.turns.UseLimits(d.intake)
	}
	d.jobs = jobs.New(jobs.Config{
		Store: cfg.Store, Outbox: d.outbox, Logger: cfg.Logger, Clock: cfg.Clock, Owner: cfg.Owner,
		Location: cfg.Location, Metrics: cfg.Metrics, Kinds: jobKinds(cfg, proactive), Proactive: proactive,
		Wake: d.jobWake, TurnWake: d.turnWake, PollInterval: cfg.PollInterval, JobLease: cfg.JobLease,
		LateGrace: cfg.LateGrace, JobMaxAttempts: cfg.JobMaxAttempts, Voice: cfg.Voice,
	})
	return d, nil
}

// policies reads the session and follow-up policies from the plugins: the
// session limits any SessionPolicy sets over the defaults, and the last
// ProactivePolicy (nil when none).
func policies(plugins []core.Plugin) (core.SessionLimits, core.ProactivePolicy) {
	limits := core.SessionLimits{Gap: core.DefaultSessionGap, WindowMessages: core.DefaultWindowMessages, WindowTokens: core.DefaultWindowTokens}
	var proactive core.ProactivePolicy
	for _, p := range plugins {
		if sp, ok := p.(core.SessionPolicy); ok {
			l := sp.SessionLimits()
			if l.Gap > 0 {
				limits.Gap = l.Gap
			}
			if l.WindowMessages > 0 {
				limits.WindowMessages = l.WindowMessages
			}
			if l.WindowTokens > 0 {
				limits.WindowTokens = l.WindowTokens
			}
		}
		if pp, ok := p.(core.ProactivePolicy); ok {
			proactive = pp
		}
	}
	return limits, proactive
}

// jobKinds are the kinds of job this process's job loop serves.
func jobKinds(cfg Config, proactive core.ProactivePolicy) []core.JobKind {
	var kinds []core.JobKind
	if proactive != nil {
		kinds = append(kinds, core.JobProactive)
	}
	if cfg.ScheduledMessages {
		kinds = append(kinds, core.JobMessage)
	}
	if cfg.RecurringTurns {
		kinds = append(kinds, core.JobAgentTurn)
	}
	return kinds
}

// Start launches the engines. Runs left queued by an earlier process are
// picked up; runs whose worker died are reaped after StaleAfter.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		return errors.New("dispatcher: already started")
	}
	// Turns outlive the caller's ctx on purpose: Stop decides when they end.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if err := d.turns.Start(ctx, runCtx); err != nil {
		cancel()
		return err
	}
	d.cancel = cancel
	d.listenDone = make(chan struct{})
	go d.listen(runCtx)
	if d.cfg.ScheduledMessages {
		d.outbox.LogSendsInDoubt()
	}
	d.jobs.Start(runCtx)
	return nil
}

// Stop stops claiming runs and waits for in-flight turns to finish until ctx
// is done, then cancels them. Inbound messages that arrive meanwhile are
// still stored and their runs stay queued for the next start.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	cancel := d.cancel
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	d.jobs.Drain()
	done := d.turns.Drain()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("stopping dispatcher: in-flight turns cancelled: %w", ctx.Err())
	}
	cancel()
	<-done
	d.turns.Stopped()
	d.jobs.Wait()
	<-d.listenDone
	return err
}

// HandleInbound records a direct message and plans a turn to answer it; a
// chat command is answered at once, without the model. It implements
// core.InboundHandler.
func (d *Dispatcher) HandleInbound(ctx context.Context, msg core.InboundMessage) error {
	return d.intake.HandleInbound(ctx, msg)
}

// HandleReaction stores a user's reaction with the bot message it is on;
// it implements core.ReactionHandler.
func (d *Dispatcher) HandleReaction(ctx context.Context, r core.Reaction) error {
	return d.intake.HandleReaction(ctx, r)
}

// HandleChange applies a user's edit or deletion of a message they sent;
// it implements core.ChangeHandler.
func (d *Dispatcher) HandleChange(ctx context.Context, c core.MessageChange) error {
	return d.intake.HandleChange(ctx, c)
}

// HandleTap records a tap on a question's button as the user's answer;
// it implements core.TapHandler.
func (d *Dispatcher) HandleTap(ctx context.Context, msg core.InboundMessage) (core.TapAnswer, error) {
	return d.intake.HandleTap(ctx, msg)
}

// History returns the newest limit messages of the conversation at
// (platform, channelThreadID), oldest first; none if it does not exist.
func (d *Dispatcher) History(ctx context.Context, p core.Platform, channelThreadID string, limit int) ([]core.Message, error) {
	return d.intake.History(ctx, p, channelThreadID, limit)
}

// Commands lists the chat commands this dispatcher answers; none when
// commands are off.
func (d *Dispatcher) Commands() []core.CommandInfo { return d.intake.Commands() }

// SendsInFlight is how many claimed scheduled messages this dispatcher has
// not settled yet (tests wait for 0 before they move a clock).
func (d *Dispatcher) SendsInFlight() int { return d.jobs.SendsInFlight() }

// Welcome tells a user an owner just let in that they are (see
// intake.Engine.Welcome).
func (d *Dispatcher) Welcome(ctx context.Context, p access.Request) { d.intake.Welcome(ctx, p) }

// signal wakes the claim loop; wakeJobs the job loop.
func (d *Dispatcher) signal()   { d.turnWake.Wake() }
func (d *Dispatcher) wakeJobs() { d.jobWake.Wake() }

// NewOwnerID is a new worker name (host-pid-random) for Config.Owner:
// the dispatchers of one process's bots share one, so that none takes
// another's runs for those of a process gone (reapPredecessors).
func NewOwnerID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
