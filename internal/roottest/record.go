package roottest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// Epoch is when the first session Record runs starts: 2026-03-01 12:00
// UTC.
var Epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// SetClocks gives the i-th config the clock of a session that starts i
// hours after Epoch and takes 1 ms a step (sim.StepClock), so that a
// recording's event times, and the files, are the same on every run.
func SetClocks(cfgs []sim.Config) {
	for i := range cfgs {
		cfgs[i].Clock = sim.StepClock(Epoch.Add(time.Duration(i)*time.Hour), time.Millisecond)
	}
}

// Record records cfgs (SetClocks), run concurrently (sim.RunSessions),
// into the new ROOT "root" under t.TempDir(), with a recorder opened with
// opts, closes it and returns the ROOT.
func Record(t testing.TB, cfgs []sim.Config, opts ...recorder.Option) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	RecordInto(t, root, cfgs, opts...)
	return root
}

// RecordInto is Record into root, and returns what each session did.
func RecordInto(t testing.TB, root string, cfgs []sim.Config, opts ...recorder.Option) []sim.Summary {
	t.Helper()
	SetClocks(cfgs)
	rec, err := recorder.Open(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := sim.RunSessions(context.Background(), rec, cfgs)
	if err != nil {
		rec.Close(context.Background())
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sums
}
