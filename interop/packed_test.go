package interop

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// TestEpisodeRowsContiguous checks, in every steps file of each fixture,
// that an episode's rows are contiguous and in step order and that no row
// group holds rows of two episodes (docs/format/layout.md: row groups
// never straddle episodes in layout "session"), once with DuckDB
// (parquet_metadata for the row groups, file_row_number for the order)
// and once with arrow-go's Parquet reader. In layout "session" the fixture
// must give the checks something to find: files of several episodes over
// several row groups.
func TestEpisodeRowsContiguous(t *testing.T) {
	forEachFixture(t, testEpisodeRowsContiguous)
}

func testEpisodeRowsContiguous(t *testing.T, fx *fixture) {
	db := openDuck(t)
	t.Run("duckdb", func(t *testing.T) {
		st := checkContiguousDuck(t, db, fx.root)
		t.Logf("%d steps files: %d of several episodes, %d of several row groups, %d row groups of several episodes' rows, %d files of one episode over several row groups",
			st.files, st.multiEpisode, st.multiGroup, st.groupsWithSeveral, st.longAlone)
		// A long episode's part of its own is checked where one is
		// recorded on purpose (recorder's TestSessionLayout, and
		// TestCrashLoop's long episodes); this fixture's are short.
		if fx.layout == hive.LayoutSession && (st.multiEpisode == 0 || st.groupsWithSeveral == 0) {
			t.Errorf("the fixture has %d packed files of several episodes and %d row groups of several episodes: nothing to check",
				st.multiEpisode, st.groupsWithSeveral)
		}
	})
	t.Run("arrow-go", func(t *testing.T) {
		for _, rel := range walkFiles(t, filepath.Join(fx.root, "steps")) {
			checkContiguousArrow(t, filepath.Join(fx.root, "steps", rel))
		}
	})
}

// contiguity counts what checkContiguousDuck saw.
type contiguity struct {
	files, multiEpisode, multiGroup int
	// groupsWithSeveral are the row groups that hold several (whole)
	// episodes; longAlone the files of one episode in several row groups
	// (in layout "session", a long episode's part of its own).
	groupsWithSeveral, longAlone int
}

