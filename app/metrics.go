package app

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// metrics is what GET /metrics serves, in the Prometheus text format, from
// a registry of its own (no global state), every name prefixed parley_:
// turns and how long they ran; model calls, their latency and tokens;
// sends by platform and result; how late jobs fired; MCP tool calls by
// server, tool and outcome, with durations; the queues (runs
// queued and running, jobs due) and jobs by kind and status, both read
// from the database at each scrape; and the Go runtime's and process's
// figures. What a bot does carries its id as the label bot; a bot writes
// through its own view (forBot), never through metrics itself.
type metrics struct {
	reg       *prometheus.Registry
	lateness  *prometheus.HistogramVec
	failures  *prometheus.CounterVec
	sends     *prometheus.CounterVec
	turns     *prometheus.CounterVec
	turnTime  *prometheus.HistogramVec
	llmTime   *prometheus.HistogramVec
	llmTokens *prometheus.CounterVec
	finishes  *prometheus.CounterVec
	mcpCalls  *prometheus.CounterVec
	mcpTime   *prometheus.HistogramVec
	limited   *prometheus.CounterVec
	log       *slog.Logger
}

// botLabel names the bot a series belongs to: bots[].id, "default" for a
// config without bots:.
const botLabel = "bot"

// byBot is labels with the bot's first.
func byBot(labels ...string) []string {
	return append([]string{botLabel}, labels...)
}

// metricsStore reads what the scrape-time collectors report.
type metricsStore interface {
	JobCounts(ctx context.Context) (map[[2]string]int64, error)
	QueueDepth(ctx context.Context, now time.Time) (map[string]int64, error)
}

// secondsBuckets spans a fast send to a slow model call.
var secondsBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

