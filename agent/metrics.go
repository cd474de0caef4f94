package agent

import (
	"runtime"

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
			Help: "Size of the request records received and not yet finished, counted against OFFSETAGENT_MAX_INFLIGHT_BYTES (a record larger than that counts as the bound).",
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
	return m
}
