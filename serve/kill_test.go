package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlrec/rlrec/client"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/serve"
	"github.com/rlrec/rlrec/sim"
)

// The kill test runs the server in a child process (this test binary, run
// again with serverChildRoot set), kills it with SIGKILL at random
// moments while clients in the test process keep recording, and starts it
// again on the same ROOT and port.
const (
	serverChildRoot = "RLREC_INGEST_CHILD_ROOT"
	serverChildAddr = "RLREC_INGEST_CHILD_ADDR"
	// serverChildZstd, when set, gives the child's recorder the default
	// compression instead of none (the benchmarks').
	serverChildZstd = "RLREC_INGEST_CHILD_ZSTD"
	// killSeedEnv, when set, is the seed of TestServerKilled's kill
	// times (the one a failed run printed), instead of the clock's.
	killSeedEnv = "RLREC_KILL_SEED"
)

// TestServerChild is the child's side; it does nothing unless run by
// TestServerKilled. It serves until SIGTERM, which drains and closes.
func TestServerChild(t *testing.T) {
	root := os.Getenv(serverChildRoot)
	if root == "" {
		return
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	var ts *testServer
	if os.Getenv(serverChildZstd) != "" {
		rec, err := recorder.Open(root, recorder.WithResume(true))
		if err != nil {
			t.Fatal(err)
		}
		srv, err := serve.NewServer(rec)
		if err != nil {
			t.Fatal(err)
		}
		ts = serveOn(t, rec, srv, os.Getenv(serverChildAddr))
	} else {
		ts = startServer(t, root, os.Getenv(serverChildAddr))
	}
	fmt.Printf("ready %s\n", ts.Addr)
	<-term
	ts.stop(t)
}

// child is a running server process.
type child struct {
	cmd *exec.Cmd
}

func startChild(t testing.TB, root, addr string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerChild$", "-test.count=1", "-test.bench=^$")
	cmd.Env = append(append(os.Environ(), serverChildRoot+"="+root, serverChildAddr+"="+addr), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- nil
				// Keep reading so the child never blocks on its stdout.
				for sc.Scan() {
				}
				return
			}
		}
		ready <- fmt.Errorf("the server child ended before it was ready: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			cmd.Wait()
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the server child was not ready within 60 s")
	}
	return &child{cmd: cmd}
}

func (c *child) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
}

func (c *child) term(t testing.TB) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("server child after SIGTERM: %v", err)
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServerKilled kills the server process with SIGKILL several times
// while clients record and retry, restarting it on the same ROOT: every
// event the clients handed over is in the tables once, as recording in
// process gives; what was acknowledged was never lost, and what was resent
// was never recorded twice.
func TestServerKilled(t *testing.T) {
	if os.Getenv(serverChildRoot) != "" {
		return
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(killSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want the decimal seed a failed run printed: %v", killSeedEnv, v, err)
		}
		seed = n
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, killSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	var workloads [][]sim.Config
	for c := range 4 {
		workloads = append(workloads, workload(c, 2, 150))
	}
	want := reference(t, workloads)
	root := t.TempDir()
	addr := freeAddr(t)
	srv := startChild(t, root, addr)

	const kills = 8
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var killed int
	wg.Go(func() {
		for killed < kills {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(100+rng.IntN(400)) * time.Millisecond):
			}
			srv.kill()
			killed++
			srv = startChild(t, root, addr)
		}
	})
	// Slow the clients down so that the kills land mid-run.
	paced := make([][]sim.Config, len(workloads))
	copy(paced, workloads)
	stats := runPacedClients(t, addr, paced, 200*time.Microsecond)
	close(stop)
	wg.Wait()
	srv.term(t)
	var reconnects uint64
	for _, s := range stats {
		reconnects += s.Reconnects
	}
	t.Logf("server killed %d times; %d reconnects", killed, reconnects)
	if killed == 0 || reconnects == 0 {
		t.Errorf("the server was killed %d times and the clients reconnected %d times: the run ended too soon", killed, reconnects)
	}
	if got := digest(t, root); got != want {
		t.Errorf("after %d kills the ROOT differs from recording in process (seed %d):\n%s", killed, seed, diffLines(want, got))
	}
}

// runPacedClients is runClients with a pause after every step hook call.
func runPacedClients(t *testing.T, addr string, workloads [][]sim.Config, pause time.Duration) []client.Stats {
	t.Helper()
	stats := make([]client.Stats, len(workloads))
	var wg sync.WaitGroup
	for i, w := range workloads {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c, err := client.Dial(ctx, addr, client.WithBackoff(10*time.Millisecond, 200*time.Millisecond))
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := sim.RunSessions(ctx, pacedHooks{Client: c, pause: pause}, withClocks(w)); err != nil {
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

// pacedHooks pauses after each StepCompleted, as a slow environment does.
type pacedHooks struct {
	*client.Client
	pause time.Duration
}

func (p pacedHooks) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	err := p.Client.OnStepCompleted(ctx, ev)
	time.Sleep(p.pause)
	return err
}
