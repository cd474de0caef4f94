package agent

import (
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the agent's Prometheus series. Every label combination is created up front so
// that dashboards and alerts see zeros instead of missing series.
type Metrics struct {
	Requests        *prometheus.CounterVec   // result
	StageDuration   *prometheus.HistogramVec // stage
	StageFailures   *prometheus.CounterVec   // stage, error_code
	OffsetsWritten  *prometheus.CounterVec   // type
	OffsetsWiped    *prometheus.CounterVec   // type
	RequestDuration prometheus.Histogram
	InFlight        prometheus.Gauge
	InFlightBytes   prometheus.Gauge
	RequestLag      *lagGauge
	Retries         *prometheus.CounterVec // reason
	BuildInfo       *prometheus.GaugeVec
	// MaxInflightBytes is the configured bound of InFlightBytes, for panels that compare them.
	MaxInflightBytes prometheus.Gauge
	// ResultsUnpublished counts requests that finished but whose result the agent gave up
	// publishing: shutdown cut it off (the request stays uncommitted and is redelivered).
	ResultsUnpublished prometheus.Counter
	// ResultsPending is the number of results the broker refuses, even as minimal results,
	// that are being tried again; each holds its request, and its partition's commits, back.
	ResultsPending prometheus.Gauge
	// CleanupsIncomplete counts failed requests whose cleanup could not undo everything they
	// wrote (the result's cleanup names what is left).
	CleanupsIncomplete prometheus.Counter
}

// ErrorCodes are the error_code label values of offsetagent_stage_failures_total: the HTTP
// statuses of Connect's REST API that failed results carry (docs/operations.md,
// "Troubleshooting by failing step"); any other code counts as ErrorCodeOther.
var ErrorCodes = []string{"400", "403", "408", "409", "500", ErrorCodeOther}

// ErrorCodeOther is the error_code label of a failure whose code is not in ErrorCodes.
const ErrorCodeOther = "other"

// errorCodeLabel maps a failed result's error code to its bounded label value.
func errorCodeLabel(code int) string {
	s := strconv.Itoa(code)
	for _, c := range ErrorCodes[:len(ErrorCodes)-1] {
		if c == s {
			return s
		}
	}
	return ErrorCodeOther
}

// Result label values of offsetagent_requests_total.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
	ResultPlanned   = "planned"
	ResultDuplicate = "duplicate"
)

// NewMetrics registers the agent's metrics on reg. version is the build's version string.
func NewMetrics(reg prometheus.Registerer, version string) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		Requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "offsetagent_requests_total",
			Help: "Requests finished, by result (succeeded, failed, planned for dry runs, duplicate for redeliveries that were not run again).",
		}, []string{"result"}),
		StageDuration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "offsetagent_stage_duration_seconds",
			Help:    "Duration of each executed stage of a request.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"stage"}),
		StageFailures: f.NewCounterVec(prometheus.CounterOpts{
			Name: "offsetagent_stage_failures_total",
			Help: "Requests that failed, by the stage that failed and the result's error code (Connect's HTTP status: 400, 403, 408, 409, 500, or other).",
		}, []string{"stage", "error_code"}),
		OffsetsWritten: f.NewCounterVec(prometheus.CounterOpts{
			Name: "offsetagent_offsets_written_total",
			Help: "Initial offsets written, by connector type (source records or sink group partitions).",
		}, []string{"type"}),
		OffsetsWiped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "offsetagent_offsets_wiped_total",
			Help: "Existing offsets wiped before writing initial offsets, by connector type.",
		}, []string{"type"}),
		RequestDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "offsetagent_request_duration_seconds",
			Help:    "Time from a request being received to its result being acknowledged by the broker.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		InFlight: f.NewGauge(prometheus.GaugeOpts{
			Name: "offsetagent_requests_in_flight",
			Help: "Requests received and not yet finished.",
		}),
		InFlightBytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "offsetagent_requests_in_flight_bytes",
			Help: "Memory counted for the requests received and not yet finished (4 times their records' size), against OFFSETAGENT_MAX_INFLIGHT_BYTES (a request weighing more counts as the bound).",
		}),
		Retries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "offsetagent_retries_total",
			Help: "Transient errors retried, by reason.",
		}, []string{"reason"}),
		BuildInfo: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "offsetagent_build_info",
			Help: "Always 1; labels carry the build's version and Go version.",
		}, []string{"version", "goversion"}),
	}
	m.createLabels(version)
	m.MaxInflightBytes = f.NewGauge(prometheus.GaugeOpts{
		Name: "offsetagent_max_inflight_bytes",
		Help: "The configured OFFSETAGENT_MAX_INFLIGHT_BYTES: the bound of offsetagent_requests_in_flight_bytes.",
	})
	m.ResultsUnpublished = f.NewCounter(prometheus.CounterOpts{
		Name: "offsetagent_results_unpublished_total",
		Help: "Requests whose result the agent gave up publishing because shutdown cut it off: they stay uncommitted and are redelivered.",
	})
	m.ResultsPending = f.NewGauge(prometheus.GaugeOpts{
		Name: "offsetagent_results_pending",
		Help: "Results the broker refuses (too large, invalid, not authorised), even as minimal results, being tried again: each keeps its request, and every later one of its partition, uncommitted until it is out.",
	})
	m.CleanupsIncomplete = f.NewCounter(prometheus.CounterOpts{
		Name: "offsetagent_cleanups_incomplete_total",
		Help: "Failed requests whose cleanup could not undo everything they wrote (a rollback that could not restore the previous offsets or config records; the result's cleanup.left says what remains).",
	})
	m.RequestLag = &lagGauge{desc: prometheus.NewDesc("offsetagent_request_lag",
		"Records in the request topic not yet committed by the agents' consumer group, summed over all partitions (every replica reports the group's lag: aggregate with max). Absent while it cannot be measured.",
		nil, nil)}
	reg.MustRegister(m.RequestLag)
	return m
}

