package serve_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/rlrec/rlrec/client"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/serve"
	"github.com/rlrec/rlrec/sim"
)

// fast keeps the tests quick: compression plays no part in them.
var fast = recorder.WithCompression(recorder.CompressionNone)

// testServer is a recorder and an ingest server on a loopback port.
type testServer struct {
	Addr string
	rec  *recorder.Recorder
	srv  *serve.Server
	gs   *grpc.Server
	lis  net.Listener
	done chan error
}

// startServer serves root on addr ("127.0.0.1:0" for any port).
func startServer(t testing.TB, root, addr string, opts ...serve.Option) *testServer {
	t.Helper()
	rec, err := recorder.Open(root, fast, recorder.WithResume(true))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.NewServer(rec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, rec, srv, addr)
}

// serveRecorder serves srv over rec on a loopback port.
func serveRecorder(t testing.TB, rec *recorder.Recorder, srv *serve.Server) *testServer {
	return serveOn(t, rec, srv, "127.0.0.1:0")
}

func serveOn(t testing.TB, rec *recorder.Recorder, srv *serve.Server, addr string) *testServer {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(gs)
	ts := &testServer{Addr: lis.Addr().String(), rec: rec, srv: srv, gs: gs, lis: lis, done: make(chan error, 1)}
	go func() { ts.done <- gs.Serve(lis) }()
	return ts
}

// stop drains, stops and closes, as SIGTERM does.
func (ts *testServer) stop(t testing.TB) {
	t.Helper()
	if err := ts.shutdown(t); err != nil {
		t.Errorf("close recorder: %v", err)
	}
}

// shutdown is stop, returning the recorder's Close error.
func (ts *testServer) shutdown(t testing.TB) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Drain(ctx); err != nil {
		t.Errorf("drain: %v", err)
	}
	ts.gs.GracefulStop()
	<-ts.done
	ts.srv.Close()
	return ts.rec.Close(ctx)
}

// workload is the simulated sessions of one client.
func workload(client, sessions int, episodes int64) []sim.Config {
	var cfgs []sim.Config
	for s := range sessions {
		n := 1 + (client+s)%4
		auto := sim.AutoresetNextStep
		env := "cartpole"
		if n == 1 {
			auto = sim.AutoresetDisabled
		}
		if (client+s)%5 == 3 {
			env = "all-leaves"
		}
		cfgs = append(cfgs, sim.Config{
			Env: env, NumEnvs: n, Autoreset: auto, MaxEpisodes: episodes, TimeLimit: 25,
			// Half the sessions deliver a window snapshot after their end.
			LateWindow: (client+s)%2 == 0,
			Seed:       uint64(100*client + s + 1),
			SessionID:  fmt.Sprintf("client-%d", client),
			Clock:      sim.StepClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), time.Millisecond),
		})
	}
	return cfgs
}

