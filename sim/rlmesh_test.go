package sim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Tests of what docs/rlmesh-wire.md §4a says the runtime does: caps, telemetry, the
// log line and end reasons, empty reward vectors.

// scripted is a test env whose episodes end by themselves after endAt
// steps (never when 0): terminated, or truncated with truncate. Reward 1
// a step; final_info {is_success: true}.
type scripted struct {
	n        int
	endAt    int64
	truncate bool
	t        []int64
	obsBuf   []byte
	actBuf   []byte
	obsSlabs [][]byte
	actSlabs [][]byte
	obsSpec  *spacesv1.SpaceSpec
	actSpec  *spacesv1.SpaceSpec
}

func scriptedEnv(endAt int64, truncate bool) envFactory {
	return func(n int, _, _ *rand.Rand) env {
		e := &scripted{n: n, endAt: endAt, truncate: truncate, t: make([]int64, n),
			obsBuf: make([]byte, 4*n), actBuf: make([]byte, 8*n),
			obsSpec: boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 1),
			actSpec: discreteSpec(spacesv1.DataType_DATA_TYPE_INT64, 2, 0)}
		e.obsSlabs, e.actSlabs = [][]byte{e.obsBuf}, [][]byte{e.actBuf}
		return e
	}
}

func (e *scripted) spaces() (obs, act *spacesv1.SpaceSpec) { return e.obsSpec, e.actSpec }
func (e *scripted) reset(lane int)                         { e.t[lane] = 0 }
func (e *scripted) step(lane int, _ [][]byte) (float64, bool, bool) {
	e.t[lane]++
	if e.endAt > 0 && e.t[lane] >= e.endAt {
		return 1, !e.truncate, e.truncate
	}
	return 1, false, false
}
func (e *scripted) observe() [][]byte {
	for i := range e.n {
		putF32(e.obsBuf, 4*i, float32(e.t[i]))
	}
	return e.obsSlabs
}
func (e *scripted) act() [][]byte { return e.actSlabs }
func (e *scripted) finalInfo(int) *spacesv1.MetaMap {
	return &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
		"is_success": {Kind: &spacesv1.MetaValue_Bool{Bool: true}}}}
}

// completions keeps only what the cap tests look at, so that runs of
// 100,000 steps stay cheap.
type completions struct {
	events.NoopHooks
	mu     sync.Mutex
	done   []events.EpisodeCompleted
	reason string
}

func (c *completions) OnEpisodeCompleted(_ context.Context, ev *events.EpisodeCompleted) error {
	c.mu.Lock()
	c.done = append(c.done, *ev)
	c.mu.Unlock()
	return nil
}
func (c *completions) OnSessionFailed(_ context.Context, ev *events.SessionFailed) error {
	c.reason = ev.Reason
	return nil
}
func (c *completions) OnSessionEnded(_ context.Context, ev *events.SessionEnded) error {
	c.reason = ev.Reason
	return nil
}

