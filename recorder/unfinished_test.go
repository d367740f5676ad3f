package recorder_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
	"github.com/rlrec/rlrec/verify"
)

// TestUnfinishedAction: an ActionReceived that no StepCompleted followed
// is no step. After a failed env step (rlmesh sends final telemetry and
// SessionFailed instead), after a crash between the two events, and when
// a second action follows without the first's StepCompleted, the tables
// hold no steps row for it; each lane it named an open episode on has a
// logs row (source rlrec/event) with the episode, the lane, the step, the
// observation the action was computed from and the action, byte for
// byte. Only the out-of-order case is a problem.
func TestUnfinishedAction(t *testing.T) {
	failing := sim.Config{Env: "all-leaves", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 50, TimeLimit: 6,
		FailAfterSteps: 20, Seed: 9, SessionID: "unfinished"}
	ending := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, TimeLimit: 7,
		Seed: 3, SessionID: "unfinished"}
	cases := []struct {
		name string
		cfg  sim.Config
		// cut returns the events to record (the stream up to a crash,
		// or with a StepCompleted removed) and the index of the
		// unfinished action in them.
		cut      func([]events.Event) ([]events.Event, int)
		crash    bool
		problems string
	}{
		{"failed env step", failing, func(evs []events.Event) ([]events.Event, int) {
			return evs, lastOf[*events.ActionReceived](evs, len(evs))
		}, false, ""},
		{"crash after the action", ending, func(evs []events.Event) ([]events.Event, int) {
			i := lastOf[*events.ActionReceived](evs, len(evs)*2/3)
			return evs[:i+1], i
		}, true, ""},
		{"action after action", ending, func(evs []events.Event) ([]events.Event, int) {
			// An action whose step completed no episode: its
			// StepCompleted and next observation are left out, so that
			// the next action comes right after it. (rlmesh 0.1 defers
			// a completion to the lane's roll step, so the StepCompleted
			// must also flag no lane's end or roll: the flags left out
			// would leave the next roll flag disagreeing.)
			for i := lastOf[*events.ActionReceived](evs, len(evs)/2); i > 0; i = lastOf[*events.ActionReceived](evs, i) {
				j := i + 1
				plain := true
				for ; j < len(evs); j++ {
					switch e := evs[j].(type) {
					case *events.StepCompleted:
						if slices.Contains(e.Terminated, true) || slices.Contains(e.Truncated, true) || slices.Contains(e.AutoresetRoll, true) {
							plain = false
							break
						}
						continue
					case *events.ObservationEmitted, *events.TelemetrySnapshot, *events.Log:
						continue
					case *events.ActionReceived:
					default:
						plain = false
					}
					break
				}
				if plain && j < len(evs) {
					return append(append([]events.Event{}, evs[:i+1]...), evs[j:]...), i
				}
			}
			t.Fatal("no action whose step completed no episode")
			return nil, 0
		}, false, "action_without_step_completed=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Clock = sim.StepClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), time.Millisecond)
			evs, ui := tc.cut(simEvents(t, []sim.Config{cfg}))
			act := evs[ui].(*events.ActionReceived)
			mem := vfs.NewMem()
			var fsys vfs.FS = mem
			open := func() *recorder.Recorder {
				t.Helper()
				rec, err := recorder.Open(memRoot, fast, recorder.WithFS(fsys), recorder.WithSyncPolicy(recorder.SyncEach))
				if err != nil {
					t.Fatal(err)
				}
				return rec
			}
			rec := open()
			base := time.Unix(1_700_000_000, 0)
			for i, ev := range evs {
				if err := rec.RecordAt(context.Background(), ev, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
					t.Fatalf("event %d (%s): %v", i, ev.Kind(), err)
				}
			}
			if tc.crash {
				fsys = mem.Crash()
				t.Cleanup(func() { rec.Close(context.Background()) })
				rec = open() // recovery
			}
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			tb := readTables(t, fsys, memRoot)
			sid := act.SessionID

			// What the unfinished action sent, per lane: its action, and
			// the lane's observation it was computed from.
			lanes, err := blob.SplitLanes(act.ActionSpace, act.Action, len(act.EpisodeRecordIDs))
			if err != nil {
				t.Fatal(err)
			}
			lastObs := lastObservations(t, evs[:ui])
			want := map[string]schema.UnfinishedAction{}
			for i, rid := range act.EpisodeRecordIDs {
				if rid == "" || completedBefore(evs[:ui], rid) {
					continue // a dropped step: no episode
				}
				want[rid] = schema.UnfinishedAction{EpisodeID: act.EpisodeIDs[i], EpisodeRecordID: rid, EnvIndex: int32(i),
					Step: act.Step, EpisodeStep: stepsBefore(evs[:ui], rid), Observation: lastObs[i], Action: blob.Append(nil, lanes[i])}
			}
			if len(want) == 0 {
				t.Fatal("the unfinished action names no open episode: a case that tests nothing")
			}
			got := map[string]schema.UnfinishedAction{}
			for _, l := range tb.logs[sid] {
				if l.Source == nil || *l.Source != schema.SourceEvent {
					continue
				}
				u, err := schema.ParseUnfinishedAction(l.Message)
				if err != nil {
					continue
				}
				if !l.Time.Equal(base.Add(time.Duration(ui) * time.Millisecond)) {
					t.Errorf("logs row of %s at %v, the action was at %v", u.EpisodeRecordID, l.Time, base.Add(time.Duration(ui)*time.Millisecond))
				}
				got[u.EpisodeRecordID] = u
			}
			for rid, w := range want {
				g, ok := got[rid]
				switch {
				case !ok:
					t.Errorf("episode %s: no logs row for its unfinished action (logs: %d rows)", rid, len(tb.logs[sid]))
				case g.EpisodeID != w.EpisodeID || g.EnvIndex != w.EnvIndex || g.Step != w.Step || g.EpisodeStep != w.EpisodeStep ||
					!bytes.Equal(g.Action, w.Action) || !bytes.Equal(g.Observation, w.Observation) || (g.Observation == nil) != (w.Observation == nil):
					t.Errorf("episode %s: logs row holds %+v, want %+v", rid, g, w)
				}
				for key, rows := range tb.steps {
					if key[0] != sid || key[1] != rid {
						continue
					}
					for _, r := range rows {
						if r.SessionStp == act.Step && r.Step == w.EpisodeStep {
							t.Errorf("episode %s: a steps row %+v for the unfinished action", rid, r)
						}
					}
					if n := int64(len(rows)); n != w.EpisodeStep && tc.problems == "" {
						t.Errorf("episode %s: %d steps rows, want the %d steps completed before the action", rid, n, w.EpisodeStep)
					}
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d unfinished actions in the logs, want %d", len(got), len(want))
			}
			rows := tb.sessions[sid]
			if len(rows) != 1 {
				t.Fatalf("%d sessions rows", len(rows))
			}
			if s := summary(rows[0].ProblemSummary); s != tc.problems {
				t.Errorf("problem_summary %q, want %q", s, tc.problems)
			}
		})
	}
}

