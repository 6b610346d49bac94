// Package intake is the engine that takes what users send: it checks who
// may talk and the per-user limits, stores each direct message and plans
// the turn that answers it, and answers chat commands at once, without the
// model.
package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/engine/outbox"
)

// Store is what intake reads and writes; core.Store documents each
// method.
type Store interface {
	RecordInbound(ctx context.Context, in core.InboundRecord) (core.InboundResult, error)
	ConversationByThread(ctx context.Context, p core.Platform, channelThreadID string) (core.Conversation, error)
	RecentMessages(ctx context.Context, conversationID int64, limit int) ([]core.Message, error)
	AppendMessage(ctx context.Context, m *core.Message) error
	MessageByPlatformID(ctx context.Context, conversationID int64, platformMessageID string, role core.Role) (core.Message, error)
	SetMessageText(ctx context.Context, m core.Message) error
}

// RunStopper stops a turn in flight (the turns engine): the restart
// policy drops the answer being made for a newer message.
type RunStopper interface {
	StopRun(runID int64) bool
}

// Handoff runs a message's turn at once (the turns engine's): the message
// takes a free turn slot (ReserveTurn), has its run claimed in its own
// transaction for the owner given, and is then run (RunClaimed) or the
// slot given back (ReleaseTurn).
type Handoff interface {
	ReserveTurn() (owner string, ok bool)
	RunClaimed(run *core.Run, conv core.Conversation)
	ReleaseTurn()
}

// Config wires the engine; the composer (package engine) fills in every
// default.
type Config struct {
	Store    Store
	Outbox   *outbox.Outbox
	Logger   *slog.Logger
	Clock    core.Clock
	Location *time.Location
	Metrics  core.Metrics
	// Commands answers chat commands; nil: every /word is text for the
	// model.
	Commands core.CommandHandler
	// Gate says who may talk to the bot (bot.dm_policy, owners,
	// allow_users); nil lets everyone in. Under pairing, Pairings keeps
	// who was let in.
	Gate     *access.Gate
	Pairings Pairings
	// Limits bound what one user may cost; with any set, Store must
	// implement core.LimitStore.
	Limits core.UserLimits
	// Session gives the gap that starts a new session record.
	Session          core.SessionLimits
	BusyMessage      string
	Debounce         time.Duration
	DuringGeneration core.BusyPolicy
	// Turns stops a turn a newer message restarts; Handoff runs a turn
	// due at once, TurnWake wakes the claim loop for the others.
	Turns    RunStopper
	Handoff  Handoff
	TurnWake *core.Waker
	// Reminders answers a reminder's buttons (snooze, done); JobWake wakes
	// the job loop for a reminder snoozed.
	Reminders ReminderStore
	JobWake   *core.Waker
}

// ReminderStore is what a reminder's buttons read and write.
type ReminderStore interface {
	Job(ctx context.Context, id int64) (core.Job, error)
	CreateJob(ctx context.Context, j *core.Job) error
}

// Engine takes inbound messages; see the package doc.
type Engine struct {
	cfg  Config
	log  *slog.Logger
	door *door
	// limitStore counts usage for the per-user limits; nil when none is
	// set. limitExempt are the users they never apply to.
	limitStore  core.LimitStore
	limitExempt map[string]bool
}

// New checks cfg's limits and returns the engine.
func New(cfg Config) (*Engine, error) {
	e := &Engine{cfg: cfg, log: cfg.Logger}
	e.door = &door{e: e}
	var err error
	if e.limitStore, e.limitExempt, err = newLimits(cfg.Limits, cfg.Store); err != nil {
		return nil, err
	}
	return e, nil
}

// History returns the newest limit messages of the conversation at
// (platform, channelThreadID), oldest first; none if it does not exist.
func (e *Engine) History(ctx context.Context, p core.Platform, channelThreadID string, limit int) ([]core.Message, error) {
	conv, err := e.cfg.Store.ConversationByThread(ctx, p, channelThreadID)
	if errors.Is(err, core.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding conversation: %w", err)
	}
	msgs, err := e.cfg.Store.RecentMessages(ctx, conv.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	return msgs, nil
}

// signal wakes the claim loop: a run was planned.
func (e *Engine) signal() { e.cfg.TurnWake.Wake() }

// stopRun stops a turn this process runs; it reports whether it did.
func (e *Engine) stopRun(runID int64) bool { return e.cfg.Turns.StopRun(runID) }
