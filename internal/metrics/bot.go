package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/promise"
)

// Bot is one bot's view of the metrics: every series it writes carries
// bot="ID". It implements core.Metrics and core.LimitMetrics; Finished is
// the model client's OnFinish, MCPCalled the MCP manager's Observe. Its
// label is curried once, and the few series whose other labels are known
// up front are looked up once, so that a turn pays no more than it did
// with one bot.
type Bot struct {
	lateness  *prometheus.HistogramVec
	failures  *prometheus.CounterVec
	sends     *prometheus.CounterVec
	turns     *prometheus.CounterVec
	turnTime  *prometheus.HistogramVec
	mcpCalls  *prometheus.CounterVec
	mcpTime   *prometheus.HistogramVec
	limited   *prometheus.CounterVec
	promises  *prometheus.CounterVec
	llmOK     prometheus.Observer
	llmFailed prometheus.Observer
	prompt    prometheus.Counter
	completed prometheus.Counter
	// finishes holds a counter per known finish reason and "other"; it is
	// only read after ForBot.
	finishes map[string]prometheus.Counter
}

var (
	_ core.Metrics      = (*Bot)(nil)
	_ core.LimitMetrics = (*Bot)(nil)
)

// finishReasons are the finish_reason values counted as themselves.
var finishReasons = []string{"stop", "length", "tool_calls", "content_filter", "function_call", "unknown", "other"}

// ForBot is bot id's view of the metrics; each of its methods is safe
// for concurrent use.
func (m *Registry) ForBot(id string) *Bot {
	l := prometheus.Labels{botLabel: id}
	b := &Bot{
		lateness: curried(m.lateness, l),
		failures: m.failures.MustCurryWith(l),
		sends:    m.sends.MustCurryWith(l),
		turns:    m.turns.MustCurryWith(l),
		turnTime: curried(m.turnTime, l),
		mcpCalls: m.mcpCalls.MustCurryWith(l),
		mcpTime:  curried(m.mcpTime, l),
		limited:  m.limited.MustCurryWith(l),
		promises: m.promises.MustCurryWith(l),
		// Known at 0 from the start, for rate() and alerts.
		llmOK:     m.llmTime.WithLabelValues(id, "ok"),
		llmFailed: m.llmTime.WithLabelValues(id, "error"),
		prompt:    m.llmTokens.WithLabelValues(id, "prompt"),
		completed: m.llmTokens.WithLabelValues(id, "completion"),
		finishes:  make(map[string]prometheus.Counter, len(finishReasons)),
	}
	for _, r := range finishReasons {
		b.finishes[r] = m.finishes.WithLabelValues(id, r)
	}
	for _, o := range []string{"caught", promise.KeptScheduled, promise.KeptFollowUp, promise.KeptReworded, promise.Unkept} {
		b.promises.WithLabelValues(o)
	}
	for _, l := range []string{core.LimitMessagesPerMinute, core.LimitTurnsPerDay, core.LimitTokensPerDay} {
		b.limited.WithLabelValues(l)
	}
	return b
}

// curried is v with l's values set. It stays a *HistogramVec: through the
// ObserverVec interface, every observation's label values would escape to
// the heap.
func curried(v *prometheus.HistogramVec, l prometheus.Labels) *prometheus.HistogramVec {
	return v.MustCurryWith(l).(*prometheus.HistogramVec)
}

// Finished counts a model answer by its finish reason. The label is the
// server's word, so a server that invents reasons cannot grow the series
// without bound: anything unknown counts as "other".
func (b *Bot) Finished(_, reason string) {
	c, ok := b.finishes[reason]
	if !ok {
		c = b.finishes["other"]
	}
	c.Inc()
}

// Fired observes a job's lateness.
func (b *Bot) Fired(kind core.JobKind, late time.Duration) {
	b.lateness.WithLabelValues(string(kind)).Observe(max(late, 0).Seconds())
}

// SendFailed counts a failed scheduled send.
func (b *Bot) SendFailed(p core.Platform) {
	b.failures.WithLabelValues(string(p)).Inc()
}

// Sent counts a send by platform and result.
func (b *Bot) Sent(p core.Platform, result string) {
	b.sends.WithLabelValues(string(p), result).Inc()
}

// TurnFinished counts a finished run and observes how long it ran.
func (b *Bot) TurnFinished(kind core.RunKind, status core.RunStatus, took time.Duration) {
	b.turns.WithLabelValues(string(kind), string(status)).Inc()
	b.turnTime.WithLabelValues(string(kind)).Observe(max(took, 0).Seconds())
}

// ModelCalled observes a model call's latency and counts its tokens.
func (b *Bot) ModelCalled(took time.Duration, usage llm.Usage, err error) {
	o := b.llmOK
	if err != nil {
		o = b.llmFailed
	}
	o.Observe(took.Seconds())
	b.prompt.Add(float64(usage.PromptTokens))
	b.completed.Add(float64(usage.CompletionTokens))
}

// Limited counts a message a per-user limit held.
func (b *Bot) Limited(limit string) {
	b.limited.WithLabelValues(limit).Inc()
}

// MCPCalled counts an MCP tool call and observes how long it took.
func (b *Bot) MCPCalled(server, tool, outcome string, took time.Duration) {
	b.mcpCalls.WithLabelValues(server, tool, outcome).Inc()
	b.mcpTime.WithLabelValues(server, tool).Observe(max(took, 0).Seconds())
}

// PromiseCounted counts a promise caught in a reply, or how one was kept.
func (b *Bot) PromiseCounted(outcome string) {
	b.promises.WithLabelValues(outcome).Inc()
}
