package interop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// idsRoot records a ROOT whose ids a reader's hive partitioning would
// take for numbers and dates: session ids 007 and 042 with env ids
// 2026-01-02 and 2026-01-03 (sessions maps one to the other).
func idsRoot(t *testing.T) (root string, sessions map[string]string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "root")
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	sessions = map[string]string{"007": "2026-01-02", "042": "2026-01-03"}
	var cfgs []sim.Config
	i := 0
	for sid, env := range sessions {
		cfgs = append(cfgs, sim.Config{SessionID: sid, Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep,
			MaxEpisodes: 2, Seed: uint64(i + 1), Clock: sim.StepClock(epoch.Add(time.Duration(i)*time.Hour), time.Millisecond),
			Route: events.RuntimeEnvContext{EnvID: env, EnvComponentID: "env/cartpole", ModelComponentID: "model/cartpole-policy"}})
		i++
	}
	if _, err := sim.RunSessions(context.Background(), rec, cfgs); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return root, sessions
}

// TestIDsAsWritten records sessions whose ids DuckDB's hive partitioning
// would take for numbers and dates (session ids 007 and 042, env ids
// 2026-01-02 and 2026-01-03), shows that a plain hive scan loses them,
// and runs the README's one-liners, which keep them as written.
func TestIDsAsWritten(t *testing.T) {
	root, sessions := idsRoot(t)
	db := openDuck(t)

	// What the README warns of: guessed types.
	r := query(t, db, "SELECT typeof(session_id) AS s, typeof(env_id) AS e FROM "+scan(tableGlob(root, "episodes"))+" LIMIT 1")[0]
	if r["s"] == "VARCHAR" && r["e"] == "VARCHAR" {
		t.Errorf("a plain hive scan kept the ids as strings (%v, %v): the README's warning is out of date", r["s"], r["e"])
	}

	// The README's one-liners that keep the ids, and hive_types.
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for _, line := range strings.Split(string(readme), "\n") {
		q, ok := strings.CutPrefix(strings.TrimSpace(line), `duckdb -c "`)
		if !ok || !strings.Contains(q, "hive_types_autocast=false") || strings.Contains(q, "s3://") {
			// Those over a bucket run in TestReadBucketInPlace.
			continue
		}
		q = strings.TrimSuffix(q, `"`)
		q = strings.ReplaceAll(q, "'ROOT/", "'"+root+"/")
		q = strings.ReplaceAll(q, "session_id=S/env_id=R/", "session_id=007/env_id=2026-01-02/")
		queries = append(queries, q)
	}
	if len(queries) < 3 {
		t.Fatalf("%d README one-liners with hive_types_autocast=false, want the episodes, steps and all-steps ones", len(queries))
	}
	queries = append(queries, "SELECT session_id, env_id FROM "+scan(tableGlob(root, "episodes"),
		"hive_types={'session_id': VARCHAR, 'env_id': VARCHAR}"),
		"SELECT session_id, env_id, episode_record_id FROM "+scan(tableGlob(root, "steps"),
			"hive_types={'session_id': VARCHAR, 'env_id': VARCHAR, 'episode_record_id': VARCHAR}"))
	for _, q := range queries {
		rows := query(t, db, q)
		if len(rows) == 0 {
			t.Errorf("%s: no rows", q)
		}
		for _, row := range rows {
			sid, sok := row["session_id"].(string)
			env, eok := row["env_id"].(string)
			if _, has := row["session_id"]; has && (!sok || sessions[sid] == "") {
				t.Errorf("%s: session_id %#v, want 007 or 042 as strings", q, row["session_id"])
			}
			if _, has := row["env_id"]; has && (!eok || (env != "2026-01-02" && env != "2026-01-03")) {
				t.Errorf("%s: env_id %#v, want the dates as written", q, row["env_id"])
			}
			if sok && eok && sessions[sid] != env {
				t.Errorf("%s: session %s with env %s", q, sid, env)
			}
		}
	}
}
