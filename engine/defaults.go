package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine/turns"
)

// withDefaults fills in every field of cfg left zero; the session limits
// give the history window's default. A field that is a config key takes
// that key's default from config.Default, so each is written once. It
// refuses a policy it does not know.
func withDefaults(cfg *Config, session core.SessionLimits) error {
	def := config.Default()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = core.SystemClock{}
	}
	if cfg.Owner == "" {
		cfg.Owner = NewOwnerID()
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.JobWaker == nil {
		cfg.JobWaker = core.NewWaker()
	}
	if cfg.Streaming.Interval <= 0 {
		cfg.Streaming.Interval = def.Bot.Streaming.Interval
	}
	if cfg.Streaming.Visible == nil {
		cfg.Streaming.Visible = streamVisible
	}
	switch cfg.DuringGeneration {
	case "":
		cfg.DuringGeneration = core.BusyQueue
	case core.BusyQueue, core.BusyReject, core.BusyRestart:
	default:
		return fmt.Errorf("dispatcher: during_generation %q: want reject, queue or restart", cfg.DuringGeneration)
	}
	orText(&cfg.FailureMessage, def.Bot.FailureMessage)
	orText(&cfg.BusyMessage, def.Bot.BusyMessage)
	orText(&cfg.ContinueNudge, core.DefaultContinueNudge)
	orNumber(&cfg.HistoryLimit, session.WindowMessages)
	orNumber(&cfg.HistoryCacheSize, 4096)
	orNumber(&cfg.JobMaxAttempts, def.Scheduler.MaxAttempts)
	orNumber(&cfg.MaxSendsInDoubt, def.Scheduler.MaxSendsInDoubt)
	orNumber(&cfg.MaxTurns, turns.DefaultMaxTurns)
	orNumber(&cfg.LateGrace, def.Scheduler.LateGrace)
	orNumber(&cfg.JobLease, def.Scheduler.JobLease)
	orNumber(&cfg.StaleAfter, def.Runs.StaleAfter)
	orNumber(&cfg.HeartbeatInterval, min(cfg.StaleAfter/4, 5*time.Second))
	orNumber(&cfg.ReapInterval, min(cfg.StaleAfter/4, 30*time.Second))
	orNumber(&cfg.TurnTimeout, def.Runs.TurnTimeout)
	orNumber(&cfg.PollInterval, 2*time.Second)
	orNumber(&cfg.TypingInterval, 4*time.Second)
	orNumber(&cfg.Media.MaxBytes, int64(def.Media.MaxBytes))
	orNumber(&cfg.Media.MaxImagePx, def.Media.MaxImagePx)
	orNumber(&cfg.Media.MaxDocumentChars, def.Media.MaxDocumentChars)
	orNumber(&cfg.Media.MaxPerTurn, def.Media.MaxPerTurn)
	return nil
}

// orText sets *s to def when it is empty.
func orText(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// orNumber sets *n to def when it is not positive.
func orNumber[T int | int64 | time.Duration](n *T, def T) {
	if *n <= 0 {
		*n = def
	}
}

// noMetrics records nothing.
type noMetrics struct{}

func (noMetrics) Fired(core.JobKind, time.Duration)                        {}
func (noMetrics) SendFailed(core.Platform)                                 {}
func (noMetrics) Sent(core.Platform, string)                               {}
func (noMetrics) TurnFinished(core.RunKind, core.RunStatus, time.Duration) {}
func (noMetrics) ModelCalled(time.Duration, llm.Usage, error)              {}
