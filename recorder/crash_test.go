package recorder_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// The crash test runs a recorder in a child process (this test binary,
// re-run with crashChildEnv set) and kills it with SIGKILL at a random
// moment. The child reports every event whose hook call returned as one
// line on file descriptor 3 (one write each, so a line is whole or absent);
// what the parent read is what was acknowledged.
const (
	crashChildEnv = "RLREC_CRASH_CHILD_ROOT"
	crashChildTag = "RLREC_CRASH_CHILD_TAG"
	// crashChildImages, when set, adds an image session to the child's.
	crashChildImages = "RLREC_CRASH_CHILD_IMAGES"
	// crashChildGroup, when set, records under SyncGroup (the default
	// policy) instead of SyncEach.
	crashChildGroup = "RLREC_CRASH_CHILD_GROUP"
	// crashKillsEnv sets the number of kills of TestCrashKillGroup (the
	// long form of the test: see RELIABILITY.md).
	crashKillsEnv = "RLREC_CRASH_KILLS"
)

// ackHooks reports each acknowledged event on w.
type ackHooks struct {
	countingHooks
	w *os.File
}

func encodeAck(ev events.Event) string {
	sid, _ := ev.Header()
	switch e := ev.(type) {
	case *events.EpisodeStarted:
		return fmt.Sprintf("E %q %q %d %t", sid, e.EpisodeRecordID, e.EnvIndex, e.StartedFromAutoReset)
	case *events.EpisodeCompleted:
		return fmt.Sprintf("C %q %q %d", sid, e.EpisodeRecordID, e.StepCount)
	case *events.ActionReceived:
		return fmt.Sprintf("A %q %q", sid, strings.Join(e.EpisodeRecordIDs, ","))
	case *events.StepCompleted:
		// rlmesh 0.1's roll flags: a lane's roll step names its ended
		// episode (whose completion follows) but is a step of none.
		rolls := make([]string, len(e.AutoresetRoll))
		for i, r := range e.AutoresetRoll {
			rolls[i] = strconv.FormatBool(r)
		}
		return fmt.Sprintf("R %q %q", sid, strings.Join(rolls, ","))
	case *events.SessionEnded:
		return fmt.Sprintf("END %q", sid)
	case *events.SessionFailed:
		return fmt.Sprintf("FAIL %q", sid)
	case *events.SessionStarted:
		return fmt.Sprintf("S %q", sid)
	}
	return ""
}

// TestCrashChild is the child's side; it does nothing unless run by
// TestCrashKill.
func TestCrashChild(t *testing.T) {
	root := os.Getenv(crashChildEnv)
	if root == "" {
		return
	}
	out := os.NewFile(3, "acks")
	// Small log segments and frequent looks at them: the child snapshots
	// its state and removes segments while it runs, so kills also land
	// around snapshots, seals and removals.
	policy := recorder.SyncEach
	if os.Getenv(crashChildGroup) != "" {
		policy = recorder.SyncGroup
	}
	opts := []recorder.Option{recorder.WithSyncPolicy(policy), fast, recorder.WithSegmentSize(8 << 10), recorder.WithReclaimEvery(16)}
	if os.Getenv(crashChildImages) != "" {
		// Image episodes stream their rows under a small budget, so a
		// snapshot leaves them to the log and recovery rebuilds them.
		opts = append(opts, recorder.WithMemoryBudget(16<<20))
	}
	if state := os.Getenv(crashChildState); state != "" {
		// A ROOT in a bucket (s3_crash_test.go).
		opts = append(opts, s3ChildStore(root, state))
	}
	rec, err := recorder.Open(root, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	h := &ackHooks{w: out}
	h.inner = rec
	h.t = newTally()
	tag := os.Getenv(crashChildTag)
	var cfgs []sim.Config
	envs := []string{"cartpole", "all-leaves"}
	if os.Getenv(crashChildImages) != "" {
		envs = append(envs, "pick-place")
	}
	for i, env := range envs {
		auto := sim.AutoresetNextStep
		if i == 1 {
			auto = sim.AutoresetDisabled
		}
		cfg := sim.Config{Env: env, NumEnvs: 2, Autoreset: auto, MaxEpisodes: 1000, TimeLimit: 20,
			Seed: uint64(i + 1), SessionID: tag + "-" + env}
		if auto == sim.AutoresetDisabled {
			// rlmesh allows disabled autoreset with one lane only, and
			// the runtime's step cap only under it.
			cfg.NumEnvs, cfg.TimeLimit, cfg.MaxEpisodeSteps = 1, 0, 20
		}
		cfgs = append(cfgs, cfg)
	}
	out.Write([]byte("READY\n"))
	sim.RunSessions(context.Background(), &reportHooks{h}, cfgs)
	rec.Close(context.Background())
	os.Exit(0)
}

// reportHooks writes an ack line after each hook call that returned nil.
type reportHooks struct{ h *ackHooks }

func (r *reportHooks) do(ctx context.Context, ev events.Event) error {
	err := events.Dispatch(ctx, r.h.inner, ev)
	if err == nil {
		if line := encodeAck(ev); line != "" {
			r.h.w.Write([]byte(line + "\n"))
		}
	}
	return err
}

func (r *reportHooks) OnEnvConnected(ctx context.Context, ev *events.EnvConnected) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnModelConnected(ctx context.Context, ev *events.ModelConnected) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnSessionStarted(ctx context.Context, ev *events.SessionStarted) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnSessionEnded(ctx context.Context, ev *events.SessionEnded) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnSessionFailed(ctx context.Context, ev *events.SessionFailed) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnLog(ctx context.Context, ev *events.Log) error { return r.do(ctx, ev) }
func (r *reportHooks) OnEpisodeStarted(ctx context.Context, ev *events.EpisodeStarted) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnEpisodeCompleted(ctx context.Context, ev *events.EpisodeCompleted) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	return r.do(ctx, ev)
}
func (r *reportHooks) OnTelemetrySnapshot(ctx context.Context, ev *events.TelemetrySnapshot) error {
	return r.do(ctx, ev)
}

