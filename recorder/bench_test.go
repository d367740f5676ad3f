package recorder

// Benchmarks of the recorder against the targets in BENCHMARKS.md. They use
// the OS file system under b.TempDir(), the simulator (package sim) or
// hand-built events as the driver, and report ratios measured in the same
// run. Run them as BENCHMARKS.md says (-count 5 or more, medians).

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"github.com/rlrec/rlrec/sim"
)

// ---------------------------------------------------------------------------
// Hand-built events

const benchSession = "0190c0de-0000-7000-8000-000000000001"

var benchRoute = events.RuntimeEnvContext{EnvID: "bench", EnvComponentID: "env/bench", ModelComponentID: "model/bench"}

var (
	benchF32Box = func(shape ...int64) *spacesv1.SpaceSpec {
		return &spacesv1.SpaceSpec{Shape: shape, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32,
			Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
	}
	benchU8Box = func(shape ...int64) *spacesv1.SpaceSpec {
		return &spacesv1.SpaceSpec{Shape: shape, Dtype: spacesv1.DataType_DATA_TYPE_UINT8,
			Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Uniform{
				Uniform: &spacesv1.UniformBounds{Low: []byte{0}, High: []byte{255}}}}}}
	}
	benchDiscrete = &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}}
)

// benchDriver delivers the events of one session by hand, in the runtime's
// order, with one observation and one action spec pointer and reused slabs
// and id slices (as the runtime and the simulator do).
type benchDriver struct {
	h        events.Hooks
	sid      string
	n        int
	obsSpec  *spacesv1.SpaceSpec
	obs      [][]byte
	act      [][]byte
	ids      []string
	rids     []string
	rewards  []float64
	next     int64 // next episode record number
	step     int64
	laneStep []int64
	evAct    events.ActionReceived
	evStep   events.StepCompleted
	evObs    events.ObservationEmitted
}

func newBenchDriver(h events.Hooks, sid string, n int, obsSpec *spacesv1.SpaceSpec, obsLaneBytes int) *benchDriver {
	d := &benchDriver{h: h, sid: sid, n: n, obsSpec: obsSpec,
		obs: [][]byte{make([]byte, n*obsLaneBytes)}, act: [][]byte{make([]byte, n*8)},
		ids: make([]string, n), rids: make([]string, n), rewards: make([]float64, n), laneStep: make([]int64, n)}
	fillFrames(d.obs[0], obsLaneBytes, 0)
	return d
}

// fillFrames fills each lane of slab with a frame shaped like a rendered
// scene (flat bands, a small noisy sprite that moves with seed), so that it
// compresses like a camera image; small leaves get float-like bytes.
func fillFrames(slab []byte, lane, seed int) {
	r := rand.New(rand.NewPCG(uint64(seed), 3))
	for off := 0; off+lane <= len(slab); off += lane {
		f := slab[off : off+lane]
		for i := range f {
			f[i] = byte(i / 4096 * 37)
		}
		start := (seed * 997) % max(lane-512, 1)
		for i := start; i < min(start+512, lane); i++ {
			f[i] = byte(r.Uint32())
		}
	}
}

func (d *benchDriver) ctx() context.Context { return context.Background() }

func (d *benchDriver) start() {
	must(d.h.OnSessionStarted(d.ctx(), &events.SessionStarted{SessionID: d.sid, Route: benchRoute, EnvID: benchRoute.EnvID}))
	for i := range d.n {
		d.startEpisode(i, false)
	}
	d.observe()
}

func (d *benchDriver) startEpisode(lane int, auto bool) {
	d.next++
	d.ids[lane] = fmt.Sprintf("0190c0de-%04x-7000-8000-%012x", lane, d.next)
	d.rids[lane] = fmt.Sprintf("ep-%06d", d.next)
	d.laneStep[lane] = 0
	must(d.h.OnEpisodeStarted(d.ctx(), &events.EpisodeStarted{SessionID: d.sid, Route: benchRoute,
		EpisodeID: d.ids[lane], EpisodeRecordID: d.rids[lane], EpisodeIndex: d.next, EnvIndex: int32(lane),
		StartedFromAutoReset: auto}))
}

func (d *benchDriver) observe() {
	d.evObs = events.ObservationEmitted{SessionID: d.sid, Route: benchRoute, EpisodeID: d.ids[0], EpisodeRecordID: d.rids[0],
		EpisodeIDs: d.ids, EpisodeRecordIDs: d.rids, Step: d.laneStep[0], NumEnvs: uint32(d.n),
		ObservationSpace: d.obsSpec, Observation: d.obs}
	must(d.h.OnObservationEmitted(d.ctx(), &d.evObs))
}

func (d *benchDriver) action() {
	d.step++
	binary.LittleEndian.PutUint64(d.act[0], uint64(d.step&1))
	d.evAct = events.ActionReceived{SessionID: d.sid, Route: benchRoute, EpisodeID: d.ids[0], EpisodeRecordID: d.rids[0],
		EpisodeIDs: d.ids, EpisodeRecordIDs: d.rids, Step: d.laneStep[0] + 1, ActionSpace: benchDiscrete, Action: d.act}
	must(d.h.OnActionReceived(d.ctx(), &d.evAct))
}

