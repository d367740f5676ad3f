package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

func streamOf(t *testing.T, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Run(context.Background(), NewStreamHooks(events.NewStreamWriter(&buf)), cfg); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSameSeedSameBytes(t *testing.T) {
	for _, name := range Envs() {
		for _, mode := range []Autoreset{AutoresetNextStep, AutoresetDisabled} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				cfg := limited(Config{Env: name, NumEnvs: lanesFor(mode, 3), Autoreset: mode, MaxEpisodes: 6, Seed: 42}, 30)
				cfg.Clock = fixedClock()
				a := streamOf(t, cfg)
				cfg.Clock = fixedClock()
				b := streamOf(t, cfg)
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Fatalf("two runs differ: %d and %d bytes", len(a), len(b))
				}
				cfg.Clock, cfg.Seed = fixedClock(), 43
				if c := streamOf(t, cfg); bytes.Equal(a, c) {
					t.Fatal("seeds 42 and 43 give the same stream")
				}
				// The stream reads back to a session that passes the checks.
				r := events.NewStreamReader(bytes.NewReader(a), 0)
				var evs []events.Event
				for r.Next() {
					evs = append(evs, r.Event())
				}
				if err := r.Err(); err != nil {
					t.Fatal(err)
				}
				checkSessionOpts(t, cfg, evs, false, false)
			})
		}
	}
}

func TestFailingSession(t *testing.T) {
	for _, name := range Envs() {
		for _, mode := range []Autoreset{AutoresetNextStep, AutoresetDisabled} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				cfg := limited(Config{Env: name, NumEnvs: lanesFor(mode, 3), Autoreset: mode, MaxEpisodes: 1000,
					FailAfterSteps: 25, Seed: 5, Clock: fixedClock()}, 10)
				c := &collector{}
				sum, err := Run(context.Background(), c, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !sum.Failed || sum.Steps != 25 {
					t.Fatalf("summary %+v, want failed after 25 steps", sum)
				}
				checkSession(t, cfg, c.all, true)
				last := c.all[len(c.all)-1].(*events.SessionFailed)
				if last.Reason == "" {
					t.Fatal("SessionFailed without a reason")
				}
				for _, ev := range c.all {
					if ev.Kind() == events.KindSessionEnded {
						t.Fatal("failed session has a SessionEnded")
					}
				}
			})
		}
	}
}

func TestCancelFailsSession(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &cancelAfter{n: 50, cancel: cancel}
	cfg := Config{Env: "cartpole", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 1 << 30, Seed: 1, Clock: fixedClock()}
	sum, err := Run(ctx, c, cfg)
	if !errors.Is(err, context.Canceled) || !sum.Failed {
		t.Fatalf("err %v summary %+v, want context.Canceled and failed", err, sum)
	}
	n := len(c.all)
	if ts, ok := c.all[n-2].(*events.TelemetrySnapshot); !ok || ts.Snapshot.Horizon != events.HorizonSession {
		t.Fatalf("second to last event %s, want the session snapshot", c.all[n-2].Kind())
	}
	if _, ok := c.all[n-1].(*events.SessionFailed); !ok {
		t.Fatalf("last event %s, want SessionFailed", c.all[n-1].Kind())
	}
	checkSession(t, cfg, c.all, true)
}

// cancelAfter cancels its context after n observations.
type cancelAfter struct {
	collector
	n      int
	cancel func()
}

func (c *cancelAfter) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return c.collector.OnObservationEmitted(ctx, ev)
}

// failingHooks fails every StepCompleted.
type failingHooks struct{ collector }

var errTestHook = errors.New("test hook failure")

func (f *failingHooks) OnStepCompleted(context.Context, *events.StepCompleted) error {
	return errTestHook
}

func TestHookErrorsDoNotStopTheSession(t *testing.T) {
	h := &failingHooks{}
	cfg := Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 3, Seed: 1, Clock: fixedClock()}
	sum, err := Run(context.Background(), h, cfg)
	if !errors.Is(err, ErrHook) || !errors.Is(err, errTestHook) {
		t.Fatalf("err = %v, want ErrHook wrapping the hook's error", err)
	}
	if sum.Failed || sum.Episodes < 3 {
		t.Fatalf("summary %+v: the session should have run to its end", sum)
	}
	if last := h.all[len(h.all)-1]; last.Kind() != events.KindSessionEnded {
		t.Fatalf("last event %s, want SessionEnded (rlmesh 0.1: after the final telemetry)", last.Kind())
	}
}

