package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// readTestStream simulates every env into one event stream.
func readTestStream(t *testing.T) []byte {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, TimeLimit: 12, Seed: 1, Clock: sim.StepClock(start, time.Millisecond)},
		{Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 6, Seed: 2, Clock: sim.StepClock(start, time.Millisecond)},
		{Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 5, Seed: 3, Clock: sim.StepClock(start, time.Millisecond)},
	}
	var buf bytes.Buffer
	if _, err := sim.RunSessions(context.Background(), sim.NewStreamHooks(events.NewStreamWriter(&buf)), cfgs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// recordPrefix records the first n events (all when n < 0) of stream into
// root, flushes, and returns the open recorder.
func recordPrefix(t *testing.T, root string, stream []byte, n int) *recorder.Recorder {
	t.Helper()
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := events.NewStreamReader(bytes.NewReader(stream), 0)
	for i := 0; (n < 0 || i < n) && r.Next(); i++ {
		if err := rec.RecordAt(ctx, r.Event(), r.Time()); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return rec
}

// crashedRoot returns a ROOT as a crash after Flush leaves it: a copy of a
// ROOT taken while its recorder is open, once its files stopped changing.
func crashedRoot(t *testing.T, stream []byte, n int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "live")
	rec := recordPrefix(t, src, stream, n)
	prev := "\x00" // differs from any listing: look at least twice
	for i := 0; ; i++ {
		cur := treeListing(t, src)
		if cur == prev && !strings.Contains(cur, ".tmp") {
			break
		}
		if i == 200 {
			t.Fatal("files kept changing")
		}
		prev = cur
		time.Sleep(20 * time.Millisecond)
	}
	dst := filepath.Join(t.TempDir(), "crashed")
	roottest.CopyDir(t, src, dst)
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dst
}

func treeListing(t *testing.T, root string) string {
	var b strings.Builder
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.Contains(p, "_rlrec") {
			b.WriteString(p + "\n")
		}
		return nil
	})
	return b.String()
}

// segments lists the log segments of root, sorted.
func segments(t *testing.T, root string) []string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(root, "_rlrec", "log", "*.wal"))
	sort.Strings(segs)
	if len(segs) == 0 {
		t.Fatalf("no log segments under %s", root)
	}
	return segs
}

