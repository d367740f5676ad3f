package interop

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"github.com/rlrec/rlrec/sim"
)

// TestAwkwardIDs records sessions whose ids try to escape ROOT or need
// escaping, and checks that DuckDB's hive partitioning gives back the exact
// ids and that nothing was written outside ROOT.
func TestAwkwardIDs(t *testing.T) {
	simIDs := []struct {
		name string
		id   string
	}{
		{"traversal, UTF-8, space, percent, equals, NUL", "s/../é %=x\x00"},
		{"dot dot", ".."},
		{"dot", "."},
		{"already escaped", "%2E%2E%2Fetc"},
		{"quotes and backslash", `a'b"c\d`},
		{"leading slash", "/abs/path"},
	}
	handEpisode := "e/../ü %=\x00"
	handSession := "hand/../built %=\x00"

	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	ctx := context.Background()
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatalf("open %s: %v", root, err)
	}
	tl := newTally(rec)
	var cfgs []sim.Config
	for i, c := range simIDs {
		cfgs = append(cfgs, sim.Config{
			SessionID: c.id, Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep,
			MaxEpisodes: 2, MaxEpisodeSteps: 10, Seed: uint64(100 + i),
			Clock: sim.StepClock(epoch, time.Millisecond),
		})
	}
	if _, err := sim.RunSessions(ctx, tl, cfgs); err != nil {
		t.Fatalf("run sessions: %v", err)
	}
	rewards := recordHandBuilt(t, ctx, tl, handSession, handEpisode)
	if err := rec.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "root" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the recording's parent directory holds %v, want only root", names)
	}
	for _, rel := range walkFiles(t, root) {
		parts := strings.Split(rel, string(filepath.Separator))
		if parts[0] == "_rlrec" {
			continue
		}
		// table/session_id=.../[episode_record_id=.../]part-N.parquet
		if len(parts) < 3 || !strings.HasPrefix(parts[1], "session_id=") {
			t.Errorf("file %s is not at table/session_id=S/...", rel)
		}
		for _, seg := range parts[1 : len(parts)-1] {
			_, v, _ := strings.Cut(seg, "=")
			if v != escape(unescape(t, v)) {
				t.Errorf("%s: segment %q is not encoded as DESIGN.md specifies (%q)", rel, seg, escape(unescape(t, v)))
			}
		}
	}

	db := openDuck(t)
	sessions := map[string]bool{}
	for _, r := range query(t, db, "SELECT session_id FROM "+scan(tableGlob(root, "sessions"))) {
		sessions[r["session_id"].(string)] = true
	}
	for _, c := range simIDs {
		t.Run(c.name, func(t *testing.T) {
			if !sessions[c.id] {
				t.Errorf("DuckDB did not return session_id %q; it returned %q", c.id, sortedKeys(sessions))
			}
			s := tl.snapshot()[c.id]
			for _, table := range []string{"steps", "episodes", "logs", "telemetry", "sessions"} {
				rows := query(t, db, "SELECT count(*) AS n FROM "+scan(tableGlob(root, table), "union_by_name=true")+" WHERE session_id = ?", c.id)
				if asInt64(t, rows[0]["n"]) == 0 {
					t.Errorf("%s: no rows with session_id %q", table, c.id)
				}
			}
			rows := query(t, db, "SELECT episode_record_id FROM "+scan(tableGlob(root, "episodes"))+" WHERE session_id = ? ORDER BY episode_record_id", c.id)
			if len(rows) != len(s.order) {
				t.Errorf("%d episodes rows, simulator started %d", len(rows), len(s.order))
			}
		})
	}
	t.Run("hand-built episode record id", func(t *testing.T) {
		if !sessions[handSession] {
			t.Errorf("DuckDB did not return session_id %q; it returned %q", handSession, sortedKeys(sessions))
		}
		for _, table := range []string{"steps", "episodes"} {
			rows := query(t, db, "SELECT session_id, episode_record_id, count(*) AS n FROM "+scan(tableGlob(root, table), "union_by_name=true")+
				" WHERE session_id = ? GROUP BY ALL", handSession)
			if len(rows) != 1 {
				t.Fatalf("%s: %d (session, episode) groups for session %q, want 1: %v", table, len(rows), handSession, rows)
			}
			checkEq(t, table+" episode_record_id", rows[0]["episode_record_id"], handEpisode)
			want := int64(1)
			if table == "steps" {
				want = int64(len(rewards))
			}
			checkEq(t, table+" rows", rows[0]["n"], want)
		}
		kv := kvMetadata(t, db, filepath.Join(root, "steps", "session_id="+escape(handSession), "*", "*.parquet"))
		if len(kv) != 1 {
			t.Fatalf("%d steps files for the hand-built session, want 1", len(kv))
		}
		for f, m := range kv {
			checkEq(t, f+" rlrec.session_id", m["rlrec.session_id"], handSession)
			checkEq(t, f+" rlrec.episode_record_id", m["rlrec.episode_record_id"], handEpisode)
		}
	})
}