func (d *benchDriver) stepDone() {
	for i := range d.rewards {
		d.rewards[i] = 1
		d.laneStep[i]++
	}
	d.evStep = events.StepCompleted{SessionID: d.sid, Route: benchRoute, EpisodeID: d.ids[0], EpisodeRecordID: d.rids[0],
		Step: d.laneStep[0], Rewards: d.rewards}
	must(d.h.OnStepCompleted(d.ctx(), &d.evStep))
}

// steps runs k full steps (action, reward, observation) on every lane.
func (d *benchDriver) steps(k int) {
	for range k {
		d.action()
		d.stepDone()
		d.observe()
	}
}

// complete completes lane's episode (terminated) and starts the next one
// at once (disabled autoreset: the next observation is a reset one).
func (d *benchDriver) complete(lane int) {
	must(d.h.OnEpisodeCompleted(d.ctx(), &events.EpisodeCompleted{SessionID: d.sid, Route: benchRoute,
		EpisodeID: d.ids[lane], EpisodeRecordID: d.rids[lane], EpisodeIndex: d.next, EnvIndex: int32(lane),
		Terminated: true, StepCount: d.laneStep[lane], CumulativeReward: float64(d.laneStep[lane])}))
}

func (d *benchDriver) end() {
	must(d.h.OnSessionEnded(d.ctx(), &events.SessionEnded{SessionID: d.sid, Route: benchRoute, Reason: "done",
		TotalSteps: d.step}))
	must(d.h.OnTelemetrySnapshot(d.ctx(), &events.TelemetrySnapshot{SessionID: d.sid, Route: benchRoute,
		Snapshot: events.Snapshot{Horizon: events.HorizonSession}}))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func percentile(sorted []int64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(int(float64(len(sorted))*p), len(sorted)-1)])
}

func openBench(b *testing.B, dir string, opts ...Option) *Recorder {
	b.Helper()
	r, err := Open(dir, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func closeBench(b *testing.B, r *Recorder) {
	b.Helper()
	if err := r.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// Hook path

// BenchmarkHookCall calls the step hooks of one open session in a tight
// loop with hand-built events; one op is one hook call. The lanes'
// episodes stay open (their rows stream to their steps files), so the
// recorder keeps up with the loop and no hook waits on a full memory
// budget: this is the hook's own cost. BenchmarkHookLatency shows it with
// short episodes, whose files the disk may not keep up with. The recorder runs
// on the OS file system, so the pipeline, log and writers work behind the
// hooks as they would live, and allocs/op counts every goroutine's
// allocations per hook call (an upper bound on the hook's own). p50-ns and
// p99-ns are per-call latencies. For image8, copy-ns is a plain copy of
// the same payload measured in the same loop, and hook/copy their ratio of
// medians.
func BenchmarkHookCall(b *testing.B) {
	// The tight loops call hooks as fast as they return, faster than the
	// recorder drains them, so a share of calls waits for room in the
	// memory budget (allowed back-pressure). The paced variants offer a
	// load the recorder sustains on this machine, so they show what a
	// hook costs when the budget is not full: 20,000 16-lane cartpole
	// steps a second (320 k lane-steps/s) and 250 8-lane image batches a
	// second (42 MB/s).
	b.Run("cartpole16", func(b *testing.B) { benchHookCartpole(b, 0) })
	b.Run("cartpole16-paced", func(b *testing.B) { benchHookCartpole(b, 20_000) })
	b.Run("image8", func(b *testing.B) { benchHookImage(b, 0) })
	b.Run("image8-paced", func(b *testing.B) { benchHookImage(b, 250) })
}

// pacer spaces calls at a fixed rate (0: no pacing). It sleeps in bursts
// against absolute deadlines, so a late wake-up is made up by the next
// calls instead of lowering the rate.
type pacer struct {
	start time.Time
	per   time.Duration
	n     int
}

func newPacer(perSecond int) *pacer {
	p := &pacer{start: time.Now()}
	if perSecond > 0 {
		p.per = time.Second / time.Duration(perSecond)
	}
	return p
}

func (p *pacer) wait() {
	if p.per == 0 {
		return
	}
	p.n++
	if d := time.Until(p.start.Add(time.Duration(p.n) * p.per)); d > 100*time.Microsecond {
		time.Sleep(d)
	}
}

func benchHookCartpole(b *testing.B, stepsPerSecond int) {
	r := openBench(b, b.TempDir())
	defer closeBench(b, r)
	d := newBenchDriver(r, benchSession, 16, benchF32Box(4), 16)
	d.start()
	lat := make([]int64, 0, 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	pace := newPacer(stepsPerSecond)
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		switch i % 3 {
		case 0:
			d.action()
		case 1:
			d.stepDone()
		case 2:
			d.observe()
		}
		if len(lat) < cap(lat) {
			lat = append(lat, int64(time.Since(t0)))
		}
		if i%3 == 2 {
			pace.wait()
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 0.5), "p50-ns")
	b.ReportMetric(percentile(lat, 0.99), "p99-ns")
}

func benchHookImage(b *testing.B, batchesPerSecond int) {
	r := openBench(b, b.TempDir())
	defer closeBench(b, r)
	const lane = 84 * 84 * 3
	d := newBenchDriver(r, benchSession, 8, benchU8Box(84, 84, 3), lane)
	d.start()
	dst := make([]byte, 8*lane)
	// A second baseline copies into one of 16 buffers in turn (2.7 MB,
	// more than the core's cache), as the hook does: its buffer is one of
	// those in flight to the pipeline, not the one it wrote a moment ago.
	rot := make([][]byte, 16)
	for i := range rot {
		rot[i] = make([]byte, 8*lane)
	}
	var hook, cp, cpRot []int64
	b.SetBytes(8 * lane)
	b.ReportAllocs()
	b.ResetTimer()
	pace := newPacer(batchesPerSecond)
	for i := 0; b.Loop(); i++ {
		// An action and its reward between observations keep the
		// session's events realistic; only the observation is timed.
		b.StopTimer()
		pace.wait()
		d.action()
		d.stepDone()
		if i%60 == 59 {
			for l := range d.n {
				d.complete(l)
				d.startEpisode(l, true)
			}
		}
		b.StartTimer()
		t0 := time.Now()
		d.observe()
		t1 := time.Now()
		copy(dst, d.obs[0])
		t2 := time.Now()
		copy(rot[i%len(rot)], d.obs[0])
		t3 := time.Now()
		hook = append(hook, int64(t1.Sub(t0)))
		cp = append(cp, int64(t2.Sub(t1)))
		cpRot = append(cpRot, int64(t3.Sub(t2)))
	}
	b.StopTimer()
	slices.Sort(hook)
	slices.Sort(cp)
	slices.Sort(cpRot)
	b.ReportMetric(percentile(hook, 0.5), "p50-ns")
	b.ReportMetric(percentile(hook, 0.99), "p99-ns")
	b.ReportMetric(percentile(cp, 0.5), "copy-ns")
	b.ReportMetric(percentile(hook, 0.5)/percentile(cp, 0.5), "hook/copy")
	b.ReportMetric(percentile(hook, 0.5)/percentile(cpRot, 0.5), "hook/rotating-copy")
}

// timedHooks wraps a Hooks and records the latency of every step hook.
type timedHooks struct {
	events.Hooks
	act, step, obs, cp []int64
	dst                []byte
}

func (t *timedHooks) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	t0 := time.Now()
	err := t.Hooks.OnActionReceived(ctx, ev)
	t.act = append(t.act, int64(time.Since(t0)))
	return err
}

func (t *timedHooks) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	t0 := time.Now()
	err := t.Hooks.OnStepCompleted(ctx, ev)
	t.step = append(t.step, int64(time.Since(t0)))
	return err
}

func (t *timedHooks) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	t0 := time.Now()
	err := t.Hooks.OnObservationEmitted(ctx, ev)
	t1 := time.Now()
	t.obs = append(t.obs, int64(t1.Sub(t0)))
	if t.dst != nil {
		// A plain copy of the same payload, for the ratio.
		off := 0
		for _, s := range ev.Observation {
			if off+len(s) > len(t.dst) {
				t.dst = append(t.dst, make([]byte, off+len(s)-len(t.dst))...)
			}
			off += copy(t.dst[off:], s)
		}
		t.cp = append(t.cp, int64(time.Since(t1)))
	}
	return err
}