// createLabels creates every label combination of the vectors up front.
func (m *Metrics) createLabels(version string) {
	for _, r := range []string{ResultSucceeded, ResultFailed, ResultPlanned, ResultDuplicate} {
		m.Requests.WithLabelValues(r)
	}
	// The stage label values are the steps of a request, the reason values the transient
	// reasons of the error classifier.
	for _, s := range handlers.StepNames() {
		m.StageDuration.WithLabelValues(s)
		for _, c := range ErrorCodes {
			m.StageFailures.WithLabelValues(s, c)
		}
	}
	for _, t := range []string{"source", "sink"} {
		m.OffsetsWritten.WithLabelValues(t)
		m.OffsetsWiped.WithLabelValues(t)
	}
	for _, r := range kafkaio.TransientReasons() {
		m.Retries.WithLabelValues(string(r))
	}
	m.BuildInfo.WithLabelValues(version, runtime.Version()).Set(1)
}

// lagStale is how long a measurement of the request lag is served: past it (the last
// measurements failed), the series is left out of the scrape, and Prometheus marks it stale,
// rather than showing a lag that no longer is.
const lagStale = 3 * lagInterval

// lagGauge is offsetagent_request_lag: the last measured lag, served only while it is recent.
type lagGauge struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	lag  float64
	at   time.Time // of the last successful measurement; zero before it and after a failure
}

// Set records a measurement taken now.
func (g *lagGauge) Set(lag float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lag, g.at = lag, time.Now()
}

// Unknown records that the lag could not be measured: the series goes away at once.
func (g *lagGauge) Unknown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.at = time.Time{}
}

// Describe implements prometheus.Collector.
func (g *lagGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *lagGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	lag, at := g.lag, g.at
	g.mu.Unlock()
	if at.IsZero() || time.Since(at) > lagStale {
		return
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, lag)
}

// stateGauges registers the gauges read from the agent's state at scrape time: readiness,
// the age of the oldest request being worked on and the size of the dedupe memory.
func stateGauges(reg prometheus.Registerer, ready func() bool, oldestRequest func() time.Duration, dedupeEntries func() int) {
	f := promauto.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "offsetagent_ready",
		Help: "1 while /readyz answers 200 (views loaded, group joined, not shutting down), else 0.",
	}, func() float64 {
		if ready() {
			return 1
		}
		return 0
	})
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "offsetagent_oldest_request_age_seconds",
		Help: "How long the longest-running request has been worked on (0 when none is): a lane stuck on one request shows here.",
	}, func() float64 { return oldestRequest().Seconds() })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "offsetagent_dedupe_entries",
		Help: "Requests remembered as answered (OFFSETAGENT_DEDUPE_WINDOW, OFFSETAGENT_DEDUPE_MAX_ENTRIES), so a redelivery is not run again.",
	}, func() float64 { return float64(dedupeEntries()) })
}
