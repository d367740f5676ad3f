package interop

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/sim"
)

// uuidV7 matches a UUIDv7 in its canonical lower-case form.
var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestSharedSessionID records two runs that share one session id, as
// rlmesh's local runner gives every run of a process, and checks that
// DuckDB tells the two recordings apart by env_id: the episodes table
// groups into one (session_id, env_id) pair per run with that run's count,
// and the steps of each run, whose spaces differ, read with one glob per
// recording.
func TestSharedSessionID(t *testing.T) {
	forEachLayout(t, testSharedSessionID)
}

func testSharedSessionID(t *testing.T, l hive.Layout) {
	const sid = "local-4242"
	cfgs := []sim.Config{
		{SessionID: sid, Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5, TimeLimit: 20, Seed: 41},
		{SessionID: sid, Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeSteps: 15, Seed: 42},
	}
	for i := range cfgs {
		cfgs[i].Clock = sim.StepClock(epoch.Add(time.Duration(i)*time.Minute), time.Millisecond)
	}
	root := filepath.Join(t.TempDir(), "root")
	sessions, configs, err := record(context.Background(), root, cfgs, layoutOptions(l)...)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if len(sessions) != 2 {
		t.Fatalf("%d recordings, want 2: %v", len(sessions), sortedRecordings(sessions))
	}
	recs := sortedRecordings(sessions)
	for _, rec := range recs {
		if rec.SessionID != sid || !uuidV7.MatchString(rec.EnvID) {
			t.Fatalf("recording %s: want session %q and a minted UUIDv7 env id", rec, sid)
		}
	}
	if recs[0].EnvID == recs[1].EnvID {
		t.Fatalf("both runs got env id %q", recs[0].EnvID)
	}

	// On disk: one session_id directory per table, holding one env_id
	// directory per run.
	for _, table := range []string{"steps", "episodes", "sessions", "logs", "telemetry"} {
		dirs, err := os.ReadDir(filepath.Join(root, table))
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) != 1 || dirs[0].Name() != "session_id="+escape(sid) {
			t.Errorf("%s: directories %v, want only session_id=%s", table, dirNames(dirs), escape(sid))
			continue
		}
		envs, err := os.ReadDir(filepath.Join(root, table, dirs[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"env_id=" + escape(recs[0].EnvID), "env_id=" + escape(recs[1].EnvID)}
		if got := dirNames(envs); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s/session_id=%s: directories %v, want %v", table, sid, got, want)
		}
	}

	db := openDuck(t)
	rows := query(t, db, "SELECT session_id, env_id, count(*) AS n FROM read_parquet("+lit(tableGlob(root, "episodes"))+", hive_partitioning=true) GROUP BY ALL ORDER BY ALL")
	if len(rows) != 2 {
		t.Fatalf("episodes grouped by (session_id, env_id): %d groups, want 2: %v", len(rows), rows)
	}
	for i, r := range rows {
		checkEq(t, fmt.Sprintf("group %d session_id", i), r["session_id"], sid)
		checkEq(t, fmt.Sprintf("group %d env_id", i), r["env_id"], recs[i].EnvID)
		checkEq(t, fmt.Sprintf("group %d episodes", i), r["n"], int64(len(sessions[recs[i]].episodes)))
	}

	// Both runs number their episodes from ep-000001: only the recording
	// tells them apart.
	episodes := map[episodeKey]row{}
	for _, r := range query(t, db, "SELECT session_id, env_id, episode_record_id, episode_id, steps_recorded, status FROM "+scan(tableGlob(root, "episodes"))) {
		k := episodeKeyOf(r)
		if _, dup := episodes[k]; dup {
			t.Errorf("%s has more than one episodes row", k)
		}
		episodes[k] = r
	}
	sessionRows := map[hive.Recording]row{}
	for _, r := range query(t, db, "SELECT session_id, env_id, status, episodes_recorded, steps_recorded FROM "+scan(tableGlob(root, "sessions"))) {
		sessionRows[hive.Recording{SessionID: r["session_id"].(string), EnvID: r["env_id"].(string)}] = r
	}
	if len(sessionRows) != 2 {
		t.Errorf("%d sessions rows, want one per run", len(sessionRows))
	}

	for _, rec := range recs {
		s := sessions[rec]
		t.Run(configs[rec].Env, func(t *testing.T) {
			if _, ok := episodes[episodeKey{rec, "ep-000001"}]; !ok {
				t.Errorf("no episodes row for ep-000001")
			}
			var steps int64
			for rid, e := range s.episodes {
				steps += e.actions
				r, ok := episodes[episodeKey{rec, rid}]
				if !ok {
					t.Errorf("episode %s: no episodes row", rid)
					continue
				}
				checkEq(t, rid+" episode_id", r["episode_id"], e.episodeID)
				checkEq(t, rid+" steps_recorded", r["steps_recorded"], e.actions)
			}
			if sr, ok := sessionRows[rec]; !ok {
				t.Errorf("no sessions row")
			} else {
				checkEq(t, "sessions status", sr["status"], s.status)
				checkEq(t, "sessions episodes_recorded", sr["episodes_recorded"], int64(len(s.episodes)))
				checkEq(t, "sessions steps_recorded", sr["steps_recorded"], steps)
			}

			// The steps of this run alone, with its own typed columns.
			src := scan(recordingGlob(root, "steps", rec))
			types := map[string]string{}
			for _, r := range query(t, db, "DESCRIBE SELECT * FROM "+src) {
				types[r["column_name"].(string)] = r["column_type"].(string)
			}
			wantAction := map[string]string{"cartpole": "BIGINT", "pick-place": "FLOAT[]"}[configs[rec].Env]
			checkEq(t, "type of the action column", types["action"], wantAction)
			got := query(t, db, `SELECT count(*) AS n, count(DISTINCT session_id) AS sids, any_value(session_id) AS sid,
				count(DISTINCT env_id) AS envs, any_value(env_id) AS env, count(DISTINCT episode_record_id) AS episodes,
				count(*) FILTER (action IS NULL OR observation_blob IS NULL) AS nulls FROM `+src)
			checkEq(t, "steps rows", got[0]["n"], steps)
			checkEq(t, "distinct session_id", got[0]["sids"], int64(1))
			checkEq(t, "session_id", got[0]["sid"], sid)
			checkEq(t, "distinct env_id", got[0]["envs"], int64(1))
			checkEq(t, "env_id", got[0]["env"], rec.EnvID)
			checkEq(t, "rows without action or observation", got[0]["nulls"], int64(0))
			var withSteps int64
			for _, e := range s.episodes {
				if e.actions > 0 {
					withSteps++
				}
			}
			checkEq(t, "episodes with steps", got[0]["episodes"], withSteps)
			for _, rid := range s.order {
				r := query(t, db, "SELECT count(*) AS n FROM "+src+" WHERE episode_record_id = ?", rid)
				checkEq(t, rid+" steps rows", r[0]["n"], s.episodes[rid].actions)
			}

			for _, tb := range []struct {
				table string
				want  int64
			}{{"logs", s.logs}, {"telemetry", s.telemetry}, {"episodes", int64(len(s.episodes))}, {"sessions", 1}} {
				r := query(t, db, "SELECT count(*) AS n FROM "+scan(recordingGlob(root, tb.table, rec)))
				checkEq(t, tb.table+" rows", r[0]["n"], tb.want)
			}
		})
	}
	checkStepsFiles(t, db, root)
}

