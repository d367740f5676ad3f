package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

func simulateEnv() (*Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, &out, &errb
}

func readSimulatedStream(t *testing.T, b []byte) []events.Event {
	t.Helper()
	r := events.NewStreamReader(bytes.NewReader(b), 0)
	var evs []events.Event
	for r.Next() {
		evs = append(evs, r.Event())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestSimulateToFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run.events")
	env, stdout, stderr := simulateEnv()
	code := run(context.Background(), env, []string{"simulate", "--env", "all-leaves", "--envs", "1",
		"--episodes", "5", "--autoreset", "disabled", "--sessions", "2", "--max-steps", "6", "-o", out})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout.Len() != 0 {
		t.Fatalf("wrote %d bytes to stdout with -o FILE", stdout.Len())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]events.Kind{}
	for _, ev := range readSimulatedStream(t, b) {
		id, _ := ev.Header()
		if ev.Kind() == events.KindSessionEnded {
			sessions[id] = ev.Kind()
		}
	}
	if len(sessions) != 2 {
		t.Fatalf("%d ended sessions, want 2", len(sessions))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the output", len(entries))
	}
}

func TestSimulateReproducibleStdout(t *testing.T) {
	args := []string{"simulate", "--env", "cartpole", "--envs", "4", "--episodes", "6", "--seed", "7",
		"--fail-after", "30", "--reproducible", "-o", "-"}
	var streams [][]byte
	for range 2 {
		env, stdout, stderr := simulateEnv()
		if code := run(context.Background(), env, args); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		streams = append(streams, stdout.Bytes())
	}
	if len(streams[0]) == 0 || !bytes.Equal(streams[0], streams[1]) {
		t.Fatalf("two --reproducible runs differ (%d and %d bytes)", len(streams[0]), len(streams[1]))
	}
	evs := readSimulatedStream(t, streams[0])
	if last := evs[len(evs)-1]; last.Kind() != events.KindSessionFailed {
		t.Fatalf("last event %s, want SessionFailed with --fail-after", last.Kind())
	}
}

func TestSimulateUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no output", []string{}, "no output"},
		{"unknown env", []string{"--env", "pong", "-o", "-"}, "--env"},
		{"zero lanes", []string{"--envs", "0", "-o", "-"}, "--envs"},
		{"zero episodes", []string{"--episodes", "0", "-o", "-"}, "--episodes"},
		{"zero sessions", []string{"--sessions", "0", "-o", "-"}, "--sessions"},
		{"bad autoreset", []string{"--autoreset", "same-step", "-o", "-"}, "--autoreset"},
		{"negative cap", []string{"--max-steps", "-1", "-o", "-"}, "--max-steps"},
		{"disabled with the default 4 lanes", []string{"--autoreset", "disabled", "-o", "-"}, "more than one lane requires next-step autoreset"},
		{"disabled with 2 lanes", []string{"--autoreset", "disabled", "--envs", "2", "--max-steps", "5", "-o", "-"}, "more than one lane requires next-step autoreset"},
		{"bad rlmesh order", []string{"--rlmesh", "0.2", "-o", "-"}, "--rlmesh"},
		{"lane-served under rc5", []string{"--rlmesh", "rc5", "--lane-served", "-o", "-"}, "not with --rlmesh rc5"},
		{"transform under rc5", []string{"--rlmesh", "rc5", "--transform", "-o", "-"}, "not with --rlmesh rc5"},
		{"negative period", []string{"--period", "-1ms", "-o", "-"}, "--period"},
		{"step cap under next-step", []string{"--max-steps", "5", "-o", "-"}, "a step cap requires disabled autoreset"},
		{"step cap under next-step, 1 lane", []string{"--envs", "1", "--autoreset", "next-step", "--max-steps", "5", "-o", "-"}, "a step cap requires disabled autoreset"},
		{"negative fail", []string{"--fail-after", "-2", "-o", "-"}, "--fail-after"},
		{"argument", []string{"-o", "-", "extra"}, "unexpected argument"},
		{"unknown flag", []string{"--lanes", "3"}, "lanes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, stdout, stderr := simulateEnv()
			code := run(context.Background(), env, append([]string{"simulate"}, tc.args...))
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
			if stdout.Len() != 0 {
				t.Fatalf("usage error wrote %d bytes to stdout", stdout.Len())
			}
		})
	}
}

func TestSimulateUnwritableOutput(t *testing.T) {
	env, _, stderr := simulateEnv()
	out := filepath.Join(t.TempDir(), "missing", "run.events")
	if code := run(context.Background(), env, []string{"simulate", "-o", out}); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("output exists after a failed run: %v", err)
	}
}

