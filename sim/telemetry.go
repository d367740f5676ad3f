package sim

import (
	"slices"
	"sync"

	"github.com/rlrec/rlrec/events"
)

// Telemetry the simulated runtime reports, one row per series. Window rows
// cover the samples since the previous window snapshot; the session row
// covers the whole session. count and avg are exact; p50/p95/p99 are over
// the most recent windowSamples (window) or sessionSamples (session)
// samples.
const (
	windowSamples  = 256
	sessionSamples = 4096
)

// series indices, in the row order of every snapshot.
const (
	seriesPredictLatency = iota
	seriesStepLatency
	seriesObservationBytes
	seriesActionBytes
	seriesLaneSteps
	numSeries
)

type seriesDef struct {
	op, metric string
	model      bool // component is the model (else the env)
	kind       events.MetricKind
}

var seriesDefs = [numSeries]seriesDef{
	seriesPredictLatency:   {"predict", "latency", true, events.MetricDurationMs},
	seriesStepLatency:      {"step", "latency", false, events.MetricDurationMs},
	seriesObservationBytes: {"step", "observation_bytes", false, events.MetricBytes},
	seriesActionBytes:      {"predict", "action_bytes", true, events.MetricBytes},
	seriesLaneSteps:        {"step", "lane_steps", false, events.MetricCount},
}

type stat struct {
	count uint64
	sum   float64
	ring  []float64
	next  int
}

func (s *stat) add(v float64) {
	s.count++
	s.sum += v
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, v)
		return
	}
	s.ring[s.next] = v
	s.next = (s.next + 1) % len(s.ring)
}

func (s *stat) reset() {
	s.count, s.sum, s.ring, s.next = 0, 0, s.ring[:0], 0
}

// meter accumulates a session's telemetry. record runs on the session's
// goroutine, snapshots on the telemetry goroutine.
type meter struct {
	route   events.RuntimeEnvContext
	mu      sync.Mutex
	window  [numSeries]stat
	session [numSeries]stat
	scratch []float64
}

func newMeter(route events.RuntimeEnvContext) *meter {
	m := &meter{route: route, scratch: make([]float64, 0, sessionSamples)}
	for i := range numSeries {
		m.window[i].ring = make([]float64, 0, windowSamples)
		m.session[i].ring = make([]float64, 0, sessionSamples)
	}
	return m
}

// record adds one batch step's samples.
func (m *meter) record(predictMs, stepMs float64, obsBytes, actBytes, lanes int) {
	v := [numSeries]float64{predictMs, stepMs, float64(obsBytes), float64(actBytes), float64(lanes)}
	m.mu.Lock()
	for i := range numSeries {
		m.window[i].add(v[i])
		m.session[i].add(v[i])
	}
	m.mu.Unlock()
}

// snapshot returns the window snapshot (and starts a new window) or the
// session snapshot. Series with no samples are left out.
func (m *meter) snapshot(h events.TelemetryHorizon) events.Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	snap := events.Snapshot{Horizon: h}
	for i := range numSeries {
		s := &m.session[i]
		if h == events.HorizonWindow {
			s = &m.window[i]
		}
		if s.count == 0 {
			continue
		}
		d := seriesDefs[i]
		comp := m.route.EnvComponentID
		if d.model {
			comp = m.route.ModelComponentID
		}
		m.scratch = append(m.scratch[:0], s.ring...)
		slices.Sort(m.scratch)
		snap.Rows = append(snap.Rows, events.TelemetryRow{
			Op: d.op, Component: comp, Metric: d.metric, Kind: d.kind,
			Count: s.count, Avg: s.sum / float64(s.count),
			P50: quantile(m.scratch, 0.50), P95: quantile(m.scratch, 0.95), P99: quantile(m.scratch, 0.99),
		})
		if h == events.HorizonWindow {
			s.reset()
		}
	}
	return snap
}

// quantile returns the nearest-rank q-quantile of sorted.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
