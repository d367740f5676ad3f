package interop

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/curate"
	"github.com/rlrec/rlrec/curate/where"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/stats"
	"github.com/rlrec/rlrec/verify"
)

// columnsOf lists the columns of a query's result, in order.
func columnsOf(t *testing.T, db *sql.DB, from string) []string {
	t.Helper()
	var cols []string
	for _, r := range query(t, db, "DESCRIBE SELECT * FROM "+from) {
		cols = append(cols, r["column_name"].(string))
	}
	return cols
}

// exceptBoth checks that two relations hold the same rows, duplicates
// counted: a EXCEPT ALL b and b EXCEPT ALL a are both empty, over the
// columns of a by name (minus skip), so that column order does not matter.
func exceptBoth(t *testing.T, db *sql.DB, what, a, b string, skip ...string) int64 {
	t.Helper()
	var cols []string
	for _, c := range columnsOf(t, db, a) {
		if !contains(skip, c) {
			cols = append(cols, ident(c))
		}
	}
	list := strings.Join(cols, ", ")
	for _, dir := range [][2]string{{a, b}, {b, a}} {
		q := fmt.Sprintf("SELECT count(*) AS n FROM (SELECT %s FROM %s EXCEPT ALL SELECT %s FROM %s)", list, dir[0], list, dir[1])
		if n := query(t, db, q)[0]["n"].(int64); n != 0 {
			t.Errorf("%s: %d rows of %s are not in %s", what, n, dir[0], dir[1])
			for _, r := range query(t, db, fmt.Sprintf("SELECT %s FROM %s EXCEPT ALL SELECT %s FROM %s LIMIT 3", list, dir[0], list, dir[1])) {
				t.Logf("%s: not in %s: %v", what, dir[1], r)
			}
		}
	}
	return query(t, db, "SELECT count(*) AS n FROM "+a)[0]["n"].(int64)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustVerify(t *testing.T, root string) {
	t.Helper()
	rep, err := verify.Root(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("verify %s: %s %s row %d: %s", root, p.Check, p.Path, p.Row, p.Message)
	}
}

// TestCopyRoundTripDuckDB copies the fixture (layout episode) into layout
// session and that copy back into layout episode, and checks with DuckDB
// that every table of each copy equals the fixture's (EXCEPT ALL both
// ways): the steps of each recording (its typed columns are its own), and
// episodes without steps_file, which names the layout's file.
func TestCopyRoundTripDuckDB(t *testing.T) {
	fx := getFixture(t, hive.LayoutEpisode)
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	episode := filepath.Join(dir, "episode")
	ctx := context.Background()
	if _, err := curate.Copy(ctx, fx.root, session, curate.WithLayout(hive.LayoutSession)); err != nil {
		t.Fatal(err)
	}
	if _, err := curate.Copy(ctx, session, episode, curate.WithLayout(hive.LayoutEpisode)); err != nil {
		t.Fatal(err)
	}
	db := openDuck(t)
	for _, copyRoot := range []string{session, episode} {
		mustVerify(t, copyRoot)
		name := filepath.Base(copyRoot)
		rows := map[string]int64{}
		for _, table := range []string{schema.TableEpisodes, schema.TableSessions, schema.TableLogs, schema.TableTelemetry} {
			skip := []string{}
			if table == schema.TableEpisodes {
				skip = append(skip, schema.ColStepsFile)
			}
			rows[table] = exceptBoth(t, db, name+" "+table,
				scan(tableGlob(fx.root, table), "union_by_name=true"), scan(tableGlob(copyRoot, table), "union_by_name=true"), skip...)
		}
		for _, rec := range sortedRecordings(fx.sessions) {
			rows[schema.TableSteps] += exceptBoth(t, db, fmt.Sprintf("%s steps of %s", name, rec),
				scan(recordingGlob(fx.root, schema.TableSteps, rec)), scan(recordingGlob(copyRoot, schema.TableSteps, rec)))
		}
		for table, n := range rows {
			if n == 0 {
				t.Errorf("%s: no %s rows compared", name, table)
			}
		}
		t.Logf("%s: rows compared %v", name, rows)
	}
	// The steps_file column names files of the copy's own layout.
	for _, r := range query(t, db, "SELECT steps_file FROM "+scan(tableGlob(session, schema.TableEpisodes))+" WHERE steps_file IS NOT NULL") {
		if strings.Contains(r["steps_file"].(string), "episode_record_id=") {
			t.Fatalf("layout session names %s", r["steps_file"])
		}
	}
}

// TestCopyWhereDuckDB copies with filters that are SQL too, and checks
// that the episodes copied are those DuckDB's WHERE selects from the
// fixture, and that their steps are the fixture's.
func TestCopyWhereDuckDB(t *testing.T) {
	fx := getFixture(t, hive.LayoutEpisode)
	db := openDuck(t)
	for i, filter := range []string{
		"status = 'completed' AND success = true AND step_count > 10",
		"status = 'completed' AND NOT truncated OR env_index = 1",
		"success IS NULL OR (cumulative_reward >= 5.5 AND episode_index IN (0, 2, 4))",
		"NOT (success = true) AND duration_ms < 100",
		"started_at >= '2020-01-01 14:00:00' AND ended_at < '2100-03-01T17:00:00Z' AND env_component_id <> 'x' AND episode_index < 3",
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			f, err := where.Parse(filter)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "dst")
			rep, err := curate.Copy(context.Background(), fx.root, dst, curate.WithWhere(f), curate.WithLayout(hive.LayoutSession))
			if err != nil {
				t.Fatal(err)
			}
			mustVerify(t, dst)
			src := fmt.Sprintf("(SELECT * EXCLUDE (steps_file) FROM %s WHERE %s)", scan(tableGlob(fx.root, schema.TableEpisodes)), filter)
			cp := fmt.Sprintf("(SELECT * EXCLUDE (steps_file) FROM %s)", scan(tableGlob(dst, schema.TableEpisodes)))
			n := exceptBoth(t, db, "episodes", src, cp)
			if n == 0 || n != rep.Targets[0].Episodes {
				t.Errorf("DuckDB selects %d episodes, the copy reports %d; the test wants some", n, rep.Targets[0].Episodes)
			}
			d, err := dataset.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range d.Recordings() {
				in := fmt.Sprintf("(SELECT * FROM %s WHERE episode_record_id IN (SELECT episode_record_id FROM %s WHERE (%s) AND session_id = %s AND env_id = %s))",
					scan(recordingGlob(fx.root, schema.TableSteps, rec)), scan(tableGlob(fx.root, schema.TableEpisodes)), filter, lit(rec.SessionID), lit(rec.EnvID))
				exceptBoth(t, db, "steps of "+rec.String(), in, scan(recordingGlob(dst, schema.TableSteps, rec)))
			}
		})
	}
}