func TestSimulateHelp(t *testing.T) {
	env, stdout, _ := simulateEnv()
	if code := run(context.Background(), env, []string{"simulate", "--help"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Example:", "--reproducible", "-fail-after", "pick-place"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestSimulateToWaits: simulate --to an address where nothing listens
// says, after a few seconds, that it waits for rlrec serve there, and
// names CLI flags, not Go API names, when it stops.
func TestSimulateToWaits(t *testing.T) {
	defer func(d time.Duration) { waitNotice = d }(waitNotice)
	waitNotice = 100 * time.Millisecond
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	env, _, errb := simulateEnv()
	code := run(ctx, env, []string{"simulate", "--episodes", "1", "--to", addr})
	errOut := errb.String()
	if code != 1 || !strings.Contains(errOut, "waiting for rlrec serve at "+addr) || !strings.Contains(errOut, "--listen "+addr) {
		t.Errorf("exit %d: %q; want the wait notice and exit 1", code, errOut)
	}
	if strings.Contains(errOut, "WithTLS") || strings.Contains(errOut, "client.") {
		t.Errorf("stderr names Go API: %q", errOut)
	}
}

// TestSimulateOrders: simulate follows rlmesh 0.1 by default (the final
// telemetry before SessionEnded, per-lane flags on every step) and rc.5
// with --rlmesh rc5 (SessionEnded first, no flags); --lane-served runs
// each lane as its own group (events carry their lane, several lanes
// under disabled autoreset), --transform gives raw payloads that differ,
// --relay-advisory one RelayAdvisory after SessionStarted.
func TestSimulateOrders(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, evs []events.Event)
	}{
		{"0.1 by default", nil, func(t *testing.T, evs []events.Event) {
			n := len(evs)
			if evs[n-2].Kind() != events.KindTelemetrySnapshot || evs[n-1].Kind() != events.KindSessionEnded {
				t.Fatalf("ends %s, %s; want the final snapshot, then SessionEnded", evs[n-2].Kind(), evs[n-1].Kind())
			}
			for _, ev := range evs {
				if st, ok := ev.(*events.StepCompleted); ok && (len(st.Terminated) != 3 || !st.StepMs.Set) {
					t.Fatalf("a step without 0.1's per-lane flags or step_ms: %+v", st)
				}
			}
		}},
		{"rc5", []string{"--rlmesh", "rc5"}, func(t *testing.T, evs []events.Event) {
			n := len(evs)
			if evs[n-2].Kind() != events.KindSessionEnded || evs[n-1].Kind() != events.KindTelemetrySnapshot {
				t.Fatalf("ends %s, %s; want SessionEnded, then the final snapshot", evs[n-2].Kind(), evs[n-1].Kind())
			}
			for _, ev := range evs {
				if st, ok := ev.(*events.StepCompleted); ok && (st.Terminated != nil || st.StepMs.Set) {
					t.Fatalf("an rc.5 step with 0.1's fields: %+v", st)
				}
			}
		}},
		{"lane-served, disabled, transform, advisory", []string{"--lane-served", "--autoreset", "disabled", "--transform", "--relay-advisory"}, func(t *testing.T, evs []events.Event) {
			lanes := map[uint32]bool{}
			raws := 0
			for _, ev := range evs {
				switch e := ev.(type) {
				case *events.ActionReceived:
					if !e.Route.Lane.Set || len(e.EpisodeIDs) != 1 {
						t.Fatalf("a lane-served action without its lane: %+v", e.Route)
					}
					lanes[e.Route.Lane.Value] = true
					if e.RawAction != nil {
						raws++
					}
				case *events.ObservationEmitted:
					if e.RawObservation != nil {
						raws++
					}
				}
			}
			if len(lanes) != 3 || raws == 0 {
				t.Fatalf("lanes %v, %d raw payloads; want 3 lanes and some", lanes, raws)
			}
			if evs[1].Kind() != events.KindRelayAdvisory {
				t.Fatalf("second event %s, want RelayAdvisory", evs[1].Kind())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, stdout, stderr := simulateEnv()
			args := append([]string{"simulate", "--env", "cartpole", "--envs", "3", "--episodes", "5", "--seed", "2", "-o", "-"}, tc.args...)
			if code := run(context.Background(), env, args); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			tc.check(t, readSimulatedStream(t, stdout.Bytes()))
		})
	}
}
