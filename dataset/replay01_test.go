package dataset_test

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"github.com/rlrec/rlrec/sim"
)

var (
	obsSpec01 = &spacesv1.SpaceSpec{Shape: []int64{1}, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32,
		Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
	actSpec01 = &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 9}}}
)

func f32s(vals ...float32) [][]byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return [][]byte{b}
}

func i64s(vals ...int64) [][]byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return [][]byte{b}
}

// session01 is a two-lane NEXT_STEP session in rlmesh 0.1.0's order
// (driver.rs on_step): lane 1 ends at step 1, rolls at step 2 (its
// completion after the roll's StepCompleted), and the raw payloads differ
// from the transformed ones on some lanes.
func session01() []events.Event {
	sid, route := "s01", events.RuntimeEnvContext{EnvID: "env-01", EnvComponentID: "env/toy", ModelComponentID: "model/toy"}
	two := []string{"ep-000001", "ep-000002"}
	infos := func(v int64) *spacesv1.MetaMap {
		return &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{"t": {Kind: &spacesv1.MetaValue_Integer{Integer: v}}}}
	}
	step := func(n int64, rewards []float64, term, trunc, roll []bool) *events.StepCompleted {
		e := &events.StepCompleted{SessionID: sid, Route: route, Step: n, Rewards: rewards, Terminated: term, Truncated: trunc,
			AutoresetRoll: roll, PredictMs: events.Some(float64(n) + 0.5), StepMs: events.Some(0.25)}
		if !roll[0] && !roll[1] {
			e.Infos = infos(n)
		}
		return e
	}
	f := []bool{false, false}
	return []events.Event{
		&events.SessionStarted{SessionID: sid, Route: route, EnvID: route.EnvID},
		&events.Log{SessionID: sid, Route: route, Level: events.LogInfo, Message: "env reset complete in 1ms (2 episode(s) ready)"},
		&events.EpisodeStarted{SessionID: sid, Route: route, EpisodeID: "u1", EpisodeRecordID: "ep-000001", EpisodeIndex: 1, EnvIndex: 0, Seed: events.Some(int64(11))},
		&events.EpisodeStarted{SessionID: sid, Route: route, EpisodeID: "u2", EpisodeRecordID: "ep-000002", EpisodeIndex: 2, EnvIndex: 1, Seed: events.Some(int64(12))},
		&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeRecordIDs: two, EpisodeIDs: []string{"u1", "u2"}, IsReset: true, NumEnvs: 2,
			ObservationSpace: obsSpec01, Observation: f32s(1, 2), RawObservation: f32s(1, 20), Infos: infos(0)},
		&events.ActionReceived{SessionID: sid, Route: route, EpisodeRecordIDs: two, EpisodeIDs: []string{"u1", "u2"}, Step: 1,
			ActionSpace: actSpec01, Action: i64s(1, 2), RawAction: i64s(7, 2)},
		step(1, []float64{1, 5}, []bool{false, true}, f, f),
		&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeRecordIDs: two, EpisodeIDs: []string{"u1", "u2"}, Step: 1, NumEnvs: 2,
			ObservationSpace: obsSpec01, Observation: f32s(3, 4)},
		&events.ActionReceived{SessionID: sid, Route: route, EpisodeRecordIDs: two, EpisodeIDs: []string{"u1", "u2"}, Step: 2,
			ActionSpace: actSpec01, Action: i64s(3, 0)},
		step(2, []float64{1, 0}, f, f, []bool{false, true}),
		&events.EpisodeCompleted{SessionID: sid, Route: route, EpisodeID: "u2", EpisodeRecordID: "ep-000002", EpisodeIndex: 2, EnvIndex: 1,
			StepCount: 1, CumulativeReward: 5, Terminated: true, Success: events.Some(true), Seed: events.Some(int64(12)),
			PredictMs: events.Some(1.5), StepMs: events.Some(0.25)},
		&events.EpisodeStarted{SessionID: sid, Route: route, EpisodeID: "u3", EpisodeRecordID: "ep-000003", EpisodeIndex: 3, EnvIndex: 1, StartedFromAutoReset: true},
		&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeRecordIDs: []string{"ep-000001", "ep-000003"}, EpisodeIDs: []string{"u1", "u3"}, Step: 2, NumEnvs: 2,
			ObservationSpace: obsSpec01, Observation: f32s(5, 6), Infos: infos(2)},
		&events.ActionReceived{SessionID: sid, Route: route, EpisodeRecordIDs: []string{"ep-000001", "ep-000003"}, EpisodeIDs: []string{"u1", "u3"}, Step: 3,
			ActionSpace: actSpec01, Action: i64s(4, 5), RawAction: i64s(4, 8)},
		step(3, []float64{2, 3}, []bool{false, true}, []bool{true, false}, f),
		&events.EpisodeCompleted{SessionID: sid, Route: route, EpisodeID: "u1", EpisodeRecordID: "ep-000001", EpisodeIndex: 1, EnvIndex: 0,
			StepCount: 3, CumulativeReward: 4, Truncated: true, Seed: events.Some(int64(11)), PredictMs: events.Some(2.0), StepMs: events.Some(0.25)},
		&events.EpisodeCompleted{SessionID: sid, Route: route, EpisodeID: "u3", EpisodeRecordID: "ep-000003", EpisodeIndex: 3, EnvIndex: 1,
			StepCount: 1, CumulativeReward: 3, Terminated: true, Success: events.Some(false), PredictMs: events.Some(3.5), StepMs: events.Some(0.25)},
		&events.TelemetrySnapshot{SessionID: sid, Route: route, Snapshot: events.Snapshot{Horizon: events.HorizonSession,
			Rows: []events.TelemetryRow{{Op: "env.step", Component: "env", Metric: "rpc.total", Kind: events.MetricDurationMs, Count: 3, Avg: 0.25}}}},
		&events.SessionEnded{SessionID: sid, Route: route, Reason: "completed requested episodes", TotalSteps: 3, TotalEpisodes: 3},
	}
}