// TestStepsFile checks the steps_file column of every episodes row of the
// shared ROOT.
func TestStepsFile(t *testing.T) {
	forEachFixture(t, testStepsFile)
}

func testStepsFile(t *testing.T, fx *fixture) {
	checkStepsFiles(t, openDuck(t), fx.root)
}

// checkStepsFiles checks in DuckDB, for every episodes row under root,
// that steps_file names, relative to root, an existing steps file of the
// same recording holding the episode's rows, as many as the row's
// steps_recorded and in no other file (and is null for an episode without
// steps), and that every steps file is named by the rows of exactly the
// episodes it holds: one in layout "episode", one or more in layout
// "session" (read from ROOT's layout file).
func checkStepsFiles(t *testing.T, db *sql.DB, root string) {
	t.Helper()
	l := rootLayout(t, root)
	steps := scan(tableGlob(root, "steps"), "union_by_name=true", "filename=true")
	rows := query(t, db, `WITH e AS (
			SELECT session_id, env_id, episode_record_id, steps_recorded, steps_file FROM `+scan(tableGlob(root, "episodes"))+`),
		s AS (
			SELECT filename, session_id, env_id, episode_record_id, count(*) AS n FROM `+steps+` GROUP BY ALL)
		SELECT e.*, s.filename, s.n FROM e LEFT JOIN s ON s.filename = ? || '/' || e.steps_file
			AND s.session_id = e.session_id AND s.env_id = e.env_id AND s.episode_record_id = e.episode_record_id`, root)
	if len(rows) == 0 {
		t.Fatalf("no episodes rows under %s", root)
	}
	named := map[string]int{}
	var withFile int
	for _, r := range rows {
		k := episodeKeyOf(r)
		recorded := asInt64(t, r["steps_recorded"])
		sf, ok := r["steps_file"].(string)
		if !ok {
			if r["steps_file"] != nil {
				t.Errorf("%s: steps_file = %v (%T), want a string or null", k, r["steps_file"], r["steps_file"])
			} else if recorded != 0 {
				t.Errorf("%s: steps_file is null, but %d steps were recorded", k, recorded)
			}
			continue
		}
		withFile++
		named[sf]++
		if path.IsAbs(sf) || path.Clean(sf) != sf || strings.HasPrefix(sf, "../") || strings.Contains(sf, `\`) || !strings.HasPrefix(sf, "steps/") {
			t.Errorf("%s: steps_file %q is not a clean path relative to ROOT under steps/", k, sf)
		}
		if want := len(stepsKeys(l)) + 2; strings.Count(sf, "/")+1 != want {
			t.Errorf("%s: steps_file %q is not steps/%s=.../part-N.parquet (layout %s)", k, sf, strings.Join(stepsKeys(l), "=.../"), l)
		}
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(sf))); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: steps_file %q: %v", k, sf, err)
		}
		if r["filename"] == nil {
			t.Errorf("%s: steps_file %q is not a file of DuckDB's steps glob holding rows of the episode", k, sf)
			continue
		}
		checkEq(t, k.String()+" rows in "+sf+" vs steps_recorded", r["n"], recorded)
	}
	if withFile == 0 {
		t.Errorf("no episodes row names a steps file")
	}
	// Every episode's rows are in one file, and each file holds the
	// episodes that name it.
	for _, r := range query(t, db, "SELECT session_id, env_id, episode_record_id, count(DISTINCT filename) AS files FROM "+steps+" GROUP BY ALL HAVING files <> 1") {
		t.Errorf("%s: rows in %v steps files, want 1", episodeKeyOf(r), r["files"])
	}
	files := query(t, db, "SELECT filename, count(DISTINCT (session_id, env_id, episode_record_id)) AS episodes, count(DISTINCT (session_id, env_id)) AS recordings FROM "+steps+" GROUP BY filename")
	for _, f := range files {
		rel, err := filepath.Rel(root, f["filename"].(string))
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		n := asInt64(t, f["episodes"])
		checkEq(t, rel+" recordings", f["recordings"], int64(1))
		if l == hive.LayoutEpisode && n != 1 {
			t.Errorf("steps file %s holds %d episodes; layout episode gives each its own", rel, n)
		}
		if int64(named[rel]) != n {
			t.Errorf("steps file %s holds %d episodes and is named by %d episodes rows", rel, n, named[rel])
		}
	}
	if len(files) != len(named) {
		t.Errorf("%d steps files, episodes rows name %d", len(files), len(named))
	}
}

func dirNames(entries []os.DirEntry) []string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