func newMetrics(log *slog.Logger) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		log: log,
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_job_fire_lateness_seconds",
			Help:    "How long after its due time a job went out.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		}, byBot("kind")),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_scheduled_send_errors_total",
			Help: "Scheduled sends that failed, by platform.",
		}, byBot("platform")),
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_sends_total",
			Help: "Messages sent to platforms (replies, notices, scheduled and routed messages), by platform and result (ok, error, permanent).",
		}, byBot("platform", "result")),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_turns_total",
			Help: "Runs finished, by kind (user_turn, cron_turn, proactive, continue) and status.",
		}, byBot("kind", "status")),
		turnTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_turn_duration_seconds",
			Help:    "How long a run ran, from its claim to its end.",
			Buckets: secondsBuckets,
		}, byBot("kind")),
		llmTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_llm_request_duration_seconds",
			Help:    "Latency of a turn's model calls (tool rounds included), by result (ok, error).",
			Buckets: secondsBuckets,
		}, byBot("result")),
		llmTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_llm_tokens_total",
			Help: "Tokens the model reported for turns, by type (prompt, completion).",
		}, byBot("type")),
	}
	m.finishes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_llm_finish_total",
		Help: "Model answers by finish_reason (stop, length, tool_calls, content_filter, ...), every call counted: turns, tool rounds, summaries.",
	}, byBot("reason"))
	// The tool label is the server's own tool name: the allow-list and
	// the servers the owner configured bound it.
	m.mcpCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_mcp_tool_calls_total",
		Help: "MCP tool calls by server, tool and outcome (ok, tool_error, invalid_arguments, timeout, unavailable, failed).",
	}, byBot("server", "tool", "outcome"))
	m.mcpTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "parley_mcp_tool_call_duration_seconds",
		Help:    "How long an MCP tool call took, by server and tool.",
		Buckets: secondsBuckets,
	}, byBot("server", "tool"))
	m.limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_limited_messages_total",
		Help: "Messages held by a per-user limit (bot.limits): stored, no turn, by limit (messages_per_minute, turns_per_day, tokens_per_day).",
	}, byBot("limit"))
	m.reg.MustRegister(m.lateness, m.failures, m.sends, m.turns, m.turnTime, m.llmTime, m.llmTokens, m.finishes, m.mcpCalls, m.mcpTime, m.limited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchStore adds the figures read from the database at each scrape.
func (m *metrics) watchStore(st metricsStore) {
	m.reg.MustRegister(&storeCollector{st: st, log: m.log})
}

// botMetrics is one bot's view of the metrics: every series it writes
// carries bot="ID". Its label is curried once, and the few series whose
// other labels are known up front are looked up once, so that a turn pays
// no more than it did with one bot.
type botMetrics struct {
	lateness  *prometheus.HistogramVec
	failures  *prometheus.CounterVec
	sends     *prometheus.CounterVec
	turns     *prometheus.CounterVec
	turnTime  *prometheus.HistogramVec
	mcpCalls  *prometheus.CounterVec
	mcpTime   *prometheus.HistogramVec
	limited   *prometheus.CounterVec
	llmOK     prometheus.Observer
	llmFailed prometheus.Observer
	prompt    prometheus.Counter
	completed prometheus.Counter
	// finishes holds a counter per known finish reason and "other"; it is
	// only read after forBot.
	finishes map[string]prometheus.Counter
}

var (
	_ core.Metrics      = (*botMetrics)(nil)
	_ core.LimitMetrics = (*botMetrics)(nil)
)

// finishReasons are the finish_reason values counted as themselves.
var finishReasons = []string{"stop", "length", "tool_calls", "content_filter", "function_call", "unknown", "other"}

// forBot is bot id's view of the metrics.
func (m *metrics) forBot(id string) *botMetrics {
	l := prometheus.Labels{botLabel: id}
	b := &botMetrics{
		lateness: curried(m.lateness, l),
		failures: m.failures.MustCurryWith(l),
		sends:    m.sends.MustCurryWith(l),
		turns:    m.turns.MustCurryWith(l),
		turnTime: curried(m.turnTime, l),
		mcpCalls: m.mcpCalls.MustCurryWith(l),
		mcpTime:  curried(m.mcpTime, l),
		limited:  m.limited.MustCurryWith(l),
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
func (b *botMetrics) Finished(_, reason string) {
	c, ok := b.finishes[reason]
	if !ok {
		c = b.finishes["other"]
	}
	c.Inc()
}

// Fired observes a job's lateness.
func (b *botMetrics) Fired(kind core.JobKind, late time.Duration) {
	b.lateness.WithLabelValues(string(kind)).Observe(max(late, 0).Seconds())
}

// SendFailed counts a failed scheduled send.
func (b *botMetrics) SendFailed(p core.Platform) {
	b.failures.WithLabelValues(string(p)).Inc()
}

// Sent counts a send by platform and result.
func (b *botMetrics) Sent(p core.Platform, result string) {
	b.sends.WithLabelValues(string(p), result).Inc()
}

// TurnFinished counts a finished run and observes how long it ran.
func (b *botMetrics) TurnFinished(kind core.RunKind, status core.RunStatus, took time.Duration) {
	b.turns.WithLabelValues(string(kind), string(status)).Inc()
	b.turnTime.WithLabelValues(string(kind)).Observe(max(took, 0).Seconds())
}

// ModelCalled observes a model call's latency and counts its tokens.
func (b *botMetrics) ModelCalled(took time.Duration, usage llm.Usage, err error) {
	o := b.llmOK
	if err != nil {
		o = b.llmFailed
	}
	o.Observe(took.Seconds())
	b.prompt.Add(float64(usage.PromptTokens))
	b.completed.Add(float64(usage.CompletionTokens))
}

// Limited counts a message a per-user limit held.
func (b *botMetrics) Limited(limit string) {
	b.limited.WithLabelValues(limit).Inc()
}

// MCPCalled counts an MCP tool call and observes how long it took.
func (b *botMetrics) MCPCalled(server, tool, outcome string, took time.Duration) {
	b.mcpCalls.WithLabelValues(server, tool, outcome).Inc()
	b.mcpTime.WithLabelValues(server, tool).Observe(max(took, 0).Seconds())
}

// handler serves the registry.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// storeCollector reads the queues and job counts at scrape time: pending
// work stays in the database, not in memory. Its figures are the whole
// database's, without a bot label; once conversations carry their bot,
// the two queries could group by it too.
type storeCollector struct {
	st  metricsStore
	log *slog.Logger
}

var (
	jobsDesc  = prometheus.NewDesc("parley_jobs", "Jobs by kind and status.", []string{"kind", "status"}, nil)
	queueDesc = prometheus.NewDesc("parley_queue_depth",
		"Work waiting or under way: runs queued and running, jobs due and not yet taken.", []string{"queue"}, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- queueDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.st.JobCounts(ctx)
	if err != nil {
		c.log.Warn("metrics: counting jobs", "err", err)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	depth, err := c.st.QueueDepth(ctx, time.Now())
	if err != nil {
		c.log.Warn("metrics: reading the queues", "err", err)
	}
	for q, n := range depth {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), q)
	}
}