// record01 records evs into a new ROOT, one millisecond apart.
func record01(t *testing.T, evs []events.Event) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "src")
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_800_000_000, 0).UTC()
	for i, ev := range evs {
		if err := rec.RecordAt(context.Background(), ev, at.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestReplayRlmesh01 records a session in rlmesh 0.1's order, checks the
// version 3 columns, replays it as events and records the replay again:
// every table must come out equal.
func TestReplayRlmesh01(t *testing.T) {
	src := record01(t, session01())
	d, err := dataset.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	rec := d.Recordings()[0]
	s, err := d.Session(rec)
	if err != nil {
		t.Fatal(err)
	}
	row := s.Row()
	if row.Problems != 0 || row.DroppedSteps != 1 || row.StepsRecorded != 5 || row.SurplusSteps == nil || *row.SurplusSteps != 0 {
		t.Fatalf("sessions row %+v (problems %v)", row, derefStr(row.ProblemSummary))
	}
	eps, err := d.Episodes(rec)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]schema.EpisodeRow{}
	for _, e := range eps {
		byID[e.EpisodeRecordID] = e.Row
	}
	e2 := byID["ep-000002"]
	if e2.Success == nil || !*e2.Success || derefStr(e2.SuccessSource) != schema.SuccessFromRuntime || e2.Seed == nil || *e2.Seed != 12 ||
		e2.PredictMs == nil || *e2.PredictMs != 1.5 || e2.FinalObservationBlob == nil {
		t.Fatalf("ep-000002 row %+v", e2)
	}
	if e1 := byID["ep-000001"]; e1.Success != nil || e1.SuccessSource != nil || e1.TrialIndex != nil {
		t.Fatalf("ep-000001 row %+v", e1)
	}
	st, err := d.Steps(rec, "ep-000001")
	if err != nil {
		t.Fatal(err)
	}
	var raws, infos, times int
	var obsInfos []string
	for st.Next() {
		x := st.Step()
		obsInfos = append(obsInfos, string(x.ObservationInfos))
		if x.RawActionBlob != nil {
			raws++
		}
		if x.Infos != nil {
			infos++
		}
		if x.HasPredictMs && x.HasStepMs {
			times++
		}
	}
	st.Close()
	if raws != 1 || infos != 2 || times != 3 { // no infos on the roll step
		t.Fatalf("ep-000001: %d raw actions (want 1), %d infos (want 2), %d step times (want 3)", raws, infos, times)
	}
	// The reset observation's infos, and the infos of the observation
	// that carried lane 1's roll (an event's infos go to each lane's row).
	if want := []string{`{"t":0}`, "", `{"t":2}`}; strings.Join(obsInfos, "|") != strings.Join(want, "|") {
		t.Fatalf("ep-000001 observation_infos %q, want %q", obsInfos, want)
	}
	dst, reps := replayInto(t, src)
	for _, rep := range reps {
		if len(rep.Notes) > 0 {
			t.Errorf("replay notes: %v", rep.Notes)
		}
	}
	compareRoots(t, src, dst)
}

func derefStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestReplayLaneServed records a simulated lane-served env (rlmesh 0.1
// subset_step, lanes interleaved) under both autoreset modes, replays it:
// every per-lane event must name its route lane, with num_envs 1,
// one-element vectors and env_index the lane (the roll steps of NEXT_STEP
// rebuilt, flagged), and recording the replay again must give equal
// tables.
func TestReplayLaneServed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		autoreset sim.Autoreset
		rolls     bool
	}{
		{"disabled", sim.AutoresetDisabled, false},
		{"next-step", sim.AutoresetNextStep, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, _ := record(t, sim.Config{Env: "cartpole", NumEnvs: 3, Autoreset: tc.autoreset, LaneServed: true,
				MaxEpisodes: 5, TimeLimit: 20, Seed: 5})
			d, err := dataset.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			rec := d.Recordings()[0]
			lanes, rolls := map[uint32]int{}, 0
			_, err = d.ReplayEvents(rec, func(ev events.Event, _ time.Time) error {
				var route events.RuntimeEnvContext
				var n, envIndex int
				switch e := ev.(type) {
				case *events.ObservationEmitted:
					route, n, envIndex = e.Route, len(e.EpisodeRecordIDs), int(e.EnvIndex)
					if e.NumEnvs != 1 {
						t.Errorf("ObservationEmitted num_envs %d", e.NumEnvs)
					}
				case *events.ActionReceived:
					route, n, envIndex = e.Route, len(e.EpisodeRecordIDs), int(e.EnvIndex)
				case *events.StepCompleted:
					route, n, envIndex = e.Route, len(e.Rewards), int(e.EnvIndex)
					if len(e.AutoresetRoll) == 1 && e.AutoresetRoll[0] {
						rolls++
					}
				default:
					return nil
				}
				l, ok := route.Lane.Get()
				if !ok || n != 1 || envIndex != int(l) {
					t.Fatalf("%s: route lane %v, %d lanes, env_index %d", ev.Kind(), route.Lane, n, envIndex)
				}
				lanes[l]++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(lanes) != 3 {
				t.Errorf("per-lane events on lanes %v, want 3 lanes", lanes)
			}
			if (rolls > 0) != tc.rolls {
				t.Errorf("%d roll steps replayed", rolls)
			}
			dst, reps := replayInto(t, src)
			for _, rep := range reps {
				if len(rep.Notes) > 0 {
					t.Errorf("replay notes: %v", rep.Notes)
				}
			}
			compareRoots(t, src, dst)
		})
	}
}
