package serve_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rlrec/rlrec/client"
	"github.com/rlrec/rlrec/serve"
	"github.com/rlrec/rlrec/sim"
)

// TestConcurrentClients runs many clients at once into one server: the
// ROOT holds what recording the same sessions in process gives.
func TestConcurrentClients(t *testing.T) {
	var workloads [][]sim.Config
	for c := range 8 {
		workloads = append(workloads, workload(c, 2, 12))
	}
	want := reference(t, workloads)
	root := t.TempDir()
	ts := startServer(t, root, "127.0.0.1:0")
	stats := runClients(t, ts.Addr, workloads)
	var m strings.Builder
	ts.srv.WriteMetrics(&m)
	ts.stop(t)
	for i, s := range stats {
		if s.Queued == 0 || s.Acked != s.Queued || s.Refused != 0 {
			t.Errorf("client %d: %+v", i, s)
		}
	}
	got := digest(t, root)
	if got != want {
		t.Errorf("the served ROOT differs from recording in process:\n%s", diffLines(want, got))
	}
	// Half the sessions sent a window snapshot after their end: recorded
	// as telemetry, no problem.
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "session ") && !strings.Contains(l, " problems=0 ") {
			t.Errorf("a recording with problems: %s", l)
		}
	}
	for _, name := range []string{"rlrec_serve_events_total", "rlrec_serve_flush_seconds_count", "rlrec_recorder_episodes_written_total", "rlrec_serve_queue_bytes 0"} {
		if !strings.Contains(m.String(), name) {
			t.Errorf("metrics lack %q:\n%s", name, m.String())
		}
	}
}

// TestKilledConnections breaks the clients' connections at random points,
// at least 50 times: each client reconnects and resends, and every event
// is in the tables exactly once.
func TestKilledConnections(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var workloads [][]sim.Config
	for c := range 4 {
		workloads = append(workloads, workload(c, 2, 60))
	}
	want := reference(t, workloads)
	root := t.TempDir()
	ts := startServer(t, root, "127.0.0.1:0")
	const kills = 60
	proxy := newChaosProxy(t, ts.Addr, kills, seed)
	stats := runClients(t, proxy.Addr(), workloads, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		client.WithBatchBytes(16<<10))
	ts.stop(t)
	var reconnects, resent uint64
	for _, s := range stats {
		reconnects += s.Reconnects
		resent += s.Resent
	}
	t.Logf("%d connections killed, %d reconnects, %d events resent", proxy.killed.Load(), reconnects, resent)
	if proxy.killed.Load() < 50 || reconnects < 50 {
		t.Errorf("%d connections killed and %d reconnects, want at least 50 (make the workload longer)", proxy.killed.Load(), reconnects)
	}
	if got := digest(t, root); got != want {
		t.Errorf("after killed connections the ROOT differs from recording in process (seed %d):\n%s", seed, diffLines(want, got))
	}
}

// TestToken: a server with a token refuses clients without it or with a
// wrong one, and takes the right one; health needs none.
func TestToken(t *testing.T) {
	root := t.TempDir()
	ts := startServer(t, root, "127.0.0.1:0", serve.WithToken("s3cret"))
	defer ts.stop(t)
	ev := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2, Seed: 3, SessionID: "tok"}
	tests := []struct {
		name  string
		opts  []client.Option
		wantE error
	}{
		{"missing", nil, client.ErrUnauthenticated},
		{"wrong", []client.Option{client.WithToken("guess")}, client.ErrUnauthenticated},
		{"right", []client.Option{client.WithToken("s3cret")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := client.Dial(ctx, ts.Addr, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			cfg := ev
			cfg.SessionID = "tok-" + tc.name
			sim.Run(ctx, c, cfg)
			err = c.Flush(ctx)
			if !errors.Is(err, tc.wantE) || (tc.wantE == nil) != (err == nil) {
				t.Errorf("Flush = %v, want %v", err, tc.wantE)
			}
			if tc.wantE != nil {
				if err := c.Record(ctx, nil); err == nil {
					t.Errorf("a refused client still takes events")
				}
			}
			c.Close(ctx)
		})
	}
	cc, err := grpc.NewClient(ts.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health without a token: %v, %v", resp, err)
	}
}

// TestCheckListen: a non-loopback address needs a token.
func TestCheckListen(t *testing.T) {
	tests := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7465", "", true},
		{"[::1]:7465", "", true},
		{"localhost:7465", "", true},
		{"0.0.0.0:7465", "", false},
		{":7465", "", false},
		{"192.0.2.7:7465", "", false},
		{"0.0.0.0:7465", "t", true},
		{"no-port", "", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s token=%q", tc.addr, tc.token), func(t *testing.T) {
			err := serve.CheckListen(tc.addr, tc.token)
			if (err == nil) != tc.ok {
				t.Errorf("CheckListen = %v, want ok=%t", err, tc.ok)
			}
		})
	}
}