// TestStatsDuckDB checks rlrec's statistics of every recording of the
// fixture, and of the overall groups, against DuckDB's aggregates over
// the typed columns: count, avg, stddev_pop (population), min, max and
// quantile_disc, each element of a list column by its subscript.
func TestStatsDuckDB(t *testing.T) {
	fx := getFixture(t, hive.LayoutEpisode)
	d, err := dataset.Open(fx.root)
	if err != nil {
		t.Fatal(err)
	}
	res, err := stats.Compute(context.Background(), d, d.Recordings())
	if err != nil {
		t.Fatal(err)
	}
	db := openDuck(t)
	checked := 0
	var meanDiff, stdDiff float64 // the largest relative differences seen
	compare := func(what string, recs []dataset.Recording, feats []stats.Feature) {
		globs := make([]string, len(recs))
		for i, r := range recs {
			globs[i] = lit(recordingGlob(fx.root, schema.TableSteps, r))
		}
		from := "read_parquet([" + strings.Join(globs, ", ") + "], hive_partitioning=true)"
		for _, f := range feats {
			col := ident(f.Name)
			var q string
			aggs := "count(v) AS n, avg(v) AS mean, stddev_pop(v) AS std, min(v) AS lo, max(v) AS hi, " +
				"quantile_disc(v, [0.01, 0.25, 0.5, 0.75, 0.99]) AS q"
			if len(f.Shape) == 0 {
				q = fmt.Sprintf("SELECT 1 AS i, %s FROM (SELECT %s::DOUBLE AS v FROM %s)", aggs, col, from)
			} else {
				q = fmt.Sprintf("SELECT i, %s FROM (SELECT generate_subscripts(%s, 1) AS i, unnest(%s)::DOUBLE AS v FROM %s) GROUP BY i ORDER BY i", aggs, col, col, from)
			}
			rows := query(t, db, q)
			if len(rows) != len(f.Elements) {
				t.Errorf("%s %s: DuckDB gives %d elements, rlrec %d", what, f.Name, len(rows), len(f.Elements))
				continue
			}
			for k, r := range rows {
				s := f.Elements[k]
				el := fmt.Sprintf("%s %s%s", what, f.Name, stats.Index(f.Shape, k))
				if r["n"].(int64) != s.Count {
					t.Errorf("%s: count %d, DuckDB %d", el, s.Count, r["n"])
					continue
				}
				checked++
				if s.Count == 0 {
					continue
				}
				meanDiff = max(meanDiff, near(t, el+" mean", s.Mean, r["mean"], 1e-9))
				stdDiff = max(stdDiff, near(t, el+" std", s.Std, r["std"], 1e-6))
				near(t, el+" min", s.Min, r["lo"], 0)
				near(t, el+" max", s.Max, r["hi"], 0)
				qs := r["q"].([]any)
				for j, name := range stats.QuantileNames {
					near(t, el+" "+name, s.Quantiles[j], qs[j], 0)
				}
			}
		}
	}
	for _, r := range res.Recordings {
		compare(r.Recording.String(), []dataset.Recording{r.Recording}, r.Features)
	}
	groups := 0
	for _, g := range res.Overall {
		if len(g.Recordings) > 1 {
			groups++
		}
		compare("overall "+g.Spaces, g.Recordings, g.Features)
	}
	if groups == 0 {
		t.Error("no overall group merges recordings; the fixture should have some")
	}
	t.Logf("%d elements checked against DuckDB, %d groups; largest relative difference of a mean %.3g, of a std %.3g",
		checked, len(res.Overall), meanDiff, stdDiff)

	// The table rlrec stats -o writes reads in DuckDB with its columns.
	file := filepath.Join(t.TempDir(), "stats.parquet")
	if err := writeStats(file, res); err != nil {
		t.Fatal(err)
	}
	got := query(t, db, "SELECT count(*)::BIGINT AS n, count_if(scope = 'overall')::BIGINT AS o FROM "+lit(file))[0]
	if got["n"].(int64) != int64(len(res.Rows())) || got["o"].(int64) == 0 {
		t.Errorf("DuckDB reads %v from the stats file, want %d rows", got, len(res.Rows()))
	}
	r := query(t, db, fmt.Sprintf("SELECT mean, p50 FROM %s WHERE scope = 'recording' AND session_id = 'cartpole-next' AND feature = 'observation' AND element = 2", lit(file)))
	if len(r) != 1 {
		t.Fatalf("stats file: %d rows for cartpole-next observation[2]", len(r))
	}
}

func writeStats(path string, res *stats.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := res.WriteParquet(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// near checks got against DuckDB's value within a relative tolerance (0:
// equal) and returns their relative difference.
func near(t *testing.T, what string, got float64, want any, tol float64) float64 {
	t.Helper()
	w, ok := want.(float64)
	if !ok {
		t.Errorf("%s: DuckDB gives %T %v", what, want, want)
		return 0
	}
	if math.IsNaN(got) || math.IsNaN(w) {
		if !(math.IsNaN(got) && math.IsNaN(w)) {
			t.Errorf("%s: %v, DuckDB %v", what, got, w)
		}
		return 0
	}
	if got == w {
		return 0
	}
	diff := math.Abs(got-w) / math.Max(1, math.Max(math.Abs(got), math.Abs(w)))
	if diff > tol || math.IsInf(got, 0) || math.IsInf(w, 0) {
		t.Errorf("%s: %v, DuckDB %v", what, got, w)
	}
	return diff
}
