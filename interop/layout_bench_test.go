package interop

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// BenchmarkStepsScan times DuckDB's
//
//	SELECT count(*) FROM read_parquet('ROOT/steps/**/*.parquet', hive_partitioning=true)
//
// over the steps of 5,000 episodes (cartpole, 16 lanes, the simulator's
// default policy, next-step autoreset, 200-step cap: about 46 steps an
// episode; the lanes' last episodes, left incomplete, add 14), recorded
// once per run into three ROOTs: layout "session" and layout "episode"
// with the default options, and layout "session" with a 2 ms episode
// batch delay (session-rolled: more packed files, as a slower recording of
// the same episodes would write at the default delay); each against the
// same query over the same rows in one file. The one file is written
// by DuckDB from the ROOT's own steps files (COPY ... TO with zstd and the
// recorder's 65,536-row row groups, the file columns only).
//
// Each op runs the six queries once, in an order that rotates from op to
// op, each on a new in-memory DuckDB database (so that no query reads what
// an earlier one cached, or waits on its cleanup) warmed by the same query
// over a one-row file of its own; the files are in the page cache.
// Reported: the median milliseconds of each query over the ops
// (<root>-glob-ms, <root>-one-ms), the ratios glob/one per ROOT (of those
// medians), the steps files each ROOT holds, and the row groups of each
// glob and one file. Run it with
// -benchtime 20x (or more) and -count 5.
func BenchmarkStepsScan(b *testing.B) {
	const episodes = 5000
	ctx := context.Background()
	base := b.TempDir()
	cfg := sim.Config{SessionID: "scan-bench", Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep,
		MaxEpisodes: episodes, TimeLimit: 200, Seed: 1}
	roots := []struct {
		name string
		opts []recorder.Option
	}{
		{"session", []recorder.Option{recorder.WithLayout(hive.LayoutSession)}},
		{"episode", []recorder.Option{recorder.WithLayout(hive.LayoutEpisode)}},
		// A packed file per flush: a recording of the same episodes
		// that took longer would have more files (one per 2 s at the
		// default delay). A 2 ms delay gives more of them here.
		{"session-rolled", []recorder.Option{recorder.WithLayout(hive.LayoutSession), recorder.WithEpisodeBatchDelay(2 * time.Millisecond)}},
	}
	globs := map[string]string{}
	var rows int64
	files := map[string]int{}
	groups := map[string]int64{} // row groups of a glob or file
	var names []string
	for _, rt := range roots {
		l := rt.name
		names = append(names, l+"-glob", l+"-one")
		root := filepath.Join(base, l)
		rec, err := recorder.Open(root, rt.opts...)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sim.Run(ctx, rec, cfg); err != nil {
			b.Fatal(err)
		}
		if err := rec.Close(ctx); err != nil {
			b.Fatal(err)
		}
		files[l] = countParquet(b, filepath.Join(root, "steps"))
		one := filepath.Join(base, l+"-one.parquet")
		db, err := sql.Open("duckdb", "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec("COPY (SELECT * FROM read_parquet(" + lit(tableGlob(root, "steps")) + ", hive_partitioning=false)) TO " +
			lit(one) + " (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 65536)"); err != nil {
			b.Fatal(err)
		}
		for _, src := range []string{tableGlob(root, "steps"), one} {
			out, err := tryQuery(db, "SELECT count(*) AS n FROM (SELECT DISTINCT file_name, row_group_id FROM parquet_metadata("+lit(src)+"))")
			if err != nil {
				b.Fatal(err)
			}
			groups[src] = out[0]["n"].(int64)
		}
		db.Close()
		globs[l+"-glob"] = tableGlob(root, "steps")
		globs[l+"-one"] = one
	}
	// A query over a file of its own warms each new database's Parquet
	// reader, which costs a few ms on its first read_parquet.
	warm := filepath.Join(base, "warm.parquet")
	if db, err := sql.Open("duckdb", ""); err != nil {
		b.Fatal(err)
	} else if _, err := db.Exec("COPY (SELECT 1 AS x) TO " + lit(warm) + " (FORMAT parquet)"); err != nil {
		b.Fatal(err)
	} else {
		db.Close()
	}
	ms := map[string][]float64{}
	for i := 0; b.Loop(); i++ {
		k := i % len(names)
		for _, name := range slices.Concat(names[k:], names[:k]) {
			db, err := sql.Open("duckdb", "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tryQuery(db, "SELECT count(*) FROM "+scan(warm)); err != nil {
				b.Fatal(err)
			}
			q := "SELECT count(*) AS n FROM " + scan(globs[name])
			t0 := time.Now()
			out, err := tryQuery(db, q)
			d := time.Since(t0)
			db.Close()
			if err != nil {
				b.Fatalf("%s: %v", q, err)
			}
			n, ok := out[0]["n"].(int64)
			if !ok {
				b.Fatalf("%s: count %T", q, out[0]["n"])
			}
			if rows == 0 {
				rows = n
			} else if n != rows {
				b.Fatalf("%s: %d rows, another query counted %d", name, n, rows)
			}
			ms[name] = append(ms[name], float64(d)/1e6)
		}
	}
	med := map[string]float64{}
	for _, name := range names {
		v := ms[name]
		slices.Sort(v)
		med[name] = v[len(v)/2]
		b.ReportMetric(med[name], name+"-ms")
	}
	for _, rt := range roots {
		l := rt.name
		b.ReportMetric(med[l+"-glob"]/med[l+"-one"], l+"-glob/one")
		b.ReportMetric(float64(files[l]), l+"-steps-files")
		b.ReportMetric(float64(groups[globs[l+"-glob"]]), l+"-glob-row-groups")
		b.ReportMetric(float64(groups[globs[l+"-one"]]), l+"-one-row-groups")
	}
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(0, "ns/op") // one op runs every query: its time means nothing alone
}

// countParquet counts the .parquet files under dir.
func countParquet(b *testing.B, dir string) int {
	b.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
			n++
		}
		return err
	})
	if err != nil {
		b.Fatal(fmt.Errorf("count the files under %s: %w", dir, err))
	}
	return n
}
