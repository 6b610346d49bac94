package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/parleybot/parley/core"
)

// metrics is what GET /metrics serves, in the Prometheus text format, from
// a registry of its own (no global state): jobs by kind and status, read
// from the database at each scrape; how late jobs fired; scheduled sends
// that failed, by platform; and the Go runtime's and process's figures.
type metrics struct {
	reg      *prometheus.Registry
	lateness *prometheus.HistogramVec
	failures *prometheus.CounterVec
}

var _ core.JobMetrics = (*metrics)(nil)

// jobCounter reads the jobs by kind and status.
type jobCounter interface {
	JobCounts(ctx context.Context) (map[[2]string]int64, error)
}

func newMetrics(jobs jobCounter, log *slog.Logger) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_job_fire_lateness_seconds",
			Help:    "How long after its due time a job went out.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_scheduled_send_errors_total",
			Help: "Scheduled sends that failed, by platform.",
		}, []string{"platform"}),
	}
	m.reg.MustRegister(m.lateness, m.failures, &jobsCollector{jobs: jobs, log: log},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Fired observes a job's lateness.
func (m *metrics) Fired(kind core.JobKind, late time.Duration) {
	m.lateness.WithLabelValues(string(kind)).Observe(max(late, 0).Seconds())
}

// SendFailed counts a failed scheduled send.
func (m *metrics) SendFailed(p core.Platform) {
	m.failures.WithLabelValues(string(p)).Inc()
}

// handler serves the registry.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// jobsCollector reads the job counts at scrape time: pending jobs stay in
// the database, not in memory.
type jobsCollector struct {
	jobs jobCounter
	log  *slog.Logger
}

var jobsDesc = prometheus.NewDesc("parley_jobs", "Jobs by kind and status.", []string{"kind", "status"}, nil)

func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.jobs.JobCounts(ctx)
	if err != nil {
		c.log.Warn("metrics: counting jobs", "err", err)
		return
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
