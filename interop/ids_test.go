package interop

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"github.com/rlrec/rlrec/sim"
)

// TestAwkwardIDs records sessions whose ids try to escape ROOT, need
// escaping or are too long for a directory name, and checks that every
// path is encoded as docs/format/layout.md specifies, that DuckDB's hive partitioning
// gives back the exact ids (or, for a cut one, the cut name, with the id in
// the file metadata) and that nothing was written outside ROOT.
func TestAwkwardIDs(t *testing.T) {
	forEachLayout(t, testAwkwardIDs)
}

func testAwkwardIDs(t *testing.T, l hive.Layout) {
	simIDs := []struct {
		name string
		id   string
		env  string // "" lets the simulator mint a UUIDv7
	}{
		{"traversal, UTF-8, space, percent, equals, NUL", "s/../é %=x\x00", ""},
		{"dot dot", "..", ""},
		{"dot", ".", ""},
		{"already escaped", "%2E%2E%2Fetc", ""},
		{"quotes and backslash", `a'b"c\d`, ""},
		{"leading slash", "/abs/path", ""},
		{"awkward env id", "plain-session", "../env/ü %=\x00"},
		{"dot env id", "dot-env", "."},
		{"245-byte session id", strings.Repeat("s", 245), ""},
		{"42 e-acute session id, long env id", strings.Repeat("é", 42), strings.Repeat("r/", 120)},
	}
	handEpisode := "e/../ü %=\x00"
	handSession := "hand/../built %=\x00"
	handEnv := "hand/../env %=\x00"

	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	ctx := context.Background()
	rec, err := recorder.Open(root, layoutOptions(l)...)
	if err != nil {
		t.Fatalf("open %s: %v", root, err)
	}
	tl := newTally(rec)
	var cfgs []sim.Config
	for i, c := range simIDs {
		cfg := sim.Config{
			SessionID: c.id, Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep,
			MaxEpisodes: 2, TimeLimit: 10, Seed: uint64(100 + i),
			Clock: sim.StepClock(epoch, time.Millisecond),
		}
		if c.env != "" {
			cfg.Route = events.RuntimeEnvContext{EnvID: c.env, EnvComponentID: "env/cartpole", ModelComponentID: "model/cartpole-policy"}
		}
		cfgs = append(cfgs, cfg)
	}
	sums, err := sim.RunSessions(ctx, tl, cfgs)
	if err != nil {
		t.Fatalf("run sessions: %v", err)
	}
	rewards := recordHandBuilt(t, ctx, tl, handSession, handEnv, handEpisode)
	if err := rec.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	recs := make([]hive.Recording, len(sums))
	for i, sum := range sums {
		recs[i] = hive.Recording{SessionID: sum.SessionID, EnvID: sum.EnvID}
		if simIDs[i].env != "" && sum.EnvID != simIDs[i].env {
			t.Fatalf("%s: the simulator ran env id %q, the config set %q", simIDs[i].name, sum.EnvID, simIDs[i].env)
		}
	}
	handRec := hive.Recording{SessionID: handSession, EnvID: handEnv}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "root" {
		t.Fatalf("the recording's parent directory holds %v, want only root", dirNames(entries))
	}
	db := openDuck(t)
	kv := kvMetadata(t, db, filepath.Join(root, "**", "*.parquet"))
	var cut int
	for _, rel := range walkFiles(t, root) {
		parts := strings.Split(rel, string(filepath.Separator))
		if parts[0] == "_rlrec" {
			continue
		}
		// table/session_id=S/env_id=R/[episode_record_id=E/]part-N.parquet,
		// each value the directory form of the one in the file's metadata.
		keys := []string{"session_id", "env_id"}
		if parts[0] == "steps" {
			keys = stepsKeys(l)
		}
		if len(parts) != len(keys)+2 {
			t.Errorf("file %s is not at %s/%s=.../part-N.parquet", rel, parts[0], strings.Join(keys, "=.../"))
			continue
		}
		m, ok := kv[filepath.Join(root, rel)]
		if !ok {
			t.Errorf("%s: parquet_kv_metadata did not list it", rel)
			continue
		}
		for i, key := range keys {
			seg := parts[i+1]
			k, v, _ := strings.Cut(seg, "=")
			if k != key {
				t.Errorf("%s: segment %q, want %s=...", rel, seg, key)
				continue
			}
			id, ok := m["rlrec."+key]
			if !ok {
				t.Errorf("%s: no rlrec.%s in the file metadata", rel, key)
				continue
			}
			if v != encodeValue(id) {
				t.Errorf("%s: segment %q, want %s=%s as docs/format/layout.md specifies for %q", rel, seg, key, encodeValue(id), id)
			}
			if len(seg) > 255 {
				t.Errorf("%s: segment of %d bytes, over a file name's 255", rel, len(seg))
			}
			if len(v) > maxValueLen {
				cut++
			}
		}
	}
	if cut == 0 {
		t.Errorf("no cut partition value under ROOT; the long ids should give some")
	}

	type pair struct{ sid, env string }
	seen := map[pair]bool{}
	for _, r := range query(t, db, "SELECT session_id, env_id FROM "+scan(tableGlob(root, "sessions"))) {
		seen[pair{r["session_id"].(string), r["env_id"].(string)}] = true
	}
	snap := tl.snapshot()
	for i, c := range simIDs {
		rec := recs[i]
		t.Run(c.name, func(t *testing.T) {
			// The values a dataset scan shows: the ids, or their cut names.
			sid, env := scanValue(t, rec.SessionID), scanValue(t, rec.EnvID)
			if !seen[pair{sid, env}] {
				t.Errorf("DuckDB did not return (session_id, env_id) (%q, %q); it returned %v", sid, env, seen)
			}
			s := snap[rec]
			for _, table := range []string{"steps", "episodes", "logs", "telemetry", "sessions"} {
				rows := query(t, db, "SELECT count(*) AS n FROM "+scan(tableGlob(root, table), "union_by_name=true")+" WHERE session_id = ? AND env_id = ?", sid, env)
				if asInt64(t, rows[0]["n"]) == 0 {
					t.Errorf("%s: no rows with session_id %q and env_id %q", table, sid, env)
				}
				// The real ids are in every file's metadata, found by the
				// project's encoding of the recording's directory.
				files := kvMetadata(t, db, recordingGlob(root, table, rec))
				if len(files) == 0 {
					t.Errorf("%s: no files under %s", table, recordingDir(root, table, rec))
				}
				for f, m := range files {
					checkEq(t, f+" rlrec.session_id", m["rlrec.session_id"], rec.SessionID)
					checkEq(t, f+" rlrec.env_id", m["rlrec.env_id"], rec.EnvID)
				}
			}
			rows := query(t, db, "SELECT episode_record_id FROM "+scan(tableGlob(root, "episodes"))+" WHERE session_id = ? AND env_id = ? ORDER BY episode_record_id", sid, env)
			if len(rows) != len(s.order) {
				t.Errorf("%d episodes rows, simulator started %d", len(rows), len(s.order))
			}
			for j, r := range rows {
				if j < len(s.order) {
					checkEq(t, fmt.Sprintf("episode_record_id %d", j), r["episode_record_id"], s.order[j])
				}
			}
		})
	}
	t.Run("hand-built episode record id", func(t *testing.T) {
		if !seen[pair{handSession, handEnv}] {
			t.Errorf("DuckDB did not return (session_id, env_id) (%q, %q); it returned %v", handSession, handEnv, seen)
		}
		for _, table := range []string{"steps", "episodes"} {
			rows := query(t, db, "SELECT session_id, env_id, episode_record_id, count(*) AS n FROM "+scan(tableGlob(root, table), "union_by_name=true")+
				" WHERE session_id = ? GROUP BY ALL", handSession)
			if len(rows) != 1 {
				t.Fatalf("%s: %d (session, env, episode) groups for session %q, want 1: %v", table, len(rows), handSession, rows)
			}
			checkEq(t, table+" env_id", rows[0]["env_id"], handEnv)
			checkEq(t, table+" episode_record_id", rows[0]["episode_record_id"], handEpisode)
			want := int64(1)
			if table == "steps" {
				want = int64(len(rewards))
			}
			checkEq(t, table+" rows", rows[0]["n"], want)
		}
		dir := hive.EpisodePartition("steps", handRec, handEpisode).Dir(root)
		if l == hive.LayoutSession {
			dir = recordingDir(root, "steps", handRec)
		}
		kv := kvMetadata(t, db, filepath.Join(dir, "*.parquet"))
		if len(kv) != 1 {
			t.Fatalf("%d steps files for the hand-built episode, want 1", len(kv))
		}
		for f, m := range kv {
			checkEq(t, f+" rlrec.session_id", m["rlrec.session_id"], handSession)
			checkEq(t, f+" rlrec.env_id", m["rlrec.env_id"], handEnv)
			if l == hive.LayoutEpisode {
				checkEq(t, f+" rlrec.episode_record_id", m["rlrec.episode_record_id"], handEpisode)
				continue
			}
			// Layout session: the id is a column value, NUL and all.
			rows := query(t, db, "SELECT DISTINCT episode_record_id FROM read_parquet("+lit(f)+", hive_partitioning=false)")
			if len(rows) != 1 || rows[0]["episode_record_id"] != handEpisode {
				t.Errorf("%s: episode_record_id values %v, want only %q", f, rows, handEpisode)
			}
		}
	})
	t.Run("steps_file", func(t *testing.T) { checkStepsFiles(t, db, root) })
}

// recordHandBuilt hands over one session of one single-lane episode with
// the given ids (session, env and episode record), and returns the rewards of its steps.
func recordHandBuilt(t *testing.T, ctx context.Context, h events.Hooks, sid, envID, rid string) []float64 {
	t.Helper()
	route := events.RuntimeEnvContext{EnvID: envID, EnvComponentID: "env-0", ModelComponentID: "model-0"}
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
