package serve_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rlrec/rlrec/client"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/serve"
	"github.com/rlrec/rlrec/sim"
)

// The serve benchmarks run one simulated session per op four times in the
// same process, in the order A B B A: into a recorder in process (Open,
// sim.Run, Close), twice through rlrec serve on loopback (a server over a
// recorder, one client: Dial, sim.Run, client Close, server drain and
// recorder Close), and in process again. Every timing includes the
// recorder's Close, so every row is durable in Parquet when the clock
// stops. They report both rates and serve/inproc.
//
//	go test -c -o /tmp/serve.test ./serve
//	/tmp/serve.test -test.run '^$' -test.bench 'Serve' -test.benchtime 1x -test.count 5 -test.benchmem

var serveCases = []struct {
	name string
	cfg  sim.Config
}{
	{"cartpole/n=16", sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1000, TimeLimit: 200, Seed: 1}},
	{"pick-place/n=8", sim.Config{Env: "pick-place", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 160, TimeLimit: 60, Seed: 1}},
}

// obsBytes counts the observation payload of a session.
type obsBytes struct {
	events.NoopHooks
	n int64
}

func (o *obsBytes) OnObservationEmitted(_ context.Context, ev *events.ObservationEmitted) error {
	for _, l := range ev.Observation {
		o.n += int64(len(l))
	}
	return nil
}

func BenchmarkServe(b *testing.B) {
	for _, bc := range serveCases {
		b.Run(bc.name, func(b *testing.B) {
			var ob obsBytes
			sum, err := sim.Run(context.Background(), &ob, bc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			var tIn, tServe time.Duration
			for b.Loop() {
				// A B B A, so that a change of the machine's load
				// during the op weighs on both alike.
				tIn += inProcess(b, bc.cfg)
				tServe += throughServe(b, bc.cfg, nil)
				tServe += throughServe(b, bc.cfg, nil)
				tIn += inProcess(b, bc.cfg)
			}
			n := float64(2 * b.N)
			ls := float64(sum.LaneSteps)
			b.ReportMetric(ls*n/tIn.Seconds(), "inproc-lane-steps/s")
			b.ReportMetric(ls*n/tServe.Seconds(), "serve-lane-steps/s")
			b.ReportMetric(float64(ob.n)*n/tIn.Seconds()/1e6, "inproc-obs-MB/s")
			b.ReportMetric(float64(ob.n)*n/tServe.Seconds()/1e6, "serve-obs-MB/s")
			b.ReportMetric(tIn.Seconds()/tServe.Seconds(), "serve/inproc")
		})
	}
}

func inProcess(b *testing.B, cfg sim.Config) time.Duration {
	root := b.TempDir()
	start := time.Now()
	rec, err := recorder.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sim.Run(context.Background(), rec, cfg); err != nil {
		b.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// throughServe records cfg through a server on loopback; wrap, when set,
// wraps the client's hooks.
func throughServe(b *testing.B, cfg sim.Config, wrap func(*client.Client) events.Hooks) time.Duration {
	root := b.TempDir()
	start := time.Now()
	rec, err := recorder.Open(root, recorder.WithResume(true))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := serve.NewServer(rec)
	if err != nil {
		b.Fatal(err)
	}
	ts := serveRecorder(b, rec, srv)
	ctx := context.Background()
	c, err := client.Dial(ctx, ts.Addr)
	if err != nil {
		b.Fatal(err)
	}
	var h events.Hooks = c
	if wrap != nil {
		h = wrap(c)
	}
	if _, err := sim.Run(ctx, h, cfg); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		b.Fatal(err)
	}
	ts.stop(b)
	return time.Since(start)
}

// timedHooks records the latency of every step hook call.
type timedHooks struct {
	*client.Client
	mu    sync.Mutex
	lat   []time.Duration
	pause time.Duration
	next  time.Time
	// maxUnacked is the most bytes the client held unacknowledged, seen
	// after each step: far below WithMaxUnacked, the server kept up and
	// no hook waited for room.
	maxUnacked int64
}

func (h *timedHooks) time(f func() error) error {
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	h.mu.Lock()
	h.lat = append(h.lat, d)
	h.mu.Unlock()
	return err
}

func (h *timedHooks) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	return h.time(func() error { return h.Client.OnActionReceived(ctx, ev) })
}

func (h *timedHooks) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	err := h.time(func() error { return h.Client.OnStepCompleted(ctx, ev) })
	h.maxUnacked = max(h.maxUnacked, h.Client.Stats().UnackedBytes)
	// Pace against absolute deadlines: a late wake-up does not lower the
	// rate.
	if h.pause > 0 {
		if h.next.IsZero() {
			h.next = time.Now()
		}
		h.next = h.next.Add(h.pause)
		time.Sleep(time.Until(h.next))
	}
	return err
}

func (h *timedHooks) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	return h.time(func() error { return h.Client.OnObservationEmitted(ctx, ev) })
}

// BenchmarkServeHook measures the client's step hook calls (ActionReceived,
// StepCompleted, ObservationEmitted) while the server keeps up: the
// simulator is paced to a step rate the served recorder sustains here
// (cartpole: 2,000 batch steps a second, 32 k lane-steps/s; images: 250
// batches a second, 42 MB/s). The server runs in the client's process
// (server=same-process: the recorder's allocations bring garbage
// collections, and their assists, to the client's hooks) or in a process
// of its own, as in a deployment (server=own-process: this test binary
// run again as TestServerChild, recording with the default compression).
func BenchmarkServeHook(b *testing.B) {
	cases := []struct {
		name  string
		cfg   sim.Config
		pause time.Duration
	}{
		{"cartpole/n=16", sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 300, TimeLimit: 200, Seed: 1}, 500 * time.Microsecond},
		{"pick-place/n=8", sim.Config{Env: "pick-place", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 40, TimeLimit: 60, Seed: 1}, 4 * time.Millisecond},
	}
	for _, bc := range cases {
		for _, own := range []bool{false, true} {
			name := bc.name + "/server=same-process"
			if own {
				name = bc.name + "/server=own-process"
			}
			b.Run(name, func(b *testing.B) {
				var all []time.Duration
				var maxUnacked int64
				for b.Loop() {
					var th *timedHooks
					wrap := func(c *client.Client) events.Hooks {
						th = &timedHooks{Client: c, pause: bc.pause}
						return th
					}
					if own {
						toChild(b, bc.cfg, wrap)
					} else {
						throughServe(b, bc.cfg, wrap)
					}
					all = append(all, th.lat...)
					maxUnacked = max(maxUnacked, th.maxUnacked)
				}
				reportHooks(b, all, maxUnacked)
			})
		}
	}
}

// reportHooks reports the latency quantiles of the timed hook calls.
func reportHooks(b *testing.B, all []time.Duration, maxUnacked int64) {
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(q(0.999), "p99.9-µs")
	b.ReportMetric(float64(len(all))/float64(b.N), "calls/op")
	b.ReportMetric(float64(maxUnacked)/1e6, "max-unacked-MB")
}

// toChild records cfg through a server in a child process (see
// TestServerChild), with the client's hooks wrapped by wrap.
func toChild(b *testing.B, cfg sim.Config, wrap func(*client.Client) events.Hooks) {
	root := b.TempDir()
	addr := freeAddr(b)
	ch := startChild(b, root, addr, serverChildZstd+"=1")
	ctx := context.Background()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sim.Run(ctx, wrap(c), cfg); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		b.Fatal(err)
	}
	ch.term(b)
}