// reference records the workloads in process and returns the digest.
func reference(t testing.TB, workloads [][]sim.Config) string {
	t.Helper()
	root := t.TempDir()
	rec, err := recorder.Open(root, fast)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, w := range workloads {
		wg.Go(func() {
			if _, err := sim.RunSessions(context.Background(), rec, withClocks(w)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return digest(t, root)
}

// withClocks gives each config a fresh clock, so that two runs of the
// same workload emit the same events.
func withClocks(cfgs []sim.Config) []sim.Config {
	out := append([]sim.Config(nil), cfgs...)
	for i := range out {
		out[i].Clock = sim.StepClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), time.Millisecond)
	}
	return out
}

// digest renders what a ROOT holds, less the recording times (which the
// client's clock stamps), as sorted lines: two ROOTs that recorded the
// same events once each have the same digest.
func digest(t testing.TB, root string) string {
	t.Helper()
	ds, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sessions, err := ds.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		r := s.Row()
		if r == nil || len(s.Rows) != 1 {
			t.Errorf("recording %v: %d session rows", s.Recording, len(s.Rows))
			continue
		}
		lines = append(lines, fmt.Sprintf("session %v status=%s steps=%d episodes=%d dropped=%d problems=%d %s",
			s.Recording, r.Status, r.StepsRecorded, r.EpisodesRecorded, r.DroppedSteps, r.Problems, deref(r.ProblemSummary)))
		eps, err := ds.Episodes(s.Recording)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			row := e.Row
			lines = append(lines, fmt.Sprintf("episode %v %s %s steps=%d reward=%g term=%t trunc=%t lane=%d",
				s.Recording, row.EpisodeRecordID, row.Status, row.StepsRecorded, row.RewardSum, row.Terminated, row.Truncated, row.EnvIndex))
			st, err := ds.Steps(s.Recording, row.EpisodeRecordID)
			if err != nil {
				if row.StepsRecorded == 0 {
					continue
				}
				t.Fatal(err)
			}
			h := sha256.New()
			n := 0
			for st.Next() {
				x := st.Step()
				fmt.Fprintf(h, "%s %d %d %d %g %t %t %t %t %x %x\n", x.EpisodeID, x.EnvIndex, x.Step, x.SessionStep, x.Reward,
					x.IsFirst, x.IsLast, x.Terminated, x.Truncated, x.ObservationBlob, x.ActionBlob)
				n++
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			st.Close()
			lines = append(lines, fmt.Sprintf("steps %v %s rows=%d %x", s.Recording, row.EpisodeRecordID, n, h.Sum(nil)[:8]))
		}
		logs, err := ds.Logs(s.Recording)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			lines = append(lines, fmt.Sprintf("log %v %s %s", s.Recording, l.Level, l.Message))
		}
		tele, err := ds.Telemetry(s.Recording)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("telemetry %v rows=%d", s.Recording, len(tele)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// diffLines shows the lines of want and got that the other lacks.
func diffLines(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	n := 0
	for l := range w {
		if !g[l] && n < 20 {
			fmt.Fprintf(&b, "- %s\n", l)
			n++
		}
	}
	for l := range g {
		if !w[l] && n < 40 {
			fmt.Fprintf(&b, "+ %s\n", l)
			n++
		}
	}
	return b.String()
}

// runClients runs each workload through its own client dialled to addr,
// flushes and closes each, and returns their stats.
func runClients(t testing.TB, addr string, workloads [][]sim.Config, opts ...client.Option) []client.Stats {
	t.Helper()
	stats := make([]client.Stats, len(workloads))
	var wg sync.WaitGroup
	for i, w := range workloads {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := client.Dial(ctx, addr, opts...)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := sim.RunSessions(ctx, c, withClocks(w)); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			if err := c.Flush(ctx); err != nil {
				t.Errorf("client %d: flush: %v", i, err)
			}
			stats[i] = c.Stats()
			if err := c.Close(ctx); err != nil {
				t.Errorf("client %d: close: %v", i, err)
			}
		})
	}
	wg.Wait()
	return stats
}

// chaosProxy forwards loopback TCP connections to a server and kills each
// of the first kills connections after a random number of bytes from the
// client, so that streams break at random points.
type chaosProxy struct {
	lis    net.Listener
	target string
	left   atomic.Int64
	killed atomic.Int64
	rng    *rand.Rand
	mu     sync.Mutex
	wg     sync.WaitGroup
}

func newChaosProxy(t testing.TB, target string, kills int64, seed uint64) *chaosProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &chaosProxy{lis: lis, target: target, rng: rand.New(rand.NewPCG(seed, 7))}
	p.left.Store(kills)
	p.wg.Go(p.accept)
	t.Cleanup(func() { lis.Close(); p.wg.Wait() })
	return p
}

func (p *chaosProxy) Addr() string { return p.lis.Addr().String() }

func (p *chaosProxy) accept() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *chaosProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	budget := int64(-1)
	if p.left.Add(-1) >= 0 {
		p.mu.Lock()
		budget = 2<<10 + p.rng.Int64N(96<<10)
		p.mu.Unlock()
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(c, s)
		done <- struct{}{}
	}()
	go func() {
		var err error
		if budget < 0 {
			_, err = io.Copy(s, c)
		} else {
			_, err = io.CopyN(s, c, budget)
			if err == nil {
				p.killed.Add(1)
			}
		}
		_ = err
		done <- struct{}{}
	}()
	<-done
	// Either side ended or the budget ran out: kill both directions.
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
	s.Close()
	<-done
}
