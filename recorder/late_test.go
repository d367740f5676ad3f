package recorder_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
	"github.com/rlrec/rlrec/verify"
)

// lateIndex returns the index of the window snapshot of evs that comes
// after the session's first closing event (sim.Config.LateWindow), and how
// many closing events precede it; -1 when there is none.
func lateIndex(evs []events.Event) (int, int) {
	closing := 0
	for i, ev := range evs {
		switch e := ev.(type) {
		case *events.SessionEnded, *events.SessionFailed:
			closing++
		case *events.TelemetrySnapshot:
			switch {
			case e.Snapshot.Horizon == events.HorizonSession:
				closing++
			case closing > 0:
				return i, closing
			}
		}
	}
	return -1, 0
}

// TestLateWindowTelemetry records sessions whose telemetry ticker
// delivers a window snapshot after the end, after SessionEnded or after
// the final session snapshot too (sim.Config.LateWindow), and expects the
// late rows in the telemetry table with no problem counted: in one run,
// and when the recorder is closed (with or without resume) or crashes
// just before the late snapshot, so that a later recorder takes it for a
// recording whose files are written or still open. ROOT passes
// verification.
func TestLateWindowTelemetry(t *testing.T) {
	type handover int
	const (
		oneRun handover = iota
		closeResume
		closeNoResume
		crash
	)
	cases := []struct {
		name string
		how  handover
	}{{"one run", oneRun}, {"close and resume", closeResume}, {"close and reopen", closeNoResume}, {"crash and resume", crash}}
	// A failed session's failing step's ActionReceived, which has no
	// StepCompleted, is no step and no problem (a logs row); nothing is
	// a problem. Closing without resume between the final snapshot and
	// the closing event after it ends the recording there (status open),
	// so that case is left out where the snapshot comes first: a failed
	// session in either order, and an ended one in rlmesh 0.1's (final
	// snapshot, then SessionEnded). rc.5's ended session (SessionEnded,
	// then the snapshot) keeps it, pinned to sim.OrderRC5.
	configs := []struct {
		name     string
		cfg      sim.Config
		status   string
		problems string
		hows     []handover
	}{
		{"ended", sim.Config{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4}, "ended", "",
			[]handover{oneRun, closeResume, crash}},
		{"ended rc.5", sim.Config{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, Order: sim.OrderRC5}, "ended", "",
			[]handover{oneRun, closeResume, closeNoResume, crash}},
		{"failed", sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 50, FailAfterSteps: 12}, "failed",
			"", []handover{oneRun, closeResume, crash}},
	}
	for _, c := range configs {
		// Seeds that put the late window after one and after both closing
		// events.
		seen := map[int]bool{}
		for seed := uint64(1); len(seen) < 2 && seed < 20; seed++ {
			cfg := c.cfg
			cfg.Seed, cfg.LateWindow, cfg.SessionID = seed, true, "late"
			cfg.Clock = sim.StepClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), time.Millisecond)
			evs := simEvents(t, []sim.Config{cfg})
			late, after := lateIndex(evs)
			if late < 0 || seen[after] {
				continue
			}
			seen[after] = true
			var wantRows, wantWindow int
			for _, ev := range evs {
				if e, ok := ev.(*events.TelemetrySnapshot); ok {
					wantRows += len(e.Snapshot.Rows)
					if e.Snapshot.Horizon == events.HorizonWindow {
						wantWindow += len(e.Snapshot.Rows)
					}
				}
			}
			for _, tc := range cases {
				if !slices.Contains(c.hows, tc.how) {
					continue
				}
				t.Run(c.name+"/after "+[]string{"", "one closing event", "both closing events"}[after]+"/"+tc.name, func(t *testing.T) {
					root := t.TempDir()
					var fsys vfs.FS = vfs.OS()
					var mem *vfs.MemFS
					if tc.how == crash {
						mem = vfs.NewMem()
						fsys, root = mem, memRoot
					}
					open := func(resume bool) *recorder.Recorder {
						t.Helper()
						rec, err := recorder.Open(root, fast, recorder.WithFS(fsys), recorder.WithResume(resume), recorder.WithSyncPolicy(recorder.SyncEach))
						if err != nil {
							t.Fatal(err)
						}
						return rec
					}
					run := func(rec *recorder.Recorder, from, to int) {
						t.Helper()
						for i := from; i < to; i++ {
							if err := rec.RecordAt(context.Background(), evs[i], time.Unix(1_700_000_000, int64(i)*1e6)); err != nil {
								t.Fatalf("event %d (%s): %v", i, evs[i].Kind(), err)
							}
						}
					}
					rec := open(tc.how != closeNoResume)
					split := len(evs)
					if tc.how != oneRun {
						split = late
					}
					run(rec, 0, split)
					switch tc.how {
					case closeResume, closeNoResume:
						if err := rec.Close(context.Background()); err != nil {
							t.Fatal(err)
						}
						rec = open(tc.how == closeResume)
					case crash:
						crashed := mem.Crash()
						t.Cleanup(func() { rec.Close(context.Background()) })
						fsys = crashed
						rec = open(true)
					}
					run(rec, split, len(evs))
					if err := rec.Close(context.Background()); err != nil {
						t.Fatal(err)
					}
					tb := readTables(t, fsys, root)
					rows := tb.sessions["late"]
					if len(rows) != 1 {
						t.Fatalf("%d sessions rows, want 1", len(rows))
					}
					if r := rows[0]; r.Status != c.status || summary(r.ProblemSummary) != c.problems {
						t.Errorf("sessions row: status %q problems %q, want %q and %q", r.Status, summary(r.ProblemSummary), c.status, c.problems)
					}
					var window int
					for _, r := range tb.telemetry["late"] {
						if r.Horizon == events.HorizonWindow.String() {
							window++
						}
					}
					if got := len(tb.telemetry["late"]); got != wantRows || window != wantWindow {
						t.Errorf("telemetry: %d rows, %d of them window rows; want %d and %d", got, window, wantRows, wantWindow)
					}
					if parts := tb.parts[[2]string{schema.TableTelemetry, "late"}]; after == 2 && tc.how != crash && len(parts) < 2 {
						t.Errorf("telemetry part files %v: the late window, after the files, wants a further part", parts)
					}
					if tc.how == crash {
						return
					}
					rep, err := verify.Root(context.Background(), root)
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range rep.Problems {
						t.Errorf("verify: %s: %s", p.Path, p.Message)
					}
				})
			}
		}
		if len(seen) < 2 {
			t.Errorf("%s: seeds 1-19 put the late window after %v closing events only", c.name, seen)
		}
	}
}

func summary(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
