// Package metrics is what GET /metrics serves: a Prometheus registry of
// its own (no global state) with Parley's figures, every name prefixed
// parley_. What a bot does is counted through that bot's view (ForBot),
// whose series carry its id as the label bot; the database's and the
// spool's figures are the process's.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is what GET /metrics serves, in the Prometheus text format:
// turns and how long they ran; model calls, their latency and tokens;
// sends by platform and result; how late jobs fired; MCP tool calls by
// server, tool and outcome, with durations; the queues (runs
// queued and running, jobs due) and jobs by kind and status, both read
// from the database at each scrape; and the Go runtime's and process's
// figures. What a bot does carries its id as the label bot; a bot writes
// through its own view (ForBot), never through the Registry itself.
type Registry struct {
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
	promises  *prometheus.CounterVec
	log       *slog.Logger
}

// botLabel names the bot a series belongs to: bots[].id, "default" for a
// config without bots:.
const botLabel = "bot"

// byBot is labels with the bot's first.
func byBot(labels ...string) []string {
	return append([]string{botLabel}, labels...)
}

// Store reads what the scrape-time collectors report.
type Store interface {
	JobCounts(ctx context.Context) (map[[2]string]int64, error)
	QueueDepth(ctx context.Context, now time.Time) (map[string]int64, error)
}

// secondsBuckets spans a fast send to a slow model call.
var secondsBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// New is a Registry with the Go runtime's and the process's figures; log
// hears of a scrape that could not read the database.
func New(log *slog.Logger) *Registry {
	m := &Registry{
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
	m.promises = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_promises_total",
		Help: "Replies that promised a later message without scheduling it (bot.promise_check), by outcome: caught, then scheduled, follow-up, reworded or unkept.",
	}, byBot("outcome"))
	m.reg.MustRegister(m.lateness, m.failures, m.sends, m.turns, m.turnTime, m.llmTime, m.llmTokens, m.finishes, m.mcpCalls, m.mcpTime, m.limited, m.promises,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchStore adds the figures read from the database at each scrape.
func (m *Registry) WatchStore(st Store) {
	m.reg.MustRegister(&storeCollector{st: st, log: m.log})
}

// Handler serves the registry.
func (m *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// WatchSpool reports bot's inbound spool's backlog, bytes() at each
// scrape, until the returned function is called (the bot is gone).
func (m *Registry) WatchSpool(bot string, bytes func() float64) (stop func()) {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "parley_inbound_spooled_bytes",
		Help:        "Bytes of inbound messages kept on local disk while the store cannot take them (store.spool).",
		ConstLabels: prometheus.Labels{botLabel: bot},
	}, bytes)
	m.reg.MustRegister(g)
	return func() { m.reg.Unregister(g) }
}

// WatchModel reports bot's model requests waiting for their turn (a slot
// of the account's llm.max_concurrency, a per-minute budget, a 429 pause)
// and in flight, read at each scrape, until the returned function is
// called (the bot is gone).
func (m *Registry) WatchModel(bot string, waiting, inFlight func() float64) (stop func()) {
	labels := prometheus.Labels{botLabel: bot}
	gs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "parley_llm_requests_waiting",
			Help:        "Model requests waiting for their turn: a slot of llm.max_concurrency, a per-minute budget, a 429's pause.",
			ConstLabels: labels}, waiting),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "parley_llm_requests_in_flight",
			Help: "Model requests sent and not yet answered.", ConstLabels: labels}, inFlight),
	}
	for _, g := range gs {
		m.reg.MustRegister(g)
	}
	return func() {
		for _, g := range gs {
			m.reg.Unregister(g)
		}
	}
}

// Forget drops every series of bot id: a reload removed it.
func (m *Registry) Forget(id string) {
	l := prometheus.Labels{botLabel: id}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.lateness, m.failures, m.sends, m.turns, m.turnTime, m.llmTime, m.llmTokens, m.finishes, m.mcpCalls, m.mcpTime, m.limited, m.promises,
	} {
		v.DeletePartialMatch(l)
	}
}

// storeCollector reads the queues and job counts at scrape time: pending
// work stays in the database, not in memory. Its figures are the whole
// database's, without a bot label; once conversations carry their bot,
// the two queries could group by it too.
type storeCollector struct {
	st  Store
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
