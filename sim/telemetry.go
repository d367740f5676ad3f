package sim

import (
	"math"
	"slices"
	"sync"

	"github.com/rlrec/rlrec/events"
)

// Telemetry the simulated runtime reports, as rlmesh's driver does
// (crates/rlmesh-runtime/src/telemetry in rlmesh v0.1.0-rc.5): one series
// per (op, component, metric), each sampled into a window and a session
// reservoir of reservoirSize samples (Vitter's Algorithm R, with rlmesh's
// generator: xorshift64* seeded 0x9E3779B97F4A7C15 per reservoir, running
// on across window clears, slot = next % seen). A row's count is every
// sample seen in its horizon; avg (summed in reservoir order) and the
// nearest-rank p50/p95/p99 (index ceil((len-1)·q) of the sorted samples)
// are over the samples the reservoir holds, so past 8,192 samples they
// match rlmesh's for the same values. Rows come sorted by (op, component,
// metric), and a series with no samples in a horizon has no row.
//
// The simulator is rlmesh's local runner: an in-process model
// (ModelHandlerRuntimeModel, which reports no endpoint time and no group
// size), so model.predict has rpc.total, request.bytes and response.bytes
// only, no endpoint.total and no group.size; the env sits behind an env
// server whose endpoint time is its call's, so env.step and env.reset also
// have endpoint.total. request.bytes and response.bytes are the sizes of
// the rlmesh messages a call stands for (see wireSizes). The observation
// and action transforms are identities (events.Hooks has no transform
// methods), so runner.transform_* count their calls and record 0 ms.
const reservoirSize = 8192

// Telemetry ops and components, rlmesh's names.
const (
	opPredict       = "model.predict"
	opStep          = "env.step"
	opReset         = "env.reset"
	opTransformObs  = "runner.transform_observation"
	opTransformAct  = "runner.transform_action"
	opRound         = "runner.round"
	componentModel  = "model"
	componentEnv    = "env"
	componentRunner = "runner"
	metricRPC       = "rpc.total"
	metricEndpoint  = "endpoint.total"
	metricRequest   = "request.bytes"
	metricResponse  = "response.bytes"
	metricGroupSize = "group.size"
	kindDuration    = events.MetricDurationMs
	kindBytes       = events.MetricBytes
	kindCount       = events.MetricCount
)

// series indices, in the row order of every snapshot: sorted by (op,
// component, metric); TestSeriesSorted checks it.
type series uint8

const (
	resetEndpoint series = iota
	resetRequest
	resetResponse
	resetRPC
	stepEndpoint
	stepRequest
	stepResponse
	stepRPC
	predictRequest
	predictResponse
	predictRPC
	roundRPC
	transformActRPC
	transformObsRPC
	numSeries
)

type seriesDef struct {
	op, component, metric string
	kind                  events.MetricKind
}

var seriesDefs = [numSeries]seriesDef{
	resetEndpoint:   {opReset, componentEnv, metricEndpoint, kindDuration},
	resetRequest:    {opReset, componentEnv, metricRequest, kindBytes},
	resetResponse:   {opReset, componentEnv, metricResponse, kindBytes},
	resetRPC:        {opReset, componentEnv, metricRPC, kindDuration},
	stepEndpoint:    {opStep, componentEnv, metricEndpoint, kindDuration},
	stepRequest:     {opStep, componentEnv, metricRequest, kindBytes},
	stepResponse:    {opStep, componentEnv, metricResponse, kindBytes},
	stepRPC:         {opStep, componentEnv, metricRPC, kindDuration},
	predictRequest:  {opPredict, componentModel, metricRequest, kindBytes},
	predictResponse: {opPredict, componentModel, metricResponse, kindBytes},
	predictRPC:      {opPredict, componentModel, metricRPC, kindDuration},
	roundRPC:        {opRound, componentRunner, metricRPC, kindDuration},
	transformActRPC: {opTransformAct, componentRunner, metricRPC, kindDuration},
	transformObsRPC: {opTransformObs, componentRunner, metricRPC, kindDuration},
}

// reservoir is a uniform sample of a series' values: the first
// reservoirSize values, then each later one replaces slot next % seen
// when that is below reservoirSize (probability reservoirSize/seen), next
// drawn from rlmesh's xorshift64* generator.
type reservoir struct {
	samples []float64
	seen    uint64
	rng     uint64 // xorshift64* state
}

// reservoirSeed is rlmesh's fixed reservoir seed: part of matching its
// quantiles, do not change.
const reservoirSeed = 0x9E3779B97F4A7C15

func newReservoir() reservoir { return reservoir{rng: reservoirSeed} }

// next returns rlmesh's xorshift64* draw.
func (r *reservoir) next() uint64 {
	x := r.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	r.rng = x
	return x * 0x2545F4914F6CDD1D
}

func (r *reservoir) add(v float64) {
	r.seen++
	if len(r.samples) < reservoirSize {
		r.samples = append(r.samples, v)
		return
	}
	if j := r.next() % r.seen; j < reservoirSize {
		r.samples[j] = v
	}
}

// clear starts a new window; the generator runs on.
func (r *reservoir) clear() {
	r.samples, r.seen = r.samples[:0], 0
}

// sample is one value of a series.
type sample struct {
	series series
	value  float64
}

// meter accumulates a session's telemetry. add runs on the session's
// goroutine, window snapshots on the telemetry goroutine.
type meter struct {
	mu      sync.Mutex
	windows bool // window snapshots are taken
	window  [numSeries]reservoir
	session [numSeries]reservoir
	scratch []float64
}

// newMeter returns a meter; without windows it keeps the session horizon
// only.
func newMeter(windows bool) *meter {
	m := &meter{windows: windows}
	// rlmesh seeds every reservoir alike.
	for i := range numSeries {
		m.window[i], m.session[i] = newReservoir(), newReservoir()
	}
	return m
}

// add records samples into both horizons.
func (m *meter) add(samples []sample) {
	m.mu.Lock()
	for _, s := range samples {
		if m.windows {
			m.window[s.series].add(s.value)
		}
		m.session[s.series].add(s.value)
	}
	m.mu.Unlock()
}

// snapshot returns the session snapshot, or the window snapshot and starts
// a new window. Series with no samples in the horizon are left out, so a
// window in which nothing happened has no rows.
func (m *meter) snapshot(h events.TelemetryHorizon) events.Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	snap := events.Snapshot{Horizon: h}
	for i := range numSeries {
		r := &m.session[i]
		if h == events.HorizonWindow {
			r = &m.window[i]
		}
		if r.seen == 0 {
			continue
		}
		d := seriesDefs[i]
		sum := 0.0
		for _, v := range r.samples {
			sum += v // in reservoir order, as rlmesh sums
		}
		m.scratch = append(m.scratch[:0], r.samples...)
		slices.Sort(m.scratch)
		snap.Rows = append(snap.Rows, events.TelemetryRow{
			Op: d.op, Component: d.component, Metric: d.metric, Kind: d.kind,
			Count: r.seen, Avg: sum / float64(len(m.scratch)),
			P50: nearestRank(m.scratch, 0.50), P95: nearestRank(m.scratch, 0.95), P99: nearestRank(m.scratch, 0.99),
		})
		if h == events.HorizonWindow {
			r.clear()
		}
	}
	return snap
}

// nearestRank returns the q-quantile of sorted, non-empty values as rlmesh
// computes it: the element at index ceil((len-1)·q).
func nearestRank(sorted []float64, q float64) float64 {
	return sorted[int(math.Ceil(float64(len(sorted)-1)*q))]
}