// checkContiguousDuck checks every steps file under root with DuckDB: each
// episode's rows form one run of file rows numbered 0..n-1 by step in
// file order, and every row group holds the rows of one episode or of
// several whole ones.
func checkContiguousDuck(t *testing.T, db *sql.DB, root string) contiguity {
	t.Helper()
	glob := tableGlob(root, "steps")
	steps := "SELECT filename, file_row_number AS r, session_id, env_id, episode_record_id, step FROM " +
		scan(glob, "union_by_name=true", "filename=true", "file_row_number=true")
	// Runs: an episode's rows are contiguous iff they span as many file
	// rows as they are, and in step order iff the k-th of them is step k.
	for _, r := range query(t, db, `WITH s AS (`+steps+`),
		o AS (SELECT *, row_number() OVER (PARTITION BY filename, session_id, env_id, episode_record_id ORDER BY r) - 1 AS k FROM s)
		SELECT filename, episode_record_id, count(*) AS n, max(r) - min(r) + 1 AS span, count(*) FILTER (step <> k) AS out_of_order
		FROM o GROUP BY ALL HAVING span <> n OR out_of_order > 0`) {
		t.Errorf("%s: episode %v has %v rows over %v file rows, %v out of step order", relTo(root, r["filename"]), r["episode_record_id"], r["n"], r["span"], r["out_of_order"])
	}
	// Row groups: their row ranges from parquet_metadata (one row per
	// column chunk), against the episodes' row ranges.
	groups := `SELECT file_name, row_group_id, lo, lo + n AS hi FROM (
			SELECT file_name, row_group_id, n, sum(n) OVER (PARTITION BY file_name ORDER BY row_group_id) - n AS lo
			FROM (SELECT DISTINCT file_name, row_group_id, row_group_num_rows AS n FROM parquet_metadata(` + lit(glob) + `)))`
	episodes := `SELECT filename, session_id, env_id, episode_record_id, min(r) AS lo, max(r) + 1 AS hi FROM (` + steps + `) GROUP BY ALL`
	rows := query(t, db, `WITH g AS (`+groups+`), e AS (`+episodes+`)
		SELECT g.file_name, g.row_group_id, g.lo, g.hi, count(e.episode_record_id) AS episodes,
			count(*) FILTER (e.lo < g.lo OR e.hi > g.hi) AS partial
		FROM g LEFT JOIN e ON e.filename = g.file_name AND e.lo < g.hi AND e.hi > g.lo
		GROUP BY ALL ORDER BY ALL`)
	var st contiguity
	files := map[string]bool{}
	episodesIn := map[string]int64{}
	groupsIn := map[string]int{}
	for _, r := range rows {
		f := r["file_name"].(string)
		files[f] = true
		groupsIn[f]++
		n, partial := asInt64(t, r["episodes"]), asInt64(t, r["partial"])
		episodesIn[f] += n - partial
		where := fmt.Sprintf("%s row group %v (rows %v..%v)", relTo(root, f), r["row_group_id"], r["lo"], r["hi"])
		switch {
		case n == 0:
			t.Errorf("%s: no episode's rows", where)
		case n > 1 && partial > 0:
			t.Errorf("%s: rows of %d episodes, %d of them only in part: a row group straddles episodes", where, n, partial)
		case n > 1:
			st.groupsWithSeveral++
		}
		if r["row_group_id"] == int64(1) {
			st.multiGroup++
		}
	}
	st.files = len(files)
	for f, n := range episodesIn {
		if n > 1 {
			st.multiEpisode++
		}
		if n == 0 && groupsIn[f] > 1 {
			st.longAlone++
		}
	}
	if st.files == 0 {
		t.Fatalf("no steps files under %s", root)
	}
	return st
}

// checkContiguousArrow reads one steps file with arrow-go and checks, in
// file order, that each episode's rows are one run, numbered 0..n-1 by
// step, and that each row group's rows are those of one episode or of
// several whole ones.
func checkContiguousArrow(t *testing.T, path string) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("arrow-go: open %s: %v", path, err)
	}
	var sizes []int64
	for i := 0; i < pf.NumRowGroups(); i++ {
		sizes = append(sizes, pf.MetaData().RowGroup(i).NumRows())
	}
	pf.Close()
	_, rows, kv := readArrow(t, path)
	rid := func(r row) string {
		if v, ok := r["episode_record_id"].(string); ok {
			return v
		}
		return kv["rlrec.episode_record_id"] // layout episode: the partition's
	}
	// Runs of rows of one episode, in file order.
	type run struct {
		rid    string
		lo, hi int
	}
	var runs []run
	seen := map[string]bool{}
	for i, r := range rows {
		id := rid(r)
		if len(runs) == 0 || runs[len(runs)-1].rid != id {
			if seen[id] {
				t.Errorf("arrow-go: %s: rows of episode %q resume at row %d after another episode's", path, id, i)
			}
			seen[id] = true
			runs = append(runs, run{rid: id, lo: i})
		}
		last := &runs[len(runs)-1]
		last.hi = i + 1
		if step, ok := r["step"].(int64); !ok || step != int64(i-last.lo) {
			t.Errorf("arrow-go: %s row %d: step %v, the episode's row %d", path, i, r["step"], i-last.lo)
		}
	}
	var lo int
	for g, n := range sizes {
		hi := lo + int(n)
		var in []string
		partial := false
		for _, ru := range runs {
			if ru.lo < hi && ru.hi > lo {
				in = append(in, ru.rid)
				partial = partial || ru.lo < lo || ru.hi > hi
			}
		}
		if len(in) > 1 && partial {
			t.Errorf("arrow-go: %s row group %d (rows %d..%d) holds rows of episodes %q, not all whole", path, g, lo, hi, in)
		}
		lo = hi
	}
	if lo != len(rows) {
		t.Errorf("arrow-go: %s: row groups of %d rows in all, %d rows read", path, lo, len(rows))
	}
}