// TestCaps checks rlmesh rc.5's caps and env server (OrderRC5): the
// server's second report of a capped episode, capped completions without
// final_info. rlmesh 0.1's (one completion, the step's infos as final
// info) are TestOrder01's.
func TestCaps(t *testing.T) {
	type done struct {
		lane       int32
		steps      int64
		terminated bool
		info       bool // final_info present: the env ended the episode
	}
	endless := scriptedEnv(0, false)
	tests := []struct {
		name string
		cfg  Config
		want []done
		// minDuration is the least duration_ms of every completion.
		minDuration int64
	}{
		{"disabled caps at 100,000 steps by default",
			Config{Autoreset: AutoresetDisabled, MaxEpisodes: 1, testEnv: endless},
			[]done{{0, DefaultMaxEpisodeSteps, false, false}}, 0},
		{"next-step has no default cap",
			Config{Autoreset: AutoresetNextStep, NumEnvs: 2, MaxEpisodes: 1, FailAfterSteps: DefaultMaxEpisodeSteps + 5, testEnv: endless},
			nil, 0},
		{"step cap",
			Config{Autoreset: AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 7, testEnv: endless},
			[]done{{0, 7, false, false}, {0, 7, false, false}}, 0},
		{"the env terminates before the cap",
			Config{Autoreset: AutoresetDisabled, MaxEpisodes: 1, MaxEpisodeSteps: 7, testEnv: scriptedEnv(5, false)},
			[]done{{0, 5, true, true}}, 0},
		{"the env terminates on the cap's step",
			Config{Autoreset: AutoresetDisabled, MaxEpisodes: 1, MaxEpisodeSteps: 7, testEnv: scriptedEnv(7, false)},
			[]done{{0, 7, true, true}}, 0},
		{"the env truncates on the cap's step",
			Config{Autoreset: AutoresetDisabled, MaxEpisodes: 1, MaxEpisodeSteps: 7, testEnv: scriptedEnv(7, true)},
			[]done{{0, 7, false, true}}, 0},
		{"the env's time limit on the cap's step",
			Config{Autoreset: AutoresetDisabled, MaxEpisodes: 1, MaxEpisodeSteps: 7, TimeLimit: 7, testEnv: endless},
			[]done{{0, 7, false, true}}, 0},
		{"the env's time limit under next-step",
			Config{Autoreset: AutoresetNextStep, NumEnvs: 3, MaxEpisodes: 3, TimeLimit: 4, testEnv: endless},
			[]done{{0, 4, false, true}, {1, 4, false, true}, {2, 4, false, true}}, 0},
		{"time cap",
			// Steps end 0.3-0.8 ms into their 20 ms periods: the 5th ends
			// just past 80 ms of simulated time.
			Config{Autoreset: AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeTime: 80 * time.Millisecond, testEnv: endless},
			[]done{{0, 5, false, false}, {0, 5, false, false}}, 80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Env = "scripted"
			cfg.NumEnvs = max(cfg.NumEnvs, 1)
			cfg.Order = OrderRC5
			if cfg.Clock == nil {
				cfg.Clock = fixedClock()
			}
			c := &completions{}
			sum, err := Run(context.Background(), c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []done
			for _, ec := range c.done {
				got = append(got, done{ec.EnvIndex, ec.StepCount, ec.Terminated, ec.FinalInfo != nil})
				if ec.Terminated == ec.Truncated {
					t.Fatalf("%s: terminated %v truncated %v", ec.EpisodeRecordID, ec.Terminated, ec.Truncated)
				}
				if ec.DurationMs < tc.minDuration {
					t.Fatalf("%s: %d ms, want at least %d", ec.EpisodeRecordID, ec.DurationMs, tc.minDuration)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("completions %+v, want %+v", got, tc.want)
			}
			if sum.Failed != (cfg.FailAfterSteps > 0) {
				t.Fatalf("summary %+v", sum)
			}
			if sum.Steps < 1000 {
				// Short enough to check every event.
				h := &collector{}
				if _, err := Run(context.Background(), h, cfg); err != nil {
					t.Fatal(err)
				}
				checkSession(t, cfg, h.all, sum.Failed)
			}
		})
	}
}

func TestSeriesSorted(t *testing.T) {
	if len(seriesDefs) != len(opMetrics) {
		t.Fatalf("%d series, want %d", len(seriesDefs), len(opMetrics))
	}
	for i, d := range seriesDefs {
		if w := opMetrics[i]; d.op != w.op || d.component != w.component || d.metric != w.metric {
			t.Fatalf("series %d is %s/%s/%s, want %+v", i, d.op, d.component, d.metric, w)
		}
		if i > 0 {
			p := seriesDefs[i-1]
			if p.op > d.op || p.op == d.op && (p.component > d.component || p.component == d.component && p.metric >= d.metric) {
				t.Fatalf("series %d (%s %s) sorts before %d (%s %s)", i, d.op, d.metric, i-1, p.op, p.metric)
			}
		}
	}
}

func TestMeter(t *testing.T) {
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
		}
		return v
	}
	tests := []struct {
		name               string
		values             []float64
		count              uint64
		avg, p50, p95, p99 float64
		kept               int // samples the reservoir holds
	}{
		{"one sample", []float64{5}, 1, 5, 5, 5, 5, 1},
		// Nearest rank as rlmesh computes it: index ceil((n-1)·q).
		{"four samples", []float64{40, 10, 30, 20}, 4, 25, 30, 40, 40, 4},
		{"a hundred", seq(100), 100, 50.5, 51, 96, 100, 100},
		{"a full reservoir", seq(reservoirSize), reservoirSize, (reservoirSize + 1) / 2.0, 4097, 7783, 8111, reservoirSize},
		{"past the reservoir", slices.Repeat([]float64{7}, 3*reservoirSize), 3 * reservoirSize, 7, 7, 7, 7, reservoirSize},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMeter(true)
			var batch []sample
			for _, v := range tc.values {
				batch = append(batch, sample{stepRPC, v})
			}
			m.add(batch)
			if got := len(m.session[stepRPC].samples); got != tc.kept {
				t.Fatalf("reservoir holds %d samples, want %d", got, tc.kept)
			}
			want := events.TelemetryRow{Op: "env.step", Component: "env", Metric: "rpc.total", Kind: events.MetricDurationMs,
				Count: tc.count, Avg: tc.avg, P50: tc.p50, P95: tc.p95, P99: tc.p99}
			for _, h := range []events.TelemetryHorizon{events.HorizonWindow, events.HorizonSession} {
				snap := m.snapshot(h)
				if len(snap.Rows) != 1 || snap.Rows[0] != want || snap.Horizon != h {
					t.Fatalf("%v snapshot %+v, want one row %+v", h, snap, want)
				}
			}
			// The window started again; the session keeps its samples.
			if snap := m.snapshot(events.HorizonWindow); len(snap.Rows) != 0 {
				t.Fatalf("window after a snapshot has rows %+v", snap.Rows)
			}
			if snap := m.snapshot(events.HorizonSession); len(snap.Rows) != 1 || snap.Rows[0].Count != tc.count {
				t.Fatalf("session snapshot %+v", snap)
			}
		})
	}
	t.Run("uniform sample", func(t *testing.T) {
		m := newMeter(true)
		const n = 20 * reservoirSize
		batch := make([]sample, n)
		for i := range batch {
			batch[i] = sample{predictRPC, float64(i)}
		}
		m.add(batch)
		row := m.snapshot(events.HorizonSession).Rows[0]
		// Roughly the quantiles of 0..n-1 (a 5σ band of a sample of 8,192).
		for _, c := range []struct{ got, q float64 }{{row.Avg, 0.5}, {row.P50, 0.5}, {row.P95, 0.95}, {row.P99, 0.99}} {
			if want := c.q * n; math.Abs(c.got-want) > 5*n*math.Sqrt(c.q*(1-c.q)/reservoirSize)+1 {
				t.Errorf("quantile %v is %v, want about %v", c.q, c.got, want)
			}
		}
		if row.Count != n {
			t.Fatalf("count %d", row.Count)
		}
	})
	t.Run("empty", func(t *testing.T) {
		m := newMeter(true)
		for _, h := range []events.TelemetryHorizon{events.HorizonWindow, events.HorizonSession} {
			if snap := m.snapshot(h); len(snap.Rows) != 0 {
				t.Fatalf("%v snapshot of nothing has rows", h)
			}
		}
	})
}