// resegment rewrites the log of root into segments of about size bytes,
// so that all but the last are sealed.
func resegment(t *testing.T, root string, size int64) {
	t.Helper()
	dir := filepath.Join(root, "_rlrec", "log")
	r, err := wal.NewReader(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var recs [][]byte
	for r.Next() {
		recs = append(recs, bytes.Clone(r.Record()))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	for _, s := range segments(t, root) {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	// The new segments get a manifest and an expectation of their own.
	for _, name := range []string{filepath.Join(dir, wal.ManifestName), filepath.Join(root, "_rlrec", wal.ExpectName)} {
		if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	l, err := wal.Open(vfs.OS(), dir, wal.Options{SegmentSize: size, Compression: wal.CompressionNone})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if _, err := l.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := simulateEnv()
	code := run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func TestRecover(t *testing.T) {
	stream := readTestStream(t)
	tests := []struct {
		name string
		// root builds the ROOT to recover.
		root func(t *testing.T) string
		args []string
		code int
		// salvaged is set when the log was salvaged.
		salvaged bool
		// want are substrings of stdout (code 0) or stderr (code 1).
		want []string
	}{
		{name: "clean", code: 0, want: []string{"nothing to recover"}, root: func(t *testing.T) string {
			root := filepath.Join(t.TempDir(), "r")
			if err := recordPrefix(t, root, stream, -1).Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			return root
		}},
		{name: "crashed", code: 0, want: []string{"log records replayed:", "crashed: they had not ended", "incomplete", "log damage:            none"},
			root: func(t *testing.T) string { return crashedRoot(t, stream, 300) }},
		{name: "torn-tail", code: 0, want: []string{"torn tail (a crash's unfinished write: a partial record, no whole record cut)", "cut at:", "0 intact records lost"}, root: func(t *testing.T) string {
			root := crashedRoot(t, stream, 300)
			segs := segments(t, root)
			last := segs[len(segs)-1]
			// A crash mid-write leaves the start of a record that was never
			// synced (everything before it was: the recorder flushed).
			f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte{0x2a, 0, 0, 0, 0x7f}); err != nil {
				t.Fatal(err)
			}
			return root
		}},
		{name: "sealed-corruption", code: 1, want: []string{"sealed segment", "rerun with --salvage", "is lost"}, root: sealedCorrupt(stream)},
		{name: "sealed-corruption-salvage", args: []string{"--salvage"}, code: 0, salvaged: true,
			want: []string{"corruption in a sealed segment, cut by --salvage", "intact records lost"}, root: sealedCorrupt(stream)},
		{name: "salvage-after-root", args: []string{"AFTER", "--salvage"}, code: 0, salvaged: true,
			want: []string{"cut by --salvage"}, root: sealedCorrupt(stream)},
		// A deleted segment: at either end only the log's manifest tells.
		{name: "oldest-segment-deleted", code: 1, want: []string{"the log lacks segments", "0000000000000001.wal", "--salvage", "is lost"},
			root: segmentDeleted(stream, 0)},
		{name: "middle-segment-deleted", code: 1, want: []string{"sealed segment", "0000000000000002.wal", "positions do not continue", "rerun with --salvage"},
			root: segmentDeleted(stream, 1)},
		{name: "newest-segment-deleted", code: 1, want: []string{"the log lacks segments", "--salvage"},
			root: segmentDeleted(stream, -1)},
		{name: "oldest-segment-deleted-salvage", args: []string{"--salvage"}, code: 0, salvaged: true,
			want: []string{"missing:             1 segment file", "0000000000000001.wal", "whose records are lost"}, root: segmentDeleted(stream, 0)},
		{name: "middle-segment-deleted-salvage", args: []string{"--salvage"}, code: 0, salvaged: true,
			want: []string{"cut by --salvage", "damaged record"}, root: segmentDeleted(stream, 1)},
		{name: "newest-segment-deleted-salvage", args: []string{"--salvage"}, code: 0, salvaged: true,
			want: []string{"missing:             1 segment file", "whose records are lost"}, root: segmentDeleted(stream, -1)},
		// Deletions only the log's expectation, outside the log directory,
		// tells (logLost).
		{name: "manifest-and-oldest-deleted", code: 1, want: []string{"the log lacks segments", "0000000000000001.wal", "--salvage", "is lost"},
			root: logLost(stream, "manifest-and-oldest")},
		{name: "log-dir-deleted", code: 1, want: []string{"the log lacks segments", "0000000000000001.wal", "0 segment files are present", "--salvage"},
			root: logLost(stream, "log-dir")},
		{name: "pending-deleted", code: 1, want: []string{"the log lacks its pending file", "--salvage", "is lost"},
			root: logLost(stream, "pending")},
		{name: "manifest-and-oldest-deleted-salvage", args: []string{"--salvage"}, code: 0, salvaged: true,
			want: []string{"missing:             1 segment file", "0000000000000001.wal", "whose records are lost"}, root: logLost(stream, "manifest-and-oldest")},
		{name: "log-dir-deleted-salvage", args: []string{"--salvage"}, code: 0, salvaged: true,
			want: []string{"segment file", "whose records are lost"}, root: logLost(stream, "log-dir")},
		{name: "pending-deleted-salvage", args: []string{"--salvage"}, code: 0, salvaged: true,
			want: []string{"missing:             the pending file", "are lost"}, root: logLost(stream, "pending")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root(t)
			args := []string{"recover"}
			if len(tc.args) > 0 && tc.args[0] == "AFTER" {
				args = append(args, root)
				args = append(args, tc.args[1:]...)
			} else {
				args = append(append(args, tc.args...), root)
			}
			code, stdout, stderr := runCmd(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			got := stdout
			if code != 0 {
				got = stderr
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			if code != 0 {
				return
			}
			// What recovery leaves passes verify; after a salvage, only
			// sessions cut short may disagree with files written before
			// the crash.
			code, out, errs := runCmd(t, "verify", root)
			if !tc.salvaged && code != 0 {
				t.Errorf("verify after recover: exit %d\n%s%s", code, out, errs)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "checked ") && !strings.Contains(line, ": session: ") {
					t.Errorf("verify after recover: %s", line)
				}
			}
		})
	}
}

// segmentDeleted builds a crashed ROOT whose log has several segments,
// with segment i (from the end when negative) deleted.
func segmentDeleted(stream []byte, i int) func(t *testing.T) string {
	return func(t *testing.T) string {
		root := crashedRoot(t, stream, 300)
		resegment(t, root, 4096) // the log's writer gives it a manifest
		if _, err := os.Stat(filepath.Join(root, "_rlrec", "log", wal.ManifestName)); err != nil {
			t.Fatal(err)
		}
		segs := segments(t, root)
		if len(segs) < 3 {
			t.Fatalf("want several segments, got %d", len(segs))
		}
		if i < 0 {
			i += len(segs)
		}
		if err := os.Remove(segs[i]); err != nil {
			t.Fatal(err)
		}
		return root
	}
}

// sealedCorrupt builds a crashed ROOT whose log has several segments, with
// a damaged record in the first (sealed) one.
func sealedCorrupt(stream []byte) func(t *testing.T) string {
	return func(t *testing.T) string {
		root := crashedRoot(t, stream, 300)
		resegment(t, root, 4096)
		segs := segments(t, root)
		if len(segs) < 3 {
			t.Fatalf("want several segments, got %d", len(segs))
		}
		b, err := os.ReadFile(segs[0])
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(segs[0], b, 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
}

func TestVerifyCommand(t *testing.T) {
	stream := readTestStream(t)
	root := filepath.Join(t.TempDir(), "r")
	if err := recordPrefix(t, root, stream, -1).Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	crashed := crashedRoot(t, stream, 300)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "clean", args: []string{"verify", root}, code: 0, stdout: []string{"rows: no problems"}},
		{name: "needs-recovery", args: []string{"verify", crashed}, code: 1,
			stdout: []string{"_rlrec/log: log: the log holds", "run 'rlrec recover ROOT'"}, stderr: []string{"1 problem found"}},
		{name: "no-root", args: []string{"verify"}, code: 2, stderr: []string{"usage: rlrec verify"}},
		{name: "two-roots", args: []string{"verify", root, root}, code: 2, stderr: []string{"want one ROOT"}},
		{name: "missing-root", args: []string{"verify", filepath.Join(root, "nope")}, code: 1, stderr: []string{"does not exist", "a ROOT is a directory"}},
		{name: "help", args: []string{"verify", "--help"}, code: 0, stdout: []string{"Example:", "rlrec verify rlrec-demo"}},
		{name: "recover-help", args: []string{"recover", "--help"}, code: 0, stdout: []string{"Example:", "--salvage"}},
		{name: "recover-no-root", args: []string{"recover"}, code: 2, stderr: []string{"usage: rlrec recover"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestWriteRecoverySnapshot: a recovery that started from a snapshot says
// so, with the episodes it rebuilt from before it; one that did not, does
// not.
func TestWriteRecoverySnapshot(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  recorder.RecoveryReport
		want string
	}{
		{"from-snapshot", recorder.RecoveryReport{Records: 12, Snapshot: true, Rebuilt: 3}, "replayed from:         the recorder's last sealed snapshot (3 open episodes rebuilt from the log before it)"},
		{"whole-log", recorder.RecoveryReport{Records: 12}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeRecovery(&b, "ROOT", tc.rep); err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(b.String(), "replayed from:"); has != (tc.want != "") || !strings.Contains(b.String(), tc.want) {
				t.Errorf("output:\n%s\nwant the line %q", b.String(), tc.want)
			}
		})
	}
}

// logLost builds a crashed ROOT whose log has several segments, then
// deletes what only the log's expectation (wal.ExpectName, outside the
// log directory) can tell is gone: the manifest and the oldest segment,
// the whole log directory, or the pending file.
func logLost(stream []byte, what string) func(t *testing.T) string {
	return func(t *testing.T) string {
		root := crashedRoot(t, stream, 300)
		resegment(t, root, 4096)
		dir := filepath.Join(root, "_rlrec", "log")
		for _, name := range []string{filepath.Join(root, "_rlrec", wal.ExpectName), filepath.Join(dir, wal.PendingName)} {
			if _, err := os.Stat(name); err != nil {
				t.Fatal(err)
			}
		}
		var gone []string
		switch what {
		case "manifest-and-oldest":
			gone = []string{filepath.Join(dir, wal.ManifestName), segments(t, root)[0]}
		case "log-dir":
			gone = []string{dir}
		case "pending":
			gone = []string{filepath.Join(dir, wal.PendingName)}
		}
		for _, g := range gone {
			if err := os.RemoveAll(g); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
}

// TestLogLossNamed: verify and inspect name a log that lacks what it
// expects (a deleted manifest and oldest segment, log directory, or
// pending file), never "no problems".
func TestLogLossNamed(t *testing.T) {
	stream := readTestStream(t)
	for _, what := range []string{"manifest-and-oldest", "log-dir", "pending"} {
		t.Run(what, func(t *testing.T) {
			root := logLost(stream, what)(t)
			code, out, errOut := runReadCmd(t, "verify", root)
			if code != 1 || !strings.Contains(out, "the log lacks what it expects") {
				t.Errorf("verify: exit %d, want 1 naming what the log lacks:\n%s%s", code, out, errOut)
			}
			code, out, errOut = runReadCmd(t, "inspect", root)
			if code != 1 || !strings.Contains(out+errOut, "lacks what it expects") {
				t.Errorf("inspect: exit %d, want 1 naming what the log lacks:\n%s%s", code, out, errOut)
			}
		})
	}
}