func TestRunSessionsConcurrent(t *testing.T) {
	var cfgs []Config
	for i, name := range []string{"cartpole", "pick-place", "all-leaves", "cartpole", "cartpole"} {
		mode := AutoresetNextStep
		if i%2 == 1 {
			mode = AutoresetDisabled
		}
		cfgs = append(cfgs, limited(Config{Env: name, NumEnvs: lanesFor(mode, 1+i), Autoreset: mode, MaxEpisodes: 8,
			Seed: 9, TelemetryInterval: time.Millisecond, Clock: fixedClock()}, 25))
	}
	cfgs[4].FailAfterSteps = 5 // one failing session among them
	c := &collector{}
	sums, err := RunSessions(context.Background(), c, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	got := c.bySession()
	if len(got) != len(cfgs) {
		t.Fatalf("%d sessions, want %d", len(got), len(cfgs))
	}
	for i, cfg := range cfgs {
		evs := got[sums[i].SessionID]
		if evs == nil {
			t.Fatalf("session %d (%s): no events", i, sums[i].SessionID)
		}
		if n := checkSession(t, cfg, evs, i == 4); n != sums[i].Episodes {
			t.Fatalf("session %d: %d episodes, summary says %d", i, n, sums[i].Episodes)
		}
	}
}

// lanesFor returns n, or 1 under disabled autoreset, the only lane count
// rlmesh allows with it.
func lanesFor(mode Autoreset, n int) int {
	if mode == AutoresetDisabled {
		return 1
	}
	return n
}

func TestRunSessionsDuplicateIDs(t *testing.T) {
	cfg := Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetNextStep, MaxEpisodes: 1, SessionID: "s",
		Route: events.RuntimeEnvContext{EnvID: "r"}}
	if _, err := RunSessions(context.Background(), events.NoopHooks{}, []Config{cfg, cfg}); !errors.Is(err, ErrDuplicateSession) {
		t.Fatalf("err = %v, want ErrDuplicateSession", err)
	}
	// A shared session id is fine: each run mints its own env id, as
	// rlmesh's local runner does.
	cfg.Route = events.RuntimeEnvContext{}
	sums, err := RunSessions(context.Background(), events.NoopHooks{}, []Config{cfg, cfg})
	if err != nil || sums[0].SessionID != "s" || sums[0].EnvID == sums[1].EnvID || len(sums[0].EnvID) != 36 {
		t.Fatalf("shared session id: err %v, env ids %q %q", err, sums[0].EnvID, sums[1].EnvID)
	}
	cfg.SessionID = ""
	sums, err = RunSessions(context.Background(), events.NoopHooks{}, []Config{cfg, cfg})
	if err != nil || sums[0].SessionID == sums[1].SessionID {
		t.Fatalf("equal configs: err %v, ids %s %s", err, sums[0].SessionID, sums[1].SessionID)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetNextStep, MaxEpisodes: 1}
	tests := []struct {
		name string
		edit func(*Config)
		want error // nil: the config is valid
		rule string
	}{
		{"unknown env", func(c *Config) { c.Env = "pong" }, ErrUnknownEnv, ""},
		{"zero lanes", func(c *Config) { c.NumEnvs = 0 }, ErrConfig, ""},
		{"no autoreset", func(c *Config) { c.Autoreset = 0 }, ErrConfig, ""},
		{"same-step autoreset", func(c *Config) { c.Autoreset = 3 }, ErrConfig, ""},
		{"zero episodes", func(c *Config) { c.MaxEpisodes = 0 }, ErrConfig, ""},
		{"negative step cap", func(c *Config) { c.Autoreset, c.MaxEpisodeSteps = AutoresetDisabled, -1 }, ErrConfig, ""},
		{"negative time cap", func(c *Config) { c.Autoreset, c.MaxEpisodeTime = AutoresetDisabled, -time.Second }, ErrConfig, ""},
		{"negative time limit", func(c *Config) { c.TimeLimit = -1 }, ErrConfig, ""},
		{"negative fail after", func(c *Config) { c.FailAfterSteps = -1 }, ErrConfig, ""},
		{"negative interval", func(c *Config) { c.TelemetryInterval = -time.Second }, ErrConfig, ""},

		// docs/rlmesh-wire.md §4a: num_envs > 1 requires next-step autoreset.
		{"next-step, 16 lanes", func(c *Config) { c.NumEnvs = 16 }, nil, ""},
		{"disabled, 1 lane", func(c *Config) { c.Autoreset = AutoresetDisabled }, nil, ""},
		{"disabled, 2 lanes", func(c *Config) { c.Autoreset, c.NumEnvs = AutoresetDisabled, 2 }, ErrConfig, "num_envs > 1 requires next-step autoreset"},
		{"disabled, 16 lanes", func(c *Config) { c.Autoreset, c.NumEnvs = AutoresetDisabled, 16 }, ErrConfig, "num_envs > 1 requires next-step autoreset"},

		// Step and time caps only under disabled autoreset.
		{"disabled, step cap", func(c *Config) { c.Autoreset, c.MaxEpisodeSteps = AutoresetDisabled, 10 }, nil, ""},
		{"disabled, time cap", func(c *Config) { c.Autoreset, c.MaxEpisodeTime = AutoresetDisabled, time.Second }, nil, ""},
		{"next-step, step cap", func(c *Config) { c.MaxEpisodeSteps = 10 }, ErrConfig, "step and time caps require disabled autoreset"},
		{"next-step, time cap", func(c *Config) { c.MaxEpisodeTime = time.Second }, ErrConfig, "step and time caps require disabled autoreset"},
		{"next-step, 4 lanes, step cap", func(c *Config) { c.NumEnvs, c.MaxEpisodeSteps = 4, 10 }, ErrConfig, "step and time caps require disabled autoreset"},
		// The env's own time limit is not the runtime's cap.
		{"next-step, 4 lanes, env time limit", func(c *Config) { c.NumEnvs, c.TimeLimit = 4, 10 }, nil, ""},
		{"disabled, env time limit", func(c *Config) { c.Autoreset, c.TimeLimit = AutoresetDisabled, 10 }, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			c := &collector{}
			_, err := Run(context.Background(), c, cfg)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("valid config: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.want, tc.rule)
			}
			if len(c.all) != 0 {
				t.Fatalf("%d events from an invalid config", len(c.all))
			}
			if _, err := RunSessions(context.Background(), c, []Config{ok, cfg}); !errors.Is(err, tc.want) || len(c.all) != 0 {
				t.Fatalf("RunSessions: err = %v, %d events; want %v before any session runs", err, len(c.all), tc.want)
			}
		})
	}
}

