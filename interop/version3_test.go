package interop

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// v3Session is a two-lane NEXT_STEP session in rlmesh 0.1.0's order, with
// a raw (pre-transform) action on lane 0, step infos and times, seeds, the
// runtime's success, a relay advisory, and a surplus episode on lane 1
// once the budget of two episodes is spent.
func v3Session() []events.Event {
	sid, route := "v3", events.RuntimeEnvContext{EnvID: "env-v3", EnvComponentID: "env/toy", ModelComponentID: "model/toy"}
	obsSpec := &spacesv1.SpaceSpec{Shape: []int64{1}, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32,
		Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
	actSpec := &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 9}}}
	obs := func(vals ...float32) [][]byte {
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return [][]byte{b}
	}
	act := func(vals ...int64) [][]byte {
		b := make([]byte, 8*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		return [][]byte{b}
	}
	infos := &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{"dist": {Kind: &spacesv1.MetaValue_Number{Number: 0.5}}}}
	step := func(n int64, term []bool, roll []bool) *events.StepCompleted {
		e := &events.StepCompleted{SessionID: sid, Route: route, Step: n, Rewards: []float64{1, 1}, Infos: infos,
			Terminated: term, Truncated: []bool{false, false}, AutoresetRoll: roll, PredictMs: events.Some(2.0), StepMs: events.Some(0.5)}
		if roll[0] || roll[1] {
			e.Infos = nil // rlmesh sends no step infos when a lane rolled
		}
		return e
	}
	no := []bool{false, false}
	ids := []string{"ep-000001", "ep-000002"}
	return []events.Event{
		&events.SessionStarted{SessionID: sid, Route: route, EnvID: route.EnvID},
		&events.RelayAdvisory{SessionID: sid, Route: route, Leg: events.LegModelToEnv, Severity: events.SeverityInfo, Message: "action widened"},
		&events.EpisodeStarted{SessionID: sid, Route: route, EpisodeID: "u1", EpisodeRecordID: "ep-000001", EpisodeIndex: 1, Seed: events.Some(int64(5))},
		&events.EpisodeStarted{SessionID: sid, Route: route, EpisodeID: "u2", EpisodeRecordID: "ep-000002", EpisodeIndex: 2, EnvIndex: 1, Seed: events.Some(int64(6))},
		&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeRecordIDs: ids, IsReset: true, NumEnvs: 2, ObservationSpace: obsSpec, Observation: obs(1, 2)},
		&events.ActionReceived{SessionID: sid, Route: route, EpisodeRecordIDs: ids, Step: 1, ActionSpace: actSpec, Action: act(1, 2), RawAction: act(8, 2)},
		step(1, []bool{false, true}, no),
		&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeRecordIDs: ids, Step: 1, NumEnvs: 2, ObservationSpace: obsSpec, Observation: obs(3, 4)},
		&events.ActionReceived{SessionID: sid, Route: route, EpisodeRecordIDs: ids, Step: 2, ActionSpace: actSpec, Action: act(1, 0)},
		step(2, no, []bool{false, true}),
		&events.EpisodeCompleted{SessionID: sid, Route: route, EpisodeID: "u2", EpisodeRecordID: "ep-000002", EpisodeIndex: 2, EnvIndex: 1,
			StepCount: 1, CumulativeReward: 1, Terminated: true, Success: events.Some(true), Seed: events.Some(int64(6)),
			PredictMs: events.Some(2.0), StepMs: events.Some(0.5)},
		// The budget is spent: lane 1 rolls into a surplus episode.
		&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeRecordIDs: []string{"ep-000001", "ep-000099"}, Step: 2, NumEnvs: 2,
			ObservationSpace: obsSpec, Observation: obs(5, 6)},
		&events.ActionReceived{SessionID: sid, Route: route, EpisodeRecordIDs: []string{"ep-000001", "ep-000099"}, Step: 3, ActionSpace: actSpec, Action: act(1, 1)},
		step(3, []bool{true, false}, no),
		&events.EpisodeCompleted{SessionID: sid, Route: route, EpisodeID: "u1", EpisodeRecordID: "ep-000001", EpisodeIndex: 1,
			StepCount: 3, CumulativeReward: 3, Terminated: true, Seed: events.Some(int64(5)), PredictMs: events.Some(2.0), StepMs: events.Some(0.5)},
		&events.TelemetrySnapshot{SessionID: sid, Route: route, Snapshot: events.Snapshot{Horizon: events.HorizonSession,
			Rows: []events.TelemetryRow{{Op: "env.step", Component: "env", Metric: "rpc.total", Kind: events.MetricDurationMs, Count: 3, Avg: 0.5}}}},
		&events.SessionEnded{SessionID: sid, Route: route, Reason: "completed requested episodes", TotalSteps: 3, TotalEpisodes: 2},
	}
}

