package verify

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
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// testSessions are the sessions of the test ROOT: every simulated env,
// both autoreset modes, with per-session simulated clocks so that session
// ids and paths are the same on every run.
func testSessions() []sim.Config {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return []sim.Config{
		{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, TimeLimit: 12, Seed: 1, Clock: sim.StepClock(start, time.Millisecond)},
		{Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 6, Seed: 2, Clock: sim.StepClock(start, time.Millisecond)},
		{Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 5, Seed: 3, Clock: sim.StepClock(start, time.Millisecond)},
	}
}

// testStream returns the events of testSessions as a stream.
func testStream(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := sim.RunSessions(context.Background(), sim.NewStreamHooks(events.NewStreamWriter(&buf)), testSessions()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// record records the first n events of stream (all when n < 0) into root
// and returns the open recorder after a Flush.
func record(t testing.TB, root string, stream []byte, n int) *recorder.Recorder {
	t.Helper()
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	r := events.NewStreamReader(bytes.NewReader(stream), 0)
	ctx := context.Background()
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

// recordRoot records the whole stream into root and closes the recorder.
func recordRoot(t testing.TB, root string, stream []byte) {
	t.Helper()
	if err := record(t, root, stream, -1).Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// crashCopy records the first n events into a ROOT, waits until its files
// stop changing, and copies it to dst while the recorder is still open:
// dst is what a crash after Flush leaves.
func crashCopy(t testing.TB, dst string, stream []byte, n int) {
	t.Helper()
	src := t.TempDir()
	rec := record(t, src, stream, n)
	waitQuiet(t, src)
	roottest.CopyDir(t, src, dst)
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitQuiet waits until no temp file is left under root and the file list
// stopped changing, so a copy does not catch a Parquet write midway.
func waitQuiet(t testing.TB, root string) {
	t.Helper()
	prev := "\x00" // differs from any listing: look at least twice
	for range 200 {
		cur := listing(t, root)
		if cur == prev && !strings.Contains(cur, ".tmp") {
			return
		}
		prev = cur
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("files under %s kept changing", root)
}

func listing(t testing.TB, root string) string {
	var b strings.Builder
	// Files may vanish while the walk runs (temp files being renamed):
	// the next look sees the change.
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.Contains(p, "_rlrec") {
			b.WriteString(p)
			b.WriteByte('\n')
		}
		return nil
	})
	return b.String()
}

// parquetFiles lists the part files of a table, sorted.
func parquetFiles(t testing.TB, root, table string) []string {
	t.Helper()
	var out []string
	filepath.Walk(filepath.Join(root, table), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("no %s files under %s", table, root)
	}
	return out
}
