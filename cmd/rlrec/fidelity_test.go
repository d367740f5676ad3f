package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/sim"
)

// TestInspectCappedPattern: a capped run under disabled autoreset, as
// rlmesh rc.5's env server makes it (0.1 drops the server's stale report),
// is recorded without problems and inspect explains the repeated
// completion as a note.
func TestInspectCappedPattern(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "capped.events")
	env, _, stderr := simulateEnv()
	if code := run(context.Background(), env, []string{"simulate", "--rlmesh", "rc5", "--env", "cartpole", "--envs", "1", "--autoreset", "disabled",
		"--max-steps", "3", "--episodes", "6", "--reproducible", "-o", file}); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	root := filepath.Join(dir, "root")
	ingestFile(t, root, file)
	if code, out, errOut := runReadCmd(t, "verify", root); code != 0 {
		t.Fatalf("verify: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut := runReadCmd(t, "inspect", root)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "problems:") || !strings.Contains(out, "complete a second time") || !strings.Contains(out, "rlmesh's behaviour") {
		t.Errorf("inspect does not explain the capped pattern as a note:\n%s", out)
	}
	code, out, _ = runReadCmd(t, "inspect", "--json", root)
	if code != 0 || !strings.Contains(out, `"repeated_completions": [`) || strings.Contains(out, `"repeated_completions": []`) {
		t.Errorf("inspect --json lists no repeated completion:\n%s", out)
	}
}

// TestConnectionsRoundTrip: EnvConnected and ModelConnected are kept (as
// logs rows of source rlrec/event) and re-emitted by replay --format
// events, before SessionStarted: every event of the stream comes back.
func TestConnectionsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var stream bytes.Buffer
	w := events.NewStreamWriter(&stream)
	cfg := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 6, Seed: 4,
		SessionID: "connected", Clock: sim.StepClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)}
	h := &connectingHooks{StreamHooks: sim.NewStreamHooks(w), at: time.Date(2026, 2, 28, 23, 59, 59, 0, time.UTC)}
	if _, err := sim.Run(context.Background(), h, cfg); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.events")
	if err := os.WriteFile(in, stream.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	ingestFile(t, root, in)
	out := filepath.Join(dir, "out.events")
	if code, _, errOut := runReadCmd(t, "replay", root, "--session", "connected", "--format", "events", "-o", out); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	orig, again := readSimulatedStream(t, stream.Bytes()), readSimulatedStream(t, b)
	if len(again) != len(orig) {
		t.Errorf("%d events in, %d out of replay", len(orig), len(again))
	}
	wantFirst := []events.Kind{events.KindEnvConnected, events.KindModelConnected, events.KindSessionStarted}
	for i, k := range wantFirst {
		if i >= len(again) || again[i].Kind() != k {
			t.Fatalf("replayed event %d is %v, want %v", i, again[i].Kind(), k)
		}
	}
	if ec := again[0].(*events.EnvConnected); ec.EnvID != orig[0].(*events.EnvConnected).EnvID {
		t.Errorf("EnvConnected env_id %q, want %q", ec.EnvID, orig[0].(*events.EnvConnected).EnvID)
	}
	// Recorded again, the replayed stream gives the same tables (but for
	// what proves which stream's bytes they hold).
	in2 := filepath.Join(dir, "again")
	ingestFile(t, in2, out)
	sameRootsOtherStream(t, root, in2)
}

// connectingHooks sends EnvConnected and ModelConnected before a
// session's first event, as a managed runner may.
type connectingHooks struct {
	*sim.StreamHooks
	at time.Time
}

func (h *connectingHooks) RecordAt(ctx context.Context, ev events.Event, t time.Time) error {
	if ss, ok := ev.(*events.SessionStarted); ok {
		if err := h.StreamHooks.RecordAt(ctx, &events.EnvConnected{SessionID: ss.SessionID, Route: ss.Route, EnvID: ss.EnvID}, h.at); err != nil {
			return err
		}
		if err := h.StreamHooks.RecordAt(ctx, &events.ModelConnected{SessionID: ss.SessionID, Route: ss.Route}, h.at.Add(time.Millisecond)); err != nil {
			return err
		}
	}
	return h.StreamHooks.RecordAt(ctx, ev, t)
}