// BenchmarkHookLatency drives the recorder with the simulator (one op is
// one session) and reports the latency distribution of each step hook.
func BenchmarkHookLatency(b *testing.B) {
	for _, bc := range []struct {
		env   string
		lanes int
		eps   int64
	}{
		{"cartpole", 16, 400},
		{"pick-place", 8, 80},
	} {
		b.Run(fmt.Sprintf("%s/n=%d", bc.env, bc.lanes), func(b *testing.B) {
			th := &timedHooks{}
			if bc.env == "pick-place" {
				th.dst = make([]byte, 0, 1<<20)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r := openBench(b, filepath.Join(b.TempDir(), strconv.Itoa(i)))
				th.Hooks = r
				cfg := sim.Config{Env: bc.env, NumEnvs: bc.lanes, Autoreset: sim.AutoresetNextStep,
					MaxEpisodes: bc.eps, TimeLimit: 200, Seed: uint64(i + 1)}
				if _, err := sim.Run(context.Background(), th, cfg); err != nil {
					b.Fatal(err)
				}
				closeBench(b, r)
			}
			for _, l := range []struct {
				name string
				v    []int64
			}{{"act", th.act}, {"step", th.step}, {"obs", th.obs}} {
				slices.Sort(l.v)
				b.ReportMetric(percentile(l.v, 0.5), l.name+"-p50-ns")
				b.ReportMetric(percentile(l.v, 0.99), l.name+"-p99-ns")
			}
			if th.dst != nil {
				slices.Sort(th.cp)
				b.ReportMetric(percentile(th.cp, 0.5), "copy-p50-ns")
				b.ReportMetric(percentile(th.obs, 0.5)/percentile(th.cp, 0.5), "obs/copy")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Throughput

// benchStep is the fixed steps columns plus cartpole's typed columns as a
// plain parquet-go row type: the bare baseline.
type benchStep struct {
	EpisodeID       string    `parquet:"episode_id,dict"`
	EpisodeIndex    int64     `parquet:"episode_index"`
	EnvIndex        int32     `parquet:"env_index"`
	Step            int64     `parquet:"step"`
	SessionStep     int64     `parquet:"session_step"`
	ObservationBlob []byte    `parquet:"observation_blob,optional,plain"`
	ActionBlob      []byte    `parquet:"action_blob,optional,plain"`
	Reward          float64   `parquet:"reward"`
	IsFirst         bool      `parquet:"is_first"`
	IsLast          bool      `parquet:"is_last"`
	Terminated      bool      `parquet:"terminated"`
	Truncated       bool      `parquet:"truncated"`
	RecordedAt      int64     `parquet:"recorded_at,timestamp(microsecond:utc)"`
	Observation     []float32 `parquet:"observation,optional,list"`
	Action          *int64    `parquet:"action,optional"`
}

// benchImageStep is the same for pick-place: Dict{image, state,
// instruction} observations (the image, above the typed-column threshold,
// is a binary column) and a Box(7) float32 action.
type benchImageStep struct {
	EpisodeID       string    `parquet:"episode_id,dict"`
	EpisodeIndex    int64     `parquet:"episode_index"`
	EnvIndex        int32     `parquet:"env_index"`
	Step            int64     `parquet:"step"`
	SessionStep     int64     `parquet:"session_step"`
	ObservationBlob []byte    `parquet:"observation_blob,optional,plain"`
	ActionBlob      []byte    `parquet:"action_blob,optional,plain"`
	Reward          float64   `parquet:"reward"`
	IsFirst         bool      `parquet:"is_first"`
	IsLast          bool      `parquet:"is_last"`
	Terminated      bool      `parquet:"terminated"`
	Truncated       bool      `parquet:"truncated"`
	RecordedAt      int64     `parquet:"recorded_at,timestamp(microsecond:utc)"`
	ObsImage        []byte    `parquet:"observation.image,optional,plain"`
	ObsState        []float32 `parquet:"observation.state,optional,list"`
	ObsInstruction  *string   `parquet:"observation.instruction,optional"`
	Action          []float32 `parquet:"action,optional,list"`
}

// rowCollector builds the steps rows of a simulated session the simple
// way, for the bare writer: every lane's last observation and each action,
// split per lane (cartpole: 1 leaf of 16 B; pick-place: image, state,
// text).
type rowCollector struct {
	events.NoopHooks
	limit  int
	obs    [][][]byte // per lane, leaves
	rows   []benchStep
	images []benchImageStep
	image  bool
}

func f32sOf(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func (c *rowCollector) OnObservationEmitted(_ context.Context, ev *events.ObservationEmitted) error {
	n := int(ev.NumEnvs)
	c.obs = make([][][]byte, n)
	for i := range n {
		var leaves [][]byte
		for k, s := range ev.Observation {
			if c.image && k == 2 {
				// Text slab: [u64 count][u64 len x count][bodies].
				cnt := int(binary.LittleEndian.Uint64(s))
				off := 8 + 8*cnt
				for j := 0; j < i; j++ {
					off += int(binary.LittleEndian.Uint64(s[8+8*j:]))
				}
				ln := int(binary.LittleEndian.Uint64(s[8+8*i:]))
				leaves = append(leaves, slices.Clone(s[off:off+ln]))
				continue
			}
			w := len(s) / n
			leaves = append(leaves, slices.Clone(s[i*w:(i+1)*w]))
		}
		c.obs[i] = leaves
	}
	return nil
}

func (c *rowCollector) OnActionReceived(_ context.Context, ev *events.ActionReceived) error {
	n := len(ev.EpisodeRecordIDs)
	now := time.Now().UnixMicro()
	for i := range n {
		if len(c.rows)+len(c.images) >= c.limit {
			return nil
		}
		w := len(ev.Action[0]) / n
		act := slices.Clone(ev.Action[0][i*w : (i+1)*w])
		var obs [][]byte
		if i < len(c.obs) {
			obs = c.obs[i]
		}
		if c.image {
			row := benchImageStep{EpisodeID: ev.EpisodeIDs[i], EpisodeIndex: 1, EnvIndex: int32(i), Step: ev.Step,
				SessionStep: ev.Step, ObservationBlob: blob.Encode(obs), ActionBlob: blob.Encode([][]byte{act}),
				RecordedAt: now, Action: f32sOf(act)}
			if len(obs) == 3 {
				txt := string(obs[2])
				row.ObsImage, row.ObsState, row.ObsInstruction = obs[0], f32sOf(obs[1]), &txt
			}
			c.images = append(c.images, row)
			continue
		}
		a := int64(binary.LittleEndian.Uint64(act))
		row := benchStep{EpisodeID: ev.EpisodeIDs[i], EpisodeIndex: 1, EnvIndex: int32(i), Step: ev.Step,
			SessionStep: ev.Step, ObservationBlob: blob.Encode(obs), ActionBlob: blob.Encode([][]byte{act}),
			RecordedAt: now, Action: &a}
		if len(obs) == 1 {
			row.Observation = f32sOf(obs[0])
		}
		c.rows = append(c.rows, row)
	}
	return nil
}

func benchCodec(c Compression) compress.Codec {
	switch c {
	case CompressionZstd:
		return &zstd.Codec{Level: zstd.SpeedFastest}
	case CompressionSnappy:
		return &snappy.Codec{}
	}
	return &parquet.Uncompressed
}

// writeBare writes n rows cycling through rows with a bare parquet-go
// GenericWriter into one file under dir and fsyncs it once.
func writeBare[T any](b *testing.B, dir string, rows []T, n int, codec compress.Codec, cfg ...parquet.WriterOption) {
	f, err := os.Create(filepath.Join(dir, "bare.parquet"))
	if err != nil {
		b.Fatal(err)
	}
	opts := append([]parquet.WriterOption{parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(64 * 1024),
		parquet.SkipPageStatistics(schema.ColObservationBlob), parquet.SkipPageBounds(schema.ColObservationBlob),
		parquet.SkipPageStatistics(schema.ColActionBlob), parquet.SkipPageBounds(schema.ColActionBlob)}, cfg...)
	w := parquet.NewGenericWriter[T](f, opts...)
	const batch = 64
	for done := 0; done < n; {
		off := done % len(rows)
		k := min(batch, n-done, len(rows)-off)
		if _, err := w.Write(rows[off : off+k]); err != nil {
			b.Fatal(err)
		}
		done += k
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	os.Remove(f.Name())
}

// BenchmarkThroughput records simulated sessions end to end (sim.Run into
// a fresh recorder, then Close; one op is one session) and, in the same
// iteration, runs the same session into events.NoopHooks and writes the
// same number of rows with a bare parquet-go writer of the same columns.
//
// The shm variants record into a ROOT on the tmpfs /dev/shm (the bare
// writer still writes to disk): the recorder's CPU-bound ceiling where
// file creation and fsync cost next to nothing. They are not target
// figures; they show what limits the disk ones.
//
// Reported: lane-steps/s of the recorder with the simulator's own cost
// subtracted (net), without it (gross), the simulator alone, the bare
// writer's rows/s and the ratio net/bare; for pick-place also MB/s of
// observation payload (net and bare).
func BenchmarkThroughput(b *testing.B) {
	for _, bc := range []struct {
		env   string
		lanes int
		eps   int64
		codec Compression

		shm bool
	}{
		{"cartpole", 16, 1000, CompressionZstd, false},
		{"cartpole", 16, 1000, CompressionSnappy, false},
		{"pick-place", 8, 160, CompressionZstd, false},
		{"pick-place", 8, 160, CompressionSnappy, false},
		{"cartpole", 16, 1000, CompressionZstd, true},
		{"pick-place", 8, 160, CompressionZstd, true},
	} {
		name := fmt.Sprintf("%s/n=%d/%s", bc.env, bc.lanes, bc.codec)
		if bc.shm {
			name += "/shm"
		}
		b.Run(name, func(b *testing.B) {
			shm := ""
			if bc.shm {
				var err error
				if shm, err = os.MkdirTemp("/dev/shm", "rlrec-bench"); err != nil {
					b.Fatalf("the shm variants need a tmpfs at /dev/shm: %v", err)
				}
				defer os.RemoveAll(shm)
			}
			cfg := sim.Config{Env: bc.env, NumEnvs: bc.lanes, Autoreset: sim.AutoresetNextStep,
				MaxEpisodes: bc.eps, TimeLimit: 200, Seed: 1}
			image := bc.env == "pick-place"
			col := &rowCollector{limit: 1 << 22, image: image}
			if image {
				col.limit = 4096
			}
			if _, err := sim.Run(context.Background(), col, cfg); err != nil {
				b.Fatal(err)
			}
			obsBytes := 0.0
			if image {
				r := col.images[0]
				obsBytes = float64(len(r.ObservationBlob))
			}
			var tSim, tRec, tBare time.Duration
			var laneSteps int64
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				cfg.Seed = uint64(i + 1)
				t0 := time.Now()
				s1, err := sim.Run(context.Background(), events.NoopHooks{}, cfg)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
				if bc.shm {
					dir = filepath.Join(shm, strconv.Itoa(i))
				}
				r := openBench(b, dir, WithCompression(bc.codec))
				s2, err := sim.Run(context.Background(), r, cfg)
				if err != nil {
					b.Fatal(err)
				}
				closeBench(b, r)
				t2 := time.Now()
				if s1.LaneSteps != s2.LaneSteps {
					b.Fatalf("runs differ: %d and %d lane-steps", s1.LaneSteps, s2.LaneSteps)
				}
				n := int(s2.LaneSteps)
				if image {
					writeBare(b, dir, col.images, n, benchCodec(bc.codec), parquet.PageBufferSize(256<<10))
				} else {
					writeBare(b, dir, col.rows, n, benchCodec(bc.codec), parquet.PageBufferSize(256<<10))
				}
				t3 := time.Now()
				tSim += t1.Sub(t0)
				tRec += t2.Sub(t1)
				tBare += t3.Sub(t2)
				laneSteps += s2.LaneSteps
				os.RemoveAll(dir)
			}
			ls := float64(laneSteps)
			net := ls / (tRec - tSim).Seconds()
			bare := ls / tBare.Seconds()
			b.ReportMetric(net, "net-lane-steps/s")
			b.ReportMetric(ls/tRec.Seconds(), "gross-lane-steps/s")
			b.ReportMetric(ls/tSim.Seconds(), "sim-lane-steps/s")
			b.ReportMetric(bare, "bare-rows/s")
			b.ReportMetric(net/bare, "net/bare")
			if image {
				b.ReportMetric(net*obsBytes/1e6, "net-obsMB/s")
				b.ReportMetric(bare*obsBytes/1e6, "bare-obsMB/s")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Finalisation

// BenchmarkFinalize records 1,000-step episodes on one lane (one op is one
// episode) and measures the time from the EpisodeCompleted hook call to
// the episode's episodes file existing under its final name.
func BenchmarkFinalize(b *testing.B) {
	root := b.TempDir()
	r := openBench(b, root)
	defer closeBench(b, r)
	d := newBenchDriver(r, benchSession, 1, benchF32Box(4), 16)
	d.start()
	var lat []int64
	for b.Loop() {
		d.steps(1000)
		rid := d.rids[0]
		// The steps file is committed in the same group as the episode's row.
		file := filepath.Join(root, hive.EpisodePartition(schema.TableSteps, hive.Recording{SessionID: benchSession, EnvID: benchRoute.EnvID}, rid).File(0))
		t0 := time.Now()
		d.complete(0)
		d.startEpisode(0, true)
		d.observe()
		for {
			if _, err := os.Stat(file); err == nil {
				break
			}
			if time.Since(t0) > 10*time.Second {
				b.Fatalf("%s did not appear within 10 s", file)
			}
			time.Sleep(50 * time.Microsecond)
		}
		lat = append(lat, int64(time.Since(t0)))
	}
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 0.5)/1e6, "p50-ms")
	b.ReportMetric(percentile(lat, 0.95)/1e6, "p95-ms")
}

// ---------------------------------------------------------------------------
// Recovery

func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// copyDir copies the tree src into dst, every file written whole (a
// sparse file too, as the log's pending file is), so that the recovery
// benchmarks read the same files as before. (The tests inside package
// recorder cannot import internal/roottest, which imports recorder.)
func copyDir(b testing.TB, src, dst string) {
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(t, data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecovery measures Open on a ROOT whose log a recorder left
// without Close: 16-lane cartpole sessions (hand-built events) with
// 200-step episodes whose completed episodes were written and marked; the
// log (kept whole while the sessions are open) is copied while the
// recorder is open, after Flush and once its writers are idle. One op is
// one Open of a fresh copy (the copy is made outside the timer and is in
// the page cache). Reported: log MB/s (segment bytes on disk) and records
// replayed per second.
func BenchmarkRecovery(b *testing.B) {
	for _, bc := range []struct {
		name  string
		lanes int
		obs   *spacesv1.SpaceSpec
		leaf  int
		steps int
		// segment, when set, is the log's segment size: small enough for
		// the recorder to snapshot its state and remove segments while
		// the session runs (the default 64 MiB holds this whole run).
		segment int64
	}{
		{"cartpole16", 16, benchF32Box(4), 16, 40000, 0},
		{"image8", 8, benchU8Box(84, 84, 3), 84 * 84 * 3, 2000, 0},
		{"cartpole16-snapshots", 16, benchF32Box(4), 16, 40000, 4 << 20},
		{"image8-snapshots", 8, benchU8Box(84, 84, 3), 84 * 84 * 3, 2000, 4 << 20},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src := b.TempDir()
			r := openBench(b, src, withSegmentSize(bc.segment))
			d := newBenchDriver(r, benchSession, bc.lanes, bc.obs, bc.leaf)
			d.start()
			for i := 0; i < bc.steps; i += 200 {
				d.steps(200)
				for l := range d.n {
					d.complete(l)
					d.startEpisode(l, true)
				}
				d.observe()
			}
			d.steps(100) // open episodes at the crash
			if err := r.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			if err := r.w.wait(); err != nil {
				b.Fatal(err)
			}
			if err := r.Flush(context.Background()); err != nil { // the markers, a seal
				b.Fatal(err)
			}
			if err := r.Flush(context.Background()); err != nil { // the seal synced
				b.Fatal(err)
			}
			saved := filepath.Join(b.TempDir(), "saved")
			copyDir(b, filepath.Join(src, stateDir, logDir), saved)
			written := loggedBytes(b, saved, bc.segment)
			closeBench(b, r)
			os.Remove(filepath.Join(saved, "LOCK"))
			logBytes := dirBytes(b, saved)
			var total time.Duration
			var records int64
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				root := filepath.Join(b.TempDir(), strconv.Itoa(i))
				copyDir(b, saved, filepath.Join(root, stateDir, logDir))
				b.StartTimer()
				t0 := time.Now()
				rr := openBench(b, root)
				total += time.Since(t0)
				b.StopTimer()
				records += rr.Recovered().Records
				if rr.Recovered().Crashed != 1 {
					b.Fatalf("recovered %+v, want one crashed session", rr.Recovered())
				}
				closeBench(b, rr)
				os.RemoveAll(root)
				b.StartTimer()
			}
			b.SetBytes(logBytes)
			b.ReportMetric(float64(logBytes)*float64(b.N)/total.Seconds()/1e6, "log-MB/s")
			b.ReportMetric(float64(records)/total.Seconds(), "records/s")
			b.ReportMetric(float64(logBytes)/1e6, "log-MB")
			// What the session logged in all, removed segments included,
			// per second of recovery.
			b.ReportMetric(float64(written)*float64(b.N)/total.Seconds()/1e6, "logged-MB/s")
		})
	}
}

// loggedBytes is about how many bytes the log in dir has held: its
// segments are numbered from 1 and all but the last are about segment
// bytes (segment 0: nothing was removed, the files are the whole log).
func loggedBytes(b *testing.B, dir string, segment int64) int64 {
	b.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var last string
	var lastSize, all int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wal") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		all += info.Size()
		if e.Name() > last {
			last, lastSize = e.Name(), info.Size()
		}
	}
	if segment == 0 || last == "" {
		return all
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(last, ".wal"), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return (n-1)*segment + lastSize
}

// ---------------------------------------------------------------------------
// Memory (in a child process, so that VmHWM is the workload's own)

const (
	memChildEnv    = "RLREC_BENCH_MEMORY_CHILD"
	memCrashDirEnv = "RLREC_BENCH_MEMORY_CRASH_DIR"
)

// TestMain runs the memory workload when started as its child process.
func TestMain(m *testing.M) {
	if spec := os.Getenv(memChildEnv); spec != "" {
		if err := memoryChild(spec, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// memResult is what the child reports.
type memResult struct {
	Budget   int64   `json:"budget"`
	Bytes    int64   `json:"bytes"`
	HWM      int64   `json:"hwm"`
	RSS      []int64 `json:"rss"` // VmRSS after each eighth of the workload
	Seconds  float64 `json:"seconds"`
	Baseline int64   `json:"baseline"` // VmHWM before Open
	// Held is what the workload's driver holds of its own: the event
	// buffers it hands to the hooks (the caller's memory, not the
	// recorder's).
	Held int64 `json:"held"`
	// LiveMax is the most live heap a garbage collection found
	// (runtime/metrics /gc/heap/live:bytes, polled every millisecond from
	// Open to Close): the data the process kept live.
	LiveMax int64 `json:"live_max"`
}

func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// memoryChild runs "image:<bytes>" (one lane, 224x224x3 frames, one
// episode of bytes of observations), "open:<episodes>:<bytes>" (that
// many lanes with open 84x84x3 episodes, bytes in all),
// "large:<lanes>:<bytes>" (that many lanes of 1024x1216x3 frames, 3.6 MiB
// each, so that an observation event of 4 lanes, 14.3 MiB, is near the
// default maximum event size of 16 MiB) or "logs:<n>" (100 steps of one
// 84x84x3 lane, then n log events of 15 MB of random text; with
// memCrashDirEnv set it records there and exits without Close) into a
// recorder with the default 256 MiB budget, or "recover:<dir>" (Open and
// Close of what a crashed "logs" child left in dir). A last ":gclimit"
// sets the Go memory limit GCMemoryLimit gives.
func memoryChild(spec string, out io.Writer) error {
	parts := strings.Split(spec, ":")
	if parts[len(parts)-1] == "gclimit" {
		// What the rlrec command does (and a program embedding a
		// Recorder should): a Go memory limit for the budget.
		debug.SetMemoryLimit(GCMemoryLimit(defaultOptions().memoryBudget))
		parts = parts[:len(parts)-1]
	}
	res := memResult{Budget: defaultOptions().memoryBudget, Baseline: procStatus("VmHWM")}
	if parts[0] == "recover" {
		// "recover:<dir>": Open recovers what a crashed "logs" child
		// left in dir.
		stopLive := pollLiveHeap(&res.LiveMax)
		t0 := time.Now()
		r, err := Open(parts[1])
		if err != nil {
			return err
		}
		if err := r.Close(context.Background()); err != nil {
			return err
		}
		stopLive()
		res.Seconds = time.Since(t0).Seconds()
		res.HWM = procStatus("VmHWM")
		return json.NewEncoder(out).Encode(res)
	}
	// crashDir, when set, is where a "logs" child records, and it exits
	// right after its last log event, without Close, as a crash would.
	crashDir := os.Getenv(memCrashDirEnv)
	dir := crashDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "rlrec-mem"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	r, err := Open(dir)
	if err != nil {
		return err
	}
	var d *benchDriver
	var total int64
	logN := 0
	switch parts[0] {
	case "image":
		total, _ = strconv.ParseInt(parts[1], 10, 64)
		d = newBenchDriver(r, benchSession, 1, benchU8Box(224, 224, 3), 224*224*3)
	case "open":
		n, _ := strconv.Atoi(parts[1])
		total, _ = strconv.ParseInt(parts[2], 10, 64)
		d = newBenchDriver(r, benchSession, n, benchU8Box(84, 84, 3), 84*84*3)
	case "large":
		n, _ := strconv.Atoi(parts[1])
		total, _ = strconv.ParseInt(parts[2], 10, 64)
		d = newBenchDriver(r, benchSession, n, benchU8Box(1024, 1216, 3), 1024*1216*3)
	case "logs":
		// n log events of 15 MB in a one-lane session of small frames.
		n, _ := strconv.Atoi(parts[1])
		total = 100 * 84 * 84 * 3
		d = newBenchDriver(r, benchSession, 1, benchU8Box(84, 84, 3), 84*84*3)
		logN = n
	default:
		return fmt.Errorf("bad spec %q", spec)
	}
	stopLive := pollLiveHeap(&res.LiveMax)
	t0 := time.Now()
	res.Held = int64(cap(d.obs[0]) + cap(d.act[0]))
	d.start()
	perStep := int64(len(d.obs[0]))
	steps := total / perStep
	for i := int64(0); i < steps; i++ {
		if i%16 == 0 {
			fillFrames(d.obs[0], len(d.obs[0])/d.n, int(i))
		}
		d.steps(1)
		if (i+1)%max(steps/8, 1) == 0 {
			runtime.GC()
			res.RSS = append(res.RSS, procStatus("VmRSS"))
		}
	}
	if logN > 0 {
		// Random text (6 bits a byte), which neither the log's s2 nor
		// the files' zstd compresses much: a repeated letter would
		// compress to nothing and hide the encoded copies.
		rng := rand.New(rand.NewPCG(29, 6))
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		b := make([]byte, 15_000_000)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		msg := string(b)
		b = nil
		// The message is the caller's buffer, as the frames are.
		res.Held += int64(len(msg))
		for i := range logN {
			must(r.OnLog(context.Background(), &events.Log{SessionID: d.sid, Route: benchRoute, Level: events.LogInfo, Message: msg[:len(msg)-i]}))
			if (i+1)%max(logN/8, 1) == 0 {
				runtime.GC()
				res.RSS = append(res.RSS, procStatus("VmRSS"))
			}
		}
		res.Bytes = total + int64(logN)*15_000_000
		if crashDir != "" {
			os.Exit(0)
		}
	}
	if p := os.Getenv("RLREC_BENCH_HEAPPROFILE"); p != "" {
		// Before Close: what the workload holds at its peak.
		if f, err := os.Create(p); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	for l := range d.n {
		d.complete(l)
	}
	d.end()
	if err := r.Close(context.Background()); err != nil {
		return err
	}
	stopLive()
	res.Seconds = time.Since(t0).Seconds()
	if logN == 0 {
		res.Bytes = steps * perStep
	}
	res.HWM = procStatus("VmHWM")
	return json.NewEncoder(out).Encode(res)
}

// pollLiveHeap keeps in *peak the most live heap a garbage collection
// found, polling every millisecond until the returned stop is called.
func pollLiveHeap(peak *int64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			*peak = max(*peak, int64(s[0].Value.Uint64()))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// BenchmarkMemory runs each memory workload in a child process (one op is
// one workload) and reports its peak RSS (VmHWM) against the memory budget
// (256 MiB): hwm-MiB, over-budget-MiB (peak minus budget; the target is at
// most 64) and the spread of RSS samples taken after each eighth of the
// workload (flat-MiB: max minus min over the last six samples). Each
// workload runs twice: /gclimit with the Go memory limit GCMemoryLimit
// gives (what the rlrec command sets), /gogc with the garbage collector's
// defaults (the heap may grow to about twice the live data).
func BenchmarkMemory(b *testing.B) {
	type workload struct{ name, spec string }
	var workloads []workload
	for _, w := range []workload{
		{"image-episode-512MiB", "image:" + strconv.Itoa(512<<20)},
		{"image-episode-2GiB", "image:" + strconv.Itoa(2<<30)},
		{"open-episodes-256", "open:256:" + strconv.Itoa(1<<30)},
	} {
		workloads = append(workloads,
			workload{w.name + "/gclimit", w.spec + ":gclimit"},
			workload{w.name + "/gogc", w.spec})
	}
	for _, bc := range workloads {
		b.Run(bc.name, func(b *testing.B) {
			var res memResult
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), memChildEnv+"="+bc.spec, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
				cmd.Stderr = os.Stderr
				outb, err := cmd.Output()
				if err != nil {
					b.Fatalf("child %s: %v", bc.spec, err)
				}
				if err := json.Unmarshal(outb, &res); err != nil {
					b.Fatalf("child output %q: %v", outb, err)
				}
			}
			const mib = 1 << 20
			b.ReportMetric(float64(res.HWM)/mib, "hwm-MiB")
			b.ReportMetric(float64(res.HWM-res.Budget)/mib, "over-budget-MiB")
			b.ReportMetric(float64(res.Bytes)/mib/res.Seconds, "MiB/s")
			if len(res.RSS) >= 8 {
				tail := res.RSS[2:]
				b.ReportMetric(float64(slices.Max(tail)-slices.Min(tail))/mib, "flat-MiB")
			}
			var s []string
			for _, v := range res.RSS {
				s = append(s, strconv.FormatInt(v/mib, 10))
			}
			b.Logf("%s: rss after each eighth (MiB): %s; hwm %d MiB", bc.name, strings.Join(s, " "), res.HWM/mib)
		})
	}
}

// BenchmarkThroughputLongEpisodes records one 16-lane cartpole-shaped
// session of hand-built events with 10,000-step episodes (one op is one
// session of 20,000 batch steps, then Close), so that the per-episode file
// cost is spread over many rows: it measures the hook, pipeline, log and
// steps-writer path. The same driver into events.NoopHooks is timed in
// the same iteration and subtracted.
func BenchmarkThroughputLongEpisodes(b *testing.B) {
	const lanes, batchSteps, epLen = 16, 20000, 10000
	run := func(h events.Hooks) {
		d := newBenchDriver(h, benchSession, lanes, benchF32Box(4), 16)
		d.start()
		for i := epLen; i <= batchSteps; i += epLen {
			d.steps(epLen)
			for l := range d.n {
				d.complete(l)
				d.startEpisode(l, true)
			}
			d.observe()
		}
		d.end()
	}
	var tDrv, tRec time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		run(events.NoopHooks{})
		t1 := time.Now()
		r := openBench(b, filepath.Join(b.TempDir(), strconv.Itoa(i)))
		run(r)
		closeBench(b, r)
		tDrv += t1.Sub(t0)
		tRec += time.Since(t1)
	}
	ls := float64(lanes * batchSteps * b.N)
	b.ReportMetric(ls/(tRec-tDrv).Seconds(), "net-lane-steps/s")
	b.ReportMetric(ls/tRec.Seconds(), "gross-lane-steps/s")
	b.ReportMetric(ls/tDrv.Seconds(), "driver-lane-steps/s")
}