// pausingHooks sleeps in every observation hook: the session then records
// nothing while window ticks come.
type pausingHooks struct {
	collector
	pause time.Duration
}

func (p *pausingHooks) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	time.Sleep(p.pause)
	return p.collector.OnObservationEmitted(ctx, ev)
}

func TestEmptyWindowsSkipped(t *testing.T) {
	h := &pausingHooks{pause: 20 * time.Millisecond}
	cfg := Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetNextStep, MaxEpisodes: 1000, FailAfterSteps: 5,
		Seed: 1, TelemetryInterval: time.Millisecond}
	start := time.Now()
	if _, err := Run(context.Background(), h, cfg); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	windows := 0
	for _, ev := range h.all {
		if ts, ok := ev.(*events.TelemetrySnapshot); ok && ts.Snapshot.Horizon == events.HorizonWindow {
			windows++
		}
	}
	// About elapsed/1ms ticks, but samples arrive once per round: the
	// start and the 5 rounds that end with an observation.
	if windows == 0 || windows > 6 {
		t.Fatalf("%d window snapshots in %v of 1 ms ticks, want 1 to 6", windows, elapsed)
	}
	checkSession(t, cfg, h.all, true) // and none of them is empty
}

func TestLogLineAndReasons(t *testing.T) {
	clock := func(tick time.Duration) func() time.Time {
		return StepClock(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), tick)
	}
	tests := []struct {
		name   string
		cfg    Config
		cancel bool
		log    string // the log line, or a pattern
		end    events.Kind
		reason string // the reason, or a pattern
	}{
		{"success", Config{NumEnvs: 3, MaxEpisodes: 2, Clock: clock(3 * time.Millisecond)},
			false, `env reset complete in 1ms (3 episode(s) ready)`, events.KindSessionEnded, `completed requested episodes`},
		{"one lane, disabled", Config{NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 1, Clock: clock(1500 * time.Microsecond)},
			false, `env reset complete in 1ms (1 episode(s) ready)`, events.KindSessionEnded, `completed requested episodes`},
		{"wall clock", Config{NumEnvs: 16, MaxEpisodes: 1},
			false, `^env reset complete in [0-9]+ms \(16 episode\(s\) ready\)$`, events.KindSessionEnded, `completed requested episodes`},
		{"env step failure", Config{NumEnvs: 2, MaxEpisodes: 1000, FailAfterSteps: 4, Clock: clock(time.Millisecond / 4)},
			false, `env reset complete in 1ms (2 episode(s) ready)`, events.KindSessionFailed,
			`^environment env\.step failed at runtime step 0: injected fault after 4 steps\. If the source is 'transport error: connection closed', the environment server exited`},
		{"cancelled", Config{NumEnvs: 2, MaxEpisodes: 1 << 30},
			true, `^env reset complete in`, events.KindSessionFailed,
			`^route [0-9a-f-]{36} cancelled at runtime step [0-9]+: context canceled$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Env, cfg.Seed = "cartpole", 3
			if cfg.Autoreset == 0 {
				cfg.Autoreset = AutoresetNextStep
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var h events.Hooks
			c := &collector{}
			h = c
			if tc.cancel {
				ca := &cancelAfter{n: 20, cancel: cancel}
				h, c = ca, &ca.collector
			}
			sum, err := Run(ctx, h, cfg)
			if tc.cancel != errors.Is(err, context.Canceled) || !tc.cancel && err != nil {
				t.Fatal(err)
			}
			checkSession(t, cfg, c.all, tc.end == events.KindSessionFailed)
			match := func(what, got, want string) {
				t.Helper()
				if strings.HasPrefix(want, "^") {
					if !regexp.MustCompile(want).MatchString(got) {
						t.Fatalf("%s %q does not match %s", what, got, want)
					}
				} else if got != want {
					t.Fatalf("%s %q, want %q", what, got, want)
				}
			}
			match("log line", c.all[1].(*events.Log).Message, tc.log)
			reason := ""
			for _, ev := range c.all {
				switch e := ev.(type) {
				case *events.SessionEnded:
					reason = e.Reason
				case *events.SessionFailed:
					reason = e.Reason
					if tc.cancel && !strings.Contains(reason, sum.EnvID) {
						t.Fatalf("reason %q does not name route %s", reason, sum.EnvID)
					}
				}
			}
			match("reason", reason, tc.reason)
		})
	}
}

func TestEmptyRewards(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		// someEmpty: the run must have steps whose rewards are all zero.
		someEmpty bool
	}{
		{"sparse rewards, next-step", Config{Env: "pick-place", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 15}, true},
		{"sparse rewards, disabled", Config{Env: "pick-place", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 15}, true},
		{"a reward every step", Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 3}, false},
		{"negative and positive rewards", Config{Env: "all-leaves", NumEnvs: 3, Autoreset: AutoresetNextStep, MaxEpisodes: 4}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps := func(empty bool) ([]*events.StepCompleted, []events.Event) {
				cfg := tc.cfg
				cfg.EmptyRewards, cfg.Seed, cfg.Clock = empty, 4, fixedClock()
				c := &collector{}
				if _, err := Run(context.Background(), c, cfg); err != nil {
					t.Fatal(err)
				}
				checkSession(t, cfg, c.all, false)
				var sc []*events.StepCompleted
				for _, ev := range c.all {
					if e, ok := ev.(*events.StepCompleted); ok {
						sc = append(sc, e)
					}
				}
				return sc, c.all
			}
			plain, _ := steps(false)
			withOption, evs := steps(true)
			if len(plain) != len(withOption) {
				t.Fatalf("%d steps with the option, %d without", len(withOption), len(plain))
			}
			empty := 0
			for i, p := range plain {
				allZero := !slices.ContainsFunc(p.Rewards, func(r float64) bool { return r != 0 })
				if w := withOption[i].Rewards; allZero && len(w) != 0 || !allZero && !slices.Equal(w, p.Rewards) {
					t.Fatalf("step %d: rewards %v with the option, %v without", i, w, p.Rewards)
				}
				if len(p.Rewards) != tc.cfg.NumEnvs {
					t.Fatalf("step %d without the option: %d rewards", i, len(p.Rewards))
				}
				if allZero {
					empty++
				}
			}
			if tc.someEmpty != (empty > 0) {
				t.Fatalf("%d of %d steps have all-zero rewards", empty, len(plain))
			}
			// Rewards are what they were: so are the episodes' sums.
			for _, ev := range evs {
				if ec, ok := ev.(*events.EpisodeCompleted); ok && tc.cfg.Env == "pick-place" && ec.CumulativeReward != 0 && ec.CumulativeReward != 1 {
					t.Fatalf("%s: cumulative reward %v", ec.EpisodeRecordID, ec.CumulativeReward)
				}
			}
		})
	}
}
