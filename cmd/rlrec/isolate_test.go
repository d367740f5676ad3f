package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/sim"
)

// TestIngestRecordingFailure ingests a stream of two recordings into a
// ROOT where one of them cannot get its episodes partition (a file is in
// the way of its directory). The other is recorded completely; ingest
// exits 1 naming the failed recording, and once the obstacle is gone
// 'rlrec recover' writes it and verify is clean.
func TestIngestRecordingFailure(t *testing.T) {
	var sb bytes.Buffer
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 6, Seed: 1, SessionID: "cli-ok"},
		{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2, TimeLimit: 6, Seed: 2, SessionID: "cli-bad"},
	}
	if _, err := sim.RunSessions(context.Background(), sim.NewStreamHooks(events.NewStreamWriter(&sb)), cfgs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stream := filepath.Join(dir, "stream.bin")
	if err := os.WriteFile(stream, sb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	obstacle := filepath.Join(root, "episodes", "session_id=cli-bad")
	if err := os.MkdirAll(filepath.Dir(obstacle), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obstacle, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	code, _, errOut := runCmd(t, "ingest", "--out", root, stream)
	if code != 1 || !strings.Contains(errOut, `session_id="cli-bad"`) || !strings.Contains(errOut, "rlrec recover") {
		t.Fatalf("ingest: exit %d, stderr %q; want 1 naming the failed recording", code, errOut)
	}
	if strings.Contains(errOut, `"cli-ok"`) {
		t.Fatalf("ingest names the recording that did not fail: %q", errOut)
	}
	okSessions, err := filepath.Glob(filepath.Join(root, "sessions", "session_id=cli-ok", "*", "part-*.parquet"))
	if err != nil || len(okSessions) != 1 {
		t.Fatalf("sessions files of the recording that did not fail: %v %v", okSessions, err)
	}

	// Still in the way: recover fails again, naming it.
	if code, _, errOut := runCmd(t, "recover", root); code != 1 || !strings.Contains(errOut, `session_id="cli-bad"`) {
		t.Fatalf("recover with the obstacle: exit %d, stderr %q", code, errOut)
	}
	if err := os.Remove(obstacle); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "recover", root); code != 0 {
		t.Fatalf("recover: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "verify", root); code != 0 {
		t.Fatalf("verify after recover: exit %d\n%s%s", code, out, errOut)
	}
}