// TestVersion3TablesDuckDB records a session of rlmesh 0.1 into a ROOT
// that already holds version 2 recordings (the golden ROOT of version 2)
// and reads every table of it with DuckDB in one line each: the version 3
// columns hold what the events said, and the version 2 recordings' rows
// read them as null (union_by_name=true, as docs/reading.md shows for ROOTs
// whose recordings differ in columns).
func TestVersion3TablesDuckDB(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "testdata", "golden-root-v2"))); err != nil {
		t.Fatal(err)
	}
	// What a recorder of version 2 left beside its tables.
	if err := os.MkdirAll(filepath.Join(root, "_rlrec"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "_rlrec", "layout"), []byte("schema_version=2\nlayout=episode\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_800_000_000, 0).UTC()
	for i, ev := range v3Session() {
		if err := rec.RecordAt(context.Background(), ev, at.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db := openDuck(t)
	one := func(table string) []row {
		return query(t, db, "SELECT * FROM "+scan(tableGlob(root, table), "union_by_name=true")+" WHERE session_id = 'v3'")
	}
	for _, table := range []string{"steps", "episodes", "sessions", "logs", "telemetry"} {
		// Every table reads whole, old and new recordings together.
		query(t, db, "SELECT count(*) FROM "+scan(tableGlob(root, table), "union_by_name=true"))
	}
	eps := one("episodes")
	if len(eps) != 2 {
		t.Fatalf("%d episodes rows, want 2 (the surplus episode is not one)", len(eps))
	}
	for _, r := range eps {
		switch r["episode_record_id"] {
		case "ep-000002":
			checkEq(t, "ep-000002 success", r["success"], true)
			checkEq(t, "ep-000002 success_source", r["success_source"], "runtime")
			checkEq(t, "ep-000002 seed", asInt64(t, r["seed"]), int64(6))
			checkEq(t, "ep-000002 predict_ms", r["predict_ms"], 2.0)
			if r["final_observation_blob"] == nil {
				t.Error("ep-000002: no terminal observation")
			}
		case "ep-000001":
			checkEq(t, "ep-000001 success", r["success"], nil)
			checkEq(t, "ep-000001 success_source", r["success_source"], nil)
			checkEq(t, "ep-000001 trial_index", r["trial_index"], nil)
		}
	}
	steps := query(t, db, "SELECT count(*) AS n, count(raw_action_blob) AS raw, count(infos) AS infos, count(predict_ms) AS times, "+
		"count(lane) AS lanes FROM "+scan(tableGlob(root, "steps"), "union_by_name=true")+" WHERE session_id = 'v3'")
	checkEq(t, "steps rows", asInt64(t, steps[0]["n"]), int64(4))
	checkEq(t, "raw_action_blob (lane 0, step 1 only)", asInt64(t, steps[0]["raw"]), int64(1))
	checkEq(t, "infos", asInt64(t, steps[0]["infos"]), int64(3)) // none on the roll step
	checkEq(t, "predict_ms", asInt64(t, steps[0]["times"]), int64(4))
	checkEq(t, "lane (a whole-env route)", asInt64(t, steps[0]["lanes"]), int64(0))
	old := query(t, db, "SELECT count(*) AS n, count(infos) AS infos FROM "+scan(tableGlob(root, "steps"), "union_by_name=true")+" WHERE session_id <> 'v3'")
	if asInt64(t, old[0]["n"]) == 0 || asInt64(t, old[0]["infos"]) != 0 {
		t.Errorf("version 2 rows: %v", old[0])
	}
	sess := one("sessions")
	checkEq(t, "surplus_steps", asInt64(t, sess[0]["surplus_steps"]), int64(1))
	checkEq(t, "dropped_steps (the roll and the surplus step)", asInt64(t, sess[0]["dropped_steps"]), int64(2))
	checkEq(t, "problems", asInt64(t, sess[0]["problems"]), int64(0))
	logs := one("logs")
	if len(logs) != 1 || logs[0]["source"] != "rlrec/event" || logs[0]["level"] != "info" {
		t.Errorf("logs %v", logs)
	}
	if n := len(one("telemetry")); n != 1 {
		t.Errorf("%d telemetry rows", n)
	}
}
