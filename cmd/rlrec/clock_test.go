package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/schema"
)

// sameRoots fails unless a and b hold the same table files, byte for byte.
func sameRoots(t *testing.T, a, b string) {
	t.Helper()
	sameRootsBut(t, a, b, nil)
}

// sameRootsOtherStream is sameRoots of ROOTs ingested from two streams of
// the same events in other bytes (a recording replayed): the files'
// rlrec.run_nonce (derived from the stream's bytes) and
// rlrec.content_chain, which prove which stream the ROOT holds, are left
// out.
func sameRootsOtherStream(t *testing.T, a, b string) {
	t.Helper()
	sameRootsBut(t, a, b, []string{schema.MetaRunNonce, schema.MetaContentChain})
}

func sameRootsBut(t *testing.T, a, b string, keys []string) {
	t.Helper()
	fa, fb := roottest.TableFiles(t, a), roottest.TableFiles(t, b)
	if len(fa) == 0 || len(fa) != len(fb) {
		t.Fatalf("%s holds %d files, %s %d", a, len(fa), b, len(fb))
	}
	drop := func(md *format.FileMetaData) {
		md.KeyValueMetadata = slices.DeleteFunc(md.KeyValueMetadata, func(kv format.KeyValue) bool { return slices.Contains(keys, kv.Key) })
	}
	for rel, ba := range fa {
		bb, ok := fb[rel]
		if ok && len(keys) > 0 && strings.HasSuffix(rel, ".parquet") {
			ba, bb = roottest.EditFooter(t, ba, drop), roottest.EditFooter(t, bb, drop)
		}
		if !ok || !bytes.Equal(ba, bb) {
			t.Errorf("%s differs between %s and %s", rel, a, b)
		}
	}
}

// ingestFile records the event stream in file into root.
func ingestFile(t *testing.T, root, file string) {
	t.Helper()
	env, _, stderr := simulateEnv()
	if code := run(context.Background(), env, []string{"ingest", "--out", root, file}); code != 0 {
		t.Fatalf("ingest %s: exit %d: %s", file, code, stderr)
	}
}

// sessionClocks returns the clock column of every recording of root.
func sessionClocks(t *testing.T, root string) []string {
	t.Helper()
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out []string
	for _, rec := range d.Recordings() {
		s, err := d.Session(rec)
		if err != nil {
			t.Fatal(err)
		}
		if s.Row() == nil {
			t.Fatalf("%s has no sessions row", rec)
		}
		out = append(out, s.Row().Clock)
	}
	return out
}

// TestReproducibleTimes: a simulated stream carries the simulated clock's
// time of every hook call, so --reproducible gives the same bytes twice,
// and ingesting a stream (the same one twice, or the two equal ones)
// gives byte-identical tables whose times are the simulated clock's.
func TestReproducibleTimes(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []struct{ name, autoreset, envs, maxSteps string }{
		{"next-step", "next-step", "3", "0"},
		{"disabled capped", "disabled", "1", "7"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(mode.name, " ", "-"))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			var streams []string
			for i := range 2 {
				file := filepath.Join(sub, "run"+string(rune('a'+i))+".events")
				env, _, stderr := simulateEnv()
				args := []string{"simulate", "--env", "cartpole", "--envs", mode.envs, "--episodes", "6", "--seed", "3",
					"--autoreset", mode.autoreset, "--max-steps", mode.maxSteps, "--reproducible", "-o", file}
				if code := run(context.Background(), env, args); code != 0 {
					t.Fatalf("simulate: exit %d: %s", code, stderr)
				}
				streams = append(streams, file)
			}
			a, err := os.ReadFile(streams[0])
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(streams[1])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatal("two --reproducible runs wrote different streams")
			}
			// Every event carries its time, from the simulated clock.
			r := events.NewStreamReader(bytes.NewReader(a), 0)
			for r.Next() {
				if at := r.Time(); at.Before(simulateClockStart) || at.After(simulateClockStart.Add(time.Hour)) {
					t.Fatalf("event %d (%s) at %v, not the simulated clock's", r.Index(), r.Event().Kind(), at)
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			rootA, rootB, rootC := filepath.Join(sub, "a"), filepath.Join(sub, "b"), filepath.Join(sub, "c")
			ingestFile(t, rootA, streams[0])
			time.Sleep(2 * time.Millisecond) // the wall clock moves on: it must not matter
			ingestFile(t, rootB, streams[0])
			ingestFile(t, rootC, streams[1])
			sameRoots(t, rootA, rootB)
			sameRoots(t, rootA, rootC)
			if got := sessionClocks(t, rootA); len(got) != 1 || got[0] != schema.ClockEvent {
				t.Fatalf("clock %q, want %q", got, schema.ClockEvent)
			}
		})
	}
}

