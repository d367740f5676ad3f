package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/sim"
)

// TestIngestRepeats: a stream that carries part of itself again, without
// sequence numbers, records what the clean stream records, and exits 1
// with the count of events dropped as repeats.
func TestIngestRepeats(t *testing.T) {
	var sb bytes.Buffer
	cfg := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 6, TimeLimit: 30, Seed: 4, SessionID: "s-repeat"}
	if _, err := sim.RunSessions(context.Background(), sim.NewStreamHooks(events.NewStreamWriter(&sb)), []sim.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for b := sb.Bytes(); len(b) > 0; {
		size, n := protowire.ConsumeVarint(b)
		frames = append(frames, b[:n+int(size)])
		b = b[n+int(size):]
	}
	if len(frames) < 100 {
		t.Fatalf("%d events, want at least 100", len(frames))
	}
	join := func(parts ...[][]byte) []byte {
		var out []byte
		for _, p := range parts {
			for _, f := range p {
				out = append(out, f...)
			}
		}
		return out
	}
	// Cut after a StepCompleted: a resend that splits an action from its
	// StepCompleted leaves that action unfinished.
	mid := len(frames) / 2
	for ; mid < len(frames); mid++ {
		size, n := protowire.ConsumeVarint(frames[mid-1])
		ev, _, err := events.Unmarshal(frames[mid-1][n : n+int(size)])
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind() == events.KindStepCompleted {
			break
		}
	}
	ingestRows := func(t *testing.T, in []byte) (code int, stderr string, steps, problems int64) {
		dir := t.TempDir()
		file := filepath.Join(dir, "in.events")
		if err := os.WriteFile(file, in, 0o644); err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, "root")
		code, _, stderr = runCmd(t, "ingest", "--out", root, file)
		ds, err := dataset.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := ds.Sessions()
		if err != nil || len(ss) != 1 || ss[0].Row() == nil {
			t.Fatalf("sessions: %v, %v", ss, err)
		}
		r := ss[0].Row()
		return code, stderr, r.StepsRecorded, r.Problems
	}
	code, stderr, clean, _ := ingestRows(t, join(frames))
	if code != 0 {
		t.Fatalf("clean stream: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"resent prefix mid-stream", join(frames[:mid], frames[mid-40:mid], frames[mid:])},
		{"resent from the start mid-stream", join(frames[:mid], frames[:mid], frames[mid:])},
		{"stream twice", join(frames, frames)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr, steps, problems := ingestRows(t, tc.in)
			if code != 1 || !strings.Contains(stderr, "repeated what the stream had already given") {
				t.Errorf("exit %d, want 1 naming the repeats; stderr:\n%s", code, stderr)
			}
			if steps != clean {
				t.Errorf("%d steps recorded, want %d as from the clean stream", steps, clean)
			}
			// (Once its session ended, a recording's sessions row is
			// published: the second copy's events are counted in the
			// exit message only.)
			if problems == 0 && tc.name != "stream twice" {
				t.Errorf("no problem counted in the sessions row")
			}
		})
	}
}