func (r *reportHooks) OnRelayAdvisory(ctx context.Context, ev *events.RelayAdvisory) error {
	return r.do(ctx, ev)
}

// ackTally is the parent's record of what a child acknowledged.
type ackTally struct {
	eps      map[[2]string]*ackEp
	open     map[string]bool
	ended    map[string]bool
	sessions map[string]bool
	// pending holds, per session, the episodes the last acknowledged
	// action named, by lane (nil: a lane of no open episode): a step of
	// each once its StepCompleted is acknowledged (an action without one
	// is no step), unless the StepCompleted flags the lane as its
	// autoreset roll (rlmesh 0.1, where the completion comes after the
	// roll step; rc.5's comes before, so its autoreset step names a
	// completed episode).
	pending map[string][]*ackEp
}

func newAckTally() *ackTally {
	return &ackTally{eps: map[[2]string]*ackEp{}, open: map[string]bool{}, ended: map[string]bool{}, sessions: map[string]bool{}, pending: map[string][]*ackEp{}}
}

type ackEp struct {
	steps     int64
	completed bool
}

func (a *ackTally) apply(t *testing.T, line string) {
	f := strings.Fields(line)
	unq := func(s string) string {
		v, err := strconv.Unquote(s)
		if err != nil {
			t.Fatalf("ack line %q: %v", line, err)
		}
		return v
	}
	switch f[0] {
	case "READY":
	case "S":
		a.sessions[unq(f[1])] = true
	case "END", "FAIL":
		a.ended[unq(f[1])] = true
	case "E":
		a.eps[[2]string{unq(f[1]), unq(f[2])}] = &ackEp{}
	case "C":
		if ep := a.eps[[2]string{unq(f[1]), unq(f[2])}]; ep != nil {
			ep.completed = true
		}
	case "A":
		sid := unq(f[1])
		p := a.pending[sid][:0]
		for _, rid := range strings.Split(unq(f[2]), ",") {
			if ep := a.eps[[2]string{sid, rid}]; ep != nil && !ep.completed {
				p = append(p, ep)
			} else {
				p = append(p, nil)
			}
		}
		a.pending[sid] = p
	case "R":
		sid := unq(f[1])
		var rolls []string
		if len(f) > 2 {
			if r := unq(f[2]); r != "" {
				rolls = strings.Split(r, ",")
			}
		}
		for i, ep := range a.pending[sid] {
			if ep != nil && (i >= len(rolls) || rolls[i] != "true") {
				ep.steps++
			}
		}
		delete(a.pending, sid)
	default:
		t.Fatalf("unexpected ack line %q", line)
	}
}

func TestCrashKill(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		return
	}
	crashKills(t, false, 10, 5)
}

// TestCrashKillGroup is TestCrashKill under SyncGroup, the default policy:
// a hook returns long before its event is synced, and must still have
// put it where a SIGKILL cannot take it (the log's mapped pending file).
// 16 kills here; RLREC_CRASH_KILLS=n runs n (in 4 roots).
func TestCrashKillGroup(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		return
	}
	kills := 16
	if v := os.Getenv(crashKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 {
			t.Fatalf("%s=%q: want a number of kills, at least 4", crashKillsEnv, v)
		}
		kills = n
	}
	crashKills(t, true, 4, (kills+3)/4)
}