func TestParseAutoreset(t *testing.T) {
	for _, a := range []Autoreset{AutoresetNextStep, AutoresetDisabled} {
		if got, err := ParseAutoreset(a.String()); err != nil || got != a {
			t.Fatalf("ParseAutoreset(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := ParseAutoreset("same-step"); !errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
}

func TestUUIDv7(t *testing.T) {
	clock := fixedClock()
	for i := range 100 {
		now := clock()
		id := newUUIDv7(now, rand.New(rand.NewPCG(uint64(i), 0)))
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: not a UUIDv7 (%v)", id, err)
		}
		sec, nsec := u.Time().UnixTime()
		if got := time.Unix(sec, nsec).UnixMilli(); got != now.UnixMilli() {
			t.Fatalf("%s carries %d ms, want %d", id, got, now.UnixMilli())
		}
	}
}

func TestFloat16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001}, {1e-9, 0x0000},
		{1.00048828125, 0x3c00}, // halfway, rounds to even
		{1.0009765625, 0x3c01},
	}
	for _, tc := range tests {
		if got := float16(tc.in); got != tc.want {
			t.Errorf("float16(%v) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	for _, v := range []float32{-1.5, 0.25, 3.75, -0.125} {
		if got := blob.Float16ToFloat32(float16(v)); got != v {
			t.Errorf("round trip of %v gives %v", v, got)
		}
	}
	if got := float16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("float16(NaN) = %#04x", got)
	}
}