// relTo names a file under root for messages.
func relTo(root string, f any) string {
	s, _ := f.(string)
	if r, err := filepath.Rel(root, s); err == nil {
		return r
	}
	return s
}

// TestStepsGlobSharedSpaces records recordings that share their spaces
// (cartpole only: both autoreset modes, two runs sharing a session id, a
// failing one) into a ROOT of each layout and runs the query docs/reading.md
// says must work as it is on such a ROOT, with no union_by_name:
//
//	SELECT * FROM read_parquet('ROOT/steps/**/*.parquet', hive_partitioning=true)
//
// It checks the columns (partition columns and episode_record_id among
// them, typed ones typed) and the rows of every episode against what the
// simulator emitted.
func TestStepsGlobSharedSpaces(t *testing.T) {
	forEachLayout(t, func(t *testing.T, l hive.Layout) {
		cfgs := []sim.Config{
			{SessionID: "shared-next", Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 12, TimeLimit: 30, Seed: 51},
			{SessionID: "shared-disabled", Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 6, MaxEpisodeSteps: 25, Seed: 52},
			{SessionID: "shared-failing", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1000, FailAfterSteps: 40, Seed: 53},
			{SessionID: "local-77", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, TimeLimit: 20, Seed: 54},
			{SessionID: "local-77", Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeSteps: 20, Seed: 55},
		}
		for i := range cfgs {
			cfgs[i].Clock = sim.StepClock(epoch.Add(time.Duration(i)*time.Minute), time.Millisecond)
		}
		root := filepath.Join(t.TempDir(), "root")
		sessions, _, err := record(context.Background(), root, cfgs, layoutOptions(l)...)
		if err != nil {
			t.Fatalf("record: %v", err)
		}
		db := openDuck(t)
		src := "read_parquet(" + lit(filepath.Join(root, "steps", "**", "*.parquet")) + ", hive_partitioning=true)"
		types := map[string]string{}
		var cols []string
		for _, r := range query(t, db, "DESCRIBE SELECT * FROM "+src) {
			types[r["column_name"].(string)] = r["column_type"].(string)
			cols = append(cols, r["column_name"].(string))
		}
		for col, want := range map[string]string{
			"session_id": "VARCHAR", "env_id": "VARCHAR", "episode_record_id": "VARCHAR", "step": "BIGINT",
			"observation": "FLOAT[]", "action": "BIGINT", "observation_blob": "BLOB",
		} {
			checkEq(t, "type of "+col, types[col], want)
		}
		if len(cols) != len(stepsFixedColumns)+2+schema.NumV3StepsColumns+3 {
			t.Errorf("columns %v: want the %d fixed ones, observation, action, schema version 3's %d and the 3 partition or key columns", cols, len(stepsFixedColumns), schema.NumV3StepsColumns)
		}
		got := map[episodeKey]int64{}
		for _, r := range query(t, db, "SELECT session_id, env_id, episode_record_id, count(*) AS n, count(*) FILTER (observation IS NULL OR action IS NULL) AS nulls FROM "+src+" GROUP BY ALL") {
			k := episodeKeyOf(r)
			got[k] = asInt64(t, r["n"])
			checkEq(t, k.String()+" rows without typed values", r["nulls"], int64(0))
		}
		var want, withSteps int
		for rec, s := range sessions {
			for rid, e := range s.episodes {
				if e.actions == 0 {
					continue
				}
				withSteps++
				want += int(e.actions)
				checkEq(t, episodeKey{rec, rid}.String()+" rows", got[episodeKey{rec, rid}], e.actions)
			}
		}
		if len(got) != withSteps {
			t.Errorf("the glob read %d episodes, the simulator gave %d steps", len(got), withSteps)
		}
		all := query(t, db, "SELECT count(*) AS n, count(DISTINCT (session_id, env_id)) AS recs, sum(action) AS actions FROM "+src)
		checkEq(t, "rows", all[0]["n"], int64(want))
		checkEq(t, "recordings", all[0]["recs"], int64(len(sessions)))
		if all[0]["actions"] == nil {
			t.Errorf("sum(action) over the glob is null")
		}
		checkStepsFiles(t, db, root)
		st := checkContiguousDuck(t, db, root)
		if l == hive.LayoutSession && st.files > 2*len(sessions) {
			t.Errorf("layout session: %d steps files for %d recordings of short episodes", st.files, len(sessions))
		}
	})
}