// recordHandBuilt hands over one session of one single-lane episode with
// the given ids, and returns the rewards of its steps.
func recordHandBuilt(t *testing.T, ctx context.Context, h events.Hooks, sid, rid string) []float64 {
	t.Helper()
	route := events.RuntimeEnvContext{EnvID: "hand", EnvComponentID: "env-0", ModelComponentID: "model-0"}
	obsSpec := &spacesv1.SpaceSpec{Shape: []int64{2}, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32,
		Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
	actSpec := &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 3}}}
	const eid = "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
	ids, rids := []string{eid}, []string{rid}
	obs := func(x float32) [][]byte {
		b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(x))
		return [][]byte{binary.LittleEndian.AppendUint32(b, math.Float32bits(-x))}
	}
	rewards := []float64{0.5, -1.25, 2}
	evs := []events.Event{
		&events.SessionStarted{SessionID: sid, Route: route, EnvID: route.EnvID},
		&events.EpisodeStarted{SessionID: sid, Route: route, EpisodeID: eid, EpisodeRecordID: rid, EpisodeIndex: 1},
		&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeID: eid, EpisodeRecordID: rid, EpisodeIDs: ids, EpisodeRecordIDs: rids,
			IsReset: true, NumEnvs: 1, ObservationSpace: obsSpec, Observation: obs(0)},
	}
	for i, r := range rewards {
		step := int64(i + 1)
		evs = append(evs,
			&events.ActionReceived{SessionID: sid, Route: route, EpisodeID: eid, EpisodeRecordID: rid, EpisodeIDs: ids, EpisodeRecordIDs: rids,
				Step: step, ActionSpace: actSpec, Action: [][]byte{binary.LittleEndian.AppendUint64(nil, uint64(i%3))}},
			&events.StepCompleted{SessionID: sid, Route: route, EpisodeID: eid, EpisodeRecordID: rid, Step: step, Rewards: []float64{r}},
			&events.ObservationEmitted{SessionID: sid, Route: route, EpisodeID: eid, EpisodeRecordID: rid, EpisodeIDs: ids, EpisodeRecordIDs: rids,
				Step: step, NumEnvs: 1, ObservationSpace: obsSpec, Observation: obs(float32(step))},
		)
	}
	evs = append(evs,
		&events.EpisodeCompleted{SessionID: sid, Route: route, EpisodeID: eid, EpisodeRecordID: rid, EpisodeIndex: 1,
			StepCount: int64(len(rewards)), CumulativeReward: 1.25, Terminated: true},
		&events.SessionEnded{SessionID: sid, Route: route, Reason: "done", TotalSteps: int64(len(rewards)), TotalEpisodes: 1},
	)
	for _, ev := range evs {
		if err := events.Dispatch(ctx, h, ev); err != nil {
			t.Fatalf("hand %s of session %q: %v", ev.Kind(), sid, err)
		}
	}
	return rewards
}
