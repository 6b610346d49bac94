package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine/turns"
)

// withDefaults fills in every field of cfg left zero; the session limits
// give the history window's default. It refuses a policy it does not
// know.
func withDefaults(cfg *Config, session core.SessionLimits) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = core.SystemClock{}
	}
	if cfg.Owner == "" {
		cfg.Owner = newOwnerID()
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
	switch cfg.DuringGeneration {
	case "":
		cfg.DuringGeneration = core.BusyQueue
	case core.BusyQueue, core.BusyReject, core.BusyRestart:
	default:
		return fmt.Errorf("dispatcher: during_generation %q: want reject, queue or restart", cfg.DuringGeneration)
	}
	orText(&cfg.FailureMessage, core.DefaultFailureMessage)
	orText(&cfg.BusyMessage, core.DefaultBusyMessage)
	orText(&cfg.ContinueNudge, core.DefaultContinueNudge)
	orNumber(&cfg.HistoryLimit, session.WindowMessages)
	orNumber(&cfg.HistoryCacheSize, 4096)
	orNumber(&cfg.JobMaxAttempts, 3)
	orNumber(&cfg.MaxSendsInDoubt, 4)
	orNumber(&cfg.MaxTurns, turns.DefaultMaxTurns)
	orNumber(&cfg.LateGrace, 24*time.Hour)
	orNumber(&cfg.JobLease, time.Minute)
	orNumber(&cfg.StaleAfter, 2*time.Minute)
	orNumber(&cfg.HeartbeatInterval, min(cfg.StaleAfter/4, 5*time.Second))
	orNumber(&cfg.ReapInterval, min(cfg.StaleAfter/4, 30*time.Second))
	orNumber(&cfg.TurnTimeout, 5*time.Minute)
	orNumber(&cfg.PollInterval, 2*time.Second)
	orNumber(&cfg.TypingInterval, 4*time.Second)
	cfg.Media.Defaults()
	return nil
}

// orText sets *s to def when it is empty.
func orText(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// orNumber sets *n to def when it is not positive.
func orNumber[T int | time.Duration](n *T, def T) {
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