// TestLayoutsAgree compares the two fixture ROOTs, recorded from the same
// reproducible sessions: the steps and episodes tables hold the same rows
// (but for the recording times and the file names) in either layout.
func TestLayoutsAgree(t *testing.T) {
	ep, se := getFixture(t, hive.LayoutEpisode), getFixture(t, hive.LayoutSession)
	db := openDuck(t)
	for _, tc := range []struct {
		table string
		cols  []string
	}{
		{"steps", []string{"session_id", "env_id", "episode_record_id", "episode_id", "episode_index", "env_index", "step", "session_step",
			"observation_blob", "action_blob", "reward", "is_first", "is_last", "terminated", "truncated"}},
		{"episodes", []string{"session_id", "env_id", "episode_record_id", "episode_id", "episode_index", "env_index", "status",
			"step_count", "cumulative_reward", "steps_recorded", "reward_sum", "terminated", "truncated", "success", "final_info", "final_observation_blob"}},
		{"sessions", []string{"session_id", "env_id", "status", "reason", "total_steps", "total_episodes", "episodes_recorded", "steps_recorded", "dropped_steps", "problems", "problem_summary"}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			sel := func(root string) string {
				return "SELECT " + strings.Join(slices.Collect(func(yield func(string) bool) {
					for _, c := range tc.cols {
						if !yield(ident(c)) {
							return
						}
					}
				}), ", ") + " FROM " + scan(tableGlob(root, tc.table), "union_by_name=true")
			}
			for _, d := range []struct{ name, a, b string }{{"episode but not session", ep.root, se.root}, {"session but not episode", se.root, ep.root}} {
				rows := query(t, db, "SELECT count(*) AS n FROM ("+sel(d.a)+" EXCEPT ALL "+sel(d.b)+")")
				checkEq(t, "rows in layout "+d.name, rows[0]["n"], int64(0))
			}
			n := query(t, db, "SELECT count(*) AS n FROM ("+sel(ep.root)+")")
			if asInt64(t, n[0]["n"]) == 0 {
				t.Errorf("no rows to compare")
			}
		})
	}
}

// TestPackedRowGroupBound records, in layout "session" with row groups of
// 7 rows, single-lane cartpole episodes of 8 to 30 steps: every packed
// file's first episode is longer than a row group, so its rows fill one
// before the file has seen an episode's end. No row group may hold the
// tail of one episode and rows of the next (docs/format/layout.md).
func TestPackedRowGroupBound(t *testing.T) {
	cfg := sim.Config{SessionID: "row-group-bound", Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep,
		MaxEpisodes: 4, TimeLimit: 30, Seed: 61, Clock: sim.StepClock(epoch, time.Millisecond)}
	root := filepath.Join(t.TempDir(), "root")
	sessions, _, err := record(context.Background(), root, []sim.Config{cfg}, append(layoutOptions(hive.LayoutSession), recorder.WithRowGroupRows(7))...)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	for _, s := range sessions {
		for _, rid := range s.order {
			t.Logf("%s: %d steps", rid, s.episodes[rid].actions)
		}
	}
	db := openDuck(t)
	st := checkContiguousDuck(t, db, root)
	if st.multiEpisode == 0 {
		t.Errorf("no packed file of several episodes")
	}
	for _, rel := range walkFiles(t, filepath.Join(root, "steps")) {
		checkContiguousArrow(t, filepath.Join(root, "steps", rel))
	}
	checkStepsFiles(t, db, root)
}
