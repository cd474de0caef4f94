package agent

import (
	"runtime"
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
	StageFailures   *prometheus.CounterVec   // stage
	OffsetsWritten  *prometheus.CounterVec   // type
	OffsetsWiped    *prometheus.CounterVec   // type
	RequestDuration prometheus.Histogram
	InFlight        prometheus.Gauge
	InFlightBytes   prometheus.Gauge
	RequestLag      prometheus.Gauge
	Retries         *prometheus.CounterVec // reason
	BuildInfo       *prometheus.GaugeVec
	// MaxInflightBytes is the configured bound of InFlightBytes, for panels that compare them.
	MaxInflightBytes prometheus.Gauge
	// ResultsUnpublished counts requests that finished but whose result the agent gave up
	// publishing (shutdown cut it off, it could not be encoded, or the broker refused it and
	// the minimal result too).
	ResultsUnpublished prometheus.Counter
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
			Help: "Requests that failed, by the stage that failed.",
		}, []string{"stage"}),
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
		RequestLag: f.NewGauge(prometheus.GaugeOpts{
			Name: "offsetagent_request_lag",
			Help: "Records in the request topic not yet committed by the agents' consumer group, summed over all partitions (every replica reports the group's lag: aggregate with max).",
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
	for _, r := range []string{ResultSucceeded, ResultFailed, ResultPlanned, ResultDuplicate} {
		m.Requests.WithLabelValues(r)
	}
	// The stage label values are the steps of a request, the reason values the transient
	// reasons of the error classifier.
	for _, s := range handlers.StepNames() {
		m.StageDuration.WithLabelValues(s)
		m.StageFailures.WithLabelValues(s)
	}
	for _, t := range []string{"source", "sink"} {
		m.OffsetsWritten.WithLabelValues(t)
		m.OffsetsWiped.WithLabelValues(t)
	}
	for _, r := range kafkaio.TransientReasons() {
		m.Retries.WithLabelValues(string(r))
	}
	m.BuildInfo.WithLabelValues(version, runtime.Version()).Set(1)
	m.MaxInflightBytes = f.NewGauge(prometheus.GaugeOpts{
		Name: "offsetagent_max_inflight_bytes",
		Help: "The configured OFFSETAGENT_MAX_INFLIGHT_BYTES: the bound of offsetagent_requests_in_flight_bytes.",
	})
	m.ResultsUnpublished = f.NewCounter(prometheus.CounterOpts{
		Name: "offsetagent_results_unpublished_total",
		Help: "Requests whose result the agent gave up publishing: cut off by shutdown or not encodable (they stay uncommitted and are redelivered), or refused by the broker even as a minimal result (committed and not run again; each logged at ERROR with its request id).",
	})
	return m
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