// TestUnfinishedActionVerifies: a ROOT with unfinished actions in its logs
// passes verify (their rows hold an event).
func TestUnfinishedActionVerifies(t *testing.T) {
	root := t.TempDir()
	rec, err := recorder.Open(root, fast)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 20, TimeLimit: 6, FailAfterSteps: 9, Seed: 1}
	if _, err := sim.RunSessions(context.Background(), rec, []sim.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Root(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("verify: %s: %s", p.Path, p.Message)
	}
}

// lastOf returns the index of the last event of type T before end.
func lastOf[T events.Event](evs []events.Event, end int) int {
	for i := end - 1; i >= 0; i-- {
		if _, ok := evs[i].(T); ok {
			return i
		}
	}
	return -1
}

// lastObservations returns, per lane, the blob of the last observation
// emitted in evs (nil for a lane without one), as the recorder keeps it
// for the lane's next action.
func lastObservations(t *testing.T, evs []events.Event) [][]byte {
	t.Helper()
	var out [][]byte
	for _, ev := range evs {
		o, ok := ev.(*events.ObservationEmitted)
		if !ok {
			continue
		}
		lanes, err := blob.SplitLanes(o.ObservationSpace, o.Observation, int(o.NumEnvs))
		if err != nil {
			t.Fatal(err)
		}
		for len(out) < len(lanes) {
			out = append(out, nil)
		}
		for i, l := range lanes {
			out[i] = blob.Append(nil, l)
		}
	}
	// An action consumes its lane's observation: a lane whose last
	// action came after its last observation has none.
	for i := range out {
		lastObsAt, lastActAt := -1, -1
		for k, ev := range evs {
			switch e := ev.(type) {
			case *events.ObservationEmitted:
				if i < len(e.EpisodeRecordIDs) && e.EpisodeRecordIDs[i] != "" {
					lastObsAt = k
				}
			case *events.ActionReceived:
				if i < len(e.EpisodeRecordIDs) {
					lastActAt = k
				}
			}
		}
		if lastActAt > lastObsAt {
			out[i] = nil
		}
	}
	return out
}

// completedBefore reports whether an EpisodeCompleted for rid is in evs.
func completedBefore(evs []events.Event, rid string) bool {
	for _, ev := range evs {
		if c, ok := ev.(*events.EpisodeCompleted); ok && c.EpisodeRecordID == rid {
			return true
		}
	}
	return false
}

// stepsBefore counts the actions in evs that named rid and that a
// StepCompleted followed: the steps of the episode.
func stepsBefore(evs []events.Event, rid string) int64 {
	var n int64
	named := false
	for _, ev := range evs {
		switch e := ev.(type) {
		case *events.ActionReceived:
			named = false
			for _, r := range e.EpisodeRecordIDs {
				named = named || r == rid
			}
		case *events.StepCompleted:
			if named {
				n++
			}
			named = false
		}
	}
	return n
}