func ExampleRun() {
	sum, err := Run(context.Background(), events.NoopHooks{}, Config{
		Env: "cartpole", NumEnvs: 4, Autoreset: AutoresetNextStep, MaxEpisodes: 10, Seed: 1,
	})
	fmt.Println(err, sum.Episodes >= 10, sum.Failed)
	// Output: <nil> true false
}

// slowHooks slows observations down so window snapshots get a chance to
// fire mid-session.
type slowHooks struct{ collector }

func (s *slowHooks) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	time.Sleep(200 * time.Microsecond)
	return s.collector.OnObservationEmitted(ctx, ev)
}

func TestWindowTelemetry(t *testing.T) {
	for _, fail := range []int64{0, 150} {
		t.Run(fmt.Sprintf("fail-after=%d", fail), func(t *testing.T) {
			h := &slowHooks{}
			cfg := Config{Env: "cartpole", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 12,
				FailAfterSteps: fail, Seed: 3, TelemetryInterval: 2 * time.Millisecond}
			sum, err := Run(context.Background(), h, cfg)
			if err != nil {
				t.Fatal(err)
			}
			windows := 0
			for _, ev := range h.all {
				ts, ok := ev.(*events.TelemetrySnapshot)
				if !ok || ts.Snapshot.Horizon != events.HorizonWindow {
					continue
				}
				windows++
				for _, row := range ts.Snapshot.Rows {
					if row.Count == 0 || row.P50 > row.P95 || row.P95 > row.P99 {
						t.Fatalf("bad window row %+v", row)
					}
				}
			}
			if windows == 0 {
				t.Fatalf("no window snapshot in %d steps", sum.Steps)
			}
			// Window snapshots never come after the closing events.
			checkSession(t, cfg, h.all, fail > 0)
			// rlmesh 0.1: the final snapshot, then SessionEnded or
			// SessionFailed.
			final := h.all[len(h.all)-2]
			ts, ok := final.(*events.TelemetrySnapshot)
			if !ok || ts.Snapshot.Horizon != events.HorizonSession {
				t.Fatalf("final snapshot missing: %s", final.Kind())
			}
			var steps uint64
			for _, row := range ts.Snapshot.Rows {
				if row.Op == "env.step" && row.Metric == "rpc.total" {
					steps = row.Count
				}
			}
			if int64(steps) != sum.Steps {
				t.Fatalf("session snapshot counts %d steps, ran %d", steps, sum.Steps)
			}
		})
	}
}

// TestSlabsMatchJoinLanes checks the envs' in-place batch slabs against
// blob.JoinLanes of the same values split per lane.
func TestSlabsMatchJoinLanes(t *testing.T) {
	for _, name := range Envs() {
		t.Run(name, func(t *testing.T) {
			factory, err := lookupEnv(name)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5
			e := factory(n, rand.New(rand.NewPCG(1, 1)), rand.New(rand.NewPCG(1, 2)))
			obsSpec, actSpec := e.spaces()
			for step := range 3 {
				act := e.act()
				for lane := range n {
					e.step(lane, act)
				}
				for _, c := range []struct {
					what  string
					spec  *spacesv1.SpaceSpec
					slabs [][]byte
				}{{"action", actSpec, act}, {"observation", obsSpec, e.observe()}} {
					lanes, err := blob.SplitLanes(c.spec, c.slabs, n)
					if err != nil {
						t.Fatalf("step %d %s: split: %v", step, c.what, err)
					}
					joined, err := blob.JoinLanes(c.spec, lanes)
					if err != nil {
						t.Fatalf("step %d %s: join: %v", step, c.what, err)
					}
					if len(joined) != len(c.slabs) {
						t.Fatalf("step %d %s: %d slabs rejoin to %d", step, c.what, len(c.slabs), len(joined))
					}
					for i := range joined {
						if !bytes.Equal(joined[i], c.slabs[i]) {
							t.Fatalf("step %d %s: slab %d differs from blob.JoinLanes", step, c.what, i)
						}
					}
				}
			}
		})
	}
}