// TestClockColumn: a stream without times is stamped with the recorder's
// clock, and the sessions row, verify and inspect say so; replay keeps it.
func TestClockColumn(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "timed.events")
	env, _, stderr := simulateEnv()
	if code := run(context.Background(), env, []string{"simulate", "--env", "cartpole", "--envs", "2", "--episodes", "3",
		"--reproducible", "-o", file}); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The same events without their times; and with some of them only.
	var untimed, mixed bytes.Buffer
	uw, mw := events.NewStreamWriter(&untimed), events.NewStreamWriter(&mixed)
	r := events.NewStreamReader(bytes.NewReader(b), 0)
	for r.Next() {
		if err := uw.Write(r.Event()); err != nil {
			t.Fatal(err)
		}
		at := r.Time()
		if r.Event().Kind() == events.KindLog {
			at = time.Time{}
		}
		if err := mw.WriteAt(r.Event(), at); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, clock, note string
		stream            []byte
	}{
		{"timed", schema.ClockEvent, "", b},
		{"untimed", schema.ClockRecorder, "its times are the recorder's clock", untimed.Bytes()},
		{"mixed", schema.ClockMixed, "some of its events came without their time", mixed.Bytes()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(dir, tc.name+".in")
			if err := os.WriteFile(in, tc.stream, 0o644); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(dir, tc.name)
			ingestFile(t, root, in)
			if got := sessionClocks(t, root); len(got) != 1 || got[0] != tc.clock {
				t.Fatalf("clock %q, want %q", got, tc.clock)
			}
			code, out, errOut := runReadCmd(t, "verify", root)
			if code != 0 {
				t.Fatalf("verify: exit %d: %s%s", code, out, errOut)
			}
			code, out, errOut = runReadCmd(t, "inspect", root)
			if code != 0 {
				t.Fatalf("inspect: exit %d: %s", code, errOut)
			}
			if tc.note == "" && strings.Contains(out, "clock") || tc.note != "" && !strings.Contains(out, tc.note) {
				t.Errorf("inspect output does not say what the clock was (want %q):\n%s", tc.note, out)
			}
			code, out, errOut = runReadCmd(t, "inspect", "--json", root)
			if code != 0 || !strings.Contains(out, `"clock": "`+tc.clock+`"`) {
				t.Errorf("inspect --json: exit %d, no clock %q: %s%s", code, tc.clock, out, errOut)
			}
			// replay | ingest keeps the clock.
			replayed := filepath.Join(dir, tc.name+".replayed")
			code, _, errOut = runReadCmd(t, "replay", root, "--session", sessionOf(t, root), "--format", "events", "-o", replayed)
			if code != 0 {
				t.Fatalf("replay: exit %d: %s", code, errOut)
			}
			again := filepath.Join(dir, tc.name+"-again")
			ingestFile(t, again, replayed)
			if got := sessionClocks(t, again); len(got) != 1 || got[0] != tc.clock {
				t.Fatalf("clock after replay %q, want %q", got, tc.clock)
			}
		})
	}
}

// sessionOf returns the session id of root's only recording.
func sessionOf(t *testing.T, root string) string {
	t.Helper()
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	recs := d.Recordings()
	if len(recs) != 1 {
		t.Fatalf("%d recordings in %s", len(recs), root)
	}
	return recs[0].SessionID
}