// crashKills runs roots roots in parallel, each killed killsPerRoot times
// and recovered after each kill; every acknowledged event must be in the
// tables. group records under SyncGroup instead of SyncEach.
func crashKills(t *testing.T, group bool, roots, killsPerRoot int) {
	var acked atomic.Int64
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	seed := rng.Uint64()
	t.Logf("seed %d", seed)
	base := t.TempDir()
	var fromSnapshot, rebuilt atomic.Int64
	t.Cleanup(func() {
		t.Logf("%d kills; %d of the recoveries started from a snapshot, %d of them rebuilt episodes from before it; %d steps acknowledged, all found",
			roots*killsPerRoot, fromSnapshot.Load(), rebuilt.Load(), acked.Load())
	})
	for r := range roots {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		t.Run(fmt.Sprintf("root%d", r), func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(base, fmt.Sprintf("root%d", r))
			acks := newAckTally()
			for k := range killsPerRoot {
				tag := fmt.Sprintf("r%dk%d", r, k)
				runtime := time.Duration(30+rng.IntN(270)) * time.Millisecond
				killChild(t, root, tag, r%2 == 1, group, runtime, acks)

				// No partial file under a final name, before recovery.
				readTables(t, vfs.OS(), root)

				rec, err := recorder.Open(root, fast)
				if err != nil {
					t.Fatalf("%s: recover: %v", tag, err)
				}
				if rep := rec.Recovered(); rep.Snapshot {
					fromSnapshot.Add(1)
					if rep.Rebuilt > 0 {
						rebuilt.Add(1)
					}
				}
				if err := rec.Close(context.Background()); err != nil {
					t.Fatalf("%s: close: %v", tag, err)
				}
				assertEmptyLog(t, vfs.OS(), root)
				tb := readTables(t, vfs.OS(), root)
				checkAcks(t, tag, tb, acks)
				if k == killsPerRoot-1 {
					for _, ep := range acks.eps {
						acked.Add(ep.steps)
					}
				}
				if t.Failed() {
					t.Fatalf("%s (seed %d): acknowledged events lost", tag, seed)
				}
			}
		})
	}
}

// killChild runs a child recording into root and kills it runtime after it
// is ready, reading its acknowledgements into acks.
func killChild(t *testing.T, root, tag string, images, group bool, runtime time.Duration, acks *ackTally) {
	t.Helper()
	killChildEnv(t, root, tag, images, group, runtime, acks, nil, nil)
}

// killChildEnv is killChild with env added to the child's environment;
// when trigger is set, it is polled every few milliseconds and the child
// is killed as soon as it reports true (or after runtime).
func killChildEnv(t *testing.T, root, tag string, images, group bool, runtime time.Duration, acks *ackTally, env []string, trigger func() bool) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), crashChildEnv+"="+root, crashChildTag+"="+tag), env...)
	if images {
		cmd.Env = append(cmd.Env, crashChildImages+"=1")
	}
	if group {
		cmd.Env = append(cmd.Env, crashChildGroup+"=1")
	}
	cmd.ExtraFiles = []*os.File{pw}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		pr.Close()
	}()
	// Wait for READY, then let it run.
	select {
	case l, ok := <-lines:
		if !ok || l != "READY" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s: child did not start (%q): %s", tag, l, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%s: child did not start: %s", tag, stderr.String())
	}
	timer := time.AfterFunc(runtime, func() { cmd.Process.Signal(syscall.SIGKILL) })
	if trigger != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(3 * time.Millisecond):
				}
				if trigger() {
					cmd.Process.Signal(syscall.SIGKILL)
					return
				}
			}
		}()
	}
	n := 0
	for l := range lines {
		acks.apply(t, l)
		n++
	}
	timer.Stop()
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("%s: child was not killed (%v): %s", tag, err, stderr.String())
	}
}

func checkAcks(t *testing.T, tag string, tb *tables, acks *ackTally) {
	t.Helper()
	for sid := range acks.sessions {
		rows := tb.sessions[sid]
		if len(rows) != 1 {
			t.Errorf("%s: session %s: %d sessions rows", tag, sid, len(rows))
			continue
		}
		if acks.ended[sid] && rows[0].Status != "ended" && rows[0].Status != "failed" {
			t.Errorf("%s: session %s ended but has status %s", tag, sid, rows[0].Status)
		}
		if !acks.ended[sid] && rows[0].Status == "open" {
			t.Errorf("%s: session %s: status open after a crash", tag, sid)
		}
	}
	for key, ep := range acks.eps {
		er := tb.episodes[key]
		if len(er) != 1 {
			t.Errorf("%s: session %s episode %s: %d episodes rows", tag, key[0], key[1], len(er))
			continue
		}
		n := int64(len(tb.steps[key]))
		if n < ep.steps || er[0].StepsRecorded != n {
			t.Errorf("%s: session %s episode %s: %d steps rows (steps_recorded %d), %d acknowledged", tag, key[0], key[1], n, er[0].StepsRecorded, ep.steps)
		}
		if ep.completed && er[0].Status != "completed" {
			t.Errorf("%s: session %s episode %s: acknowledged completion, status %s", tag, key[0], key[1], er[0].Status)
		}
	}
}
