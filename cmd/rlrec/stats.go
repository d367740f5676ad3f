package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/stats"
)

// statsOptions are the stats command's flags.
type statsOptions struct {
	published bool
	force     bool
	session   string
	env       string
	json      bool
	out       string
}

var statsFlags statsOptions

var cmdStats = &Command{
	Name:      "stats",
	UsageLine: "stats ROOT [--session ID] [--env ENV] [--json] [-o FILE.parquet [--force]] [--published]",
	Short:     "per-feature statistics of the steps: the normalisation input",
	Long: `Stats computes statistics of every numeric feature of the steps table:
reward and each observation and action leaf that has a numeric typed column
(not Text, not the binary columns of large leaves such as images), element
by element for vector leaves. For each element: count, mean, std (population,
as DuckDB's stddev_pop and numpy's std), min, max and the quantiles p01, p25,
p50, p75, p99 (exact, as DuckDB's quantile_disc: the smallest value with at
least that share of the values at or below it).

Statistics are given per recording, and overall for each group of
recordings whose observation and action spaces are equal (named by a hash,
"spaces"). --session (and --env) narrows the recordings.

Output: aligned tables, or one JSON object with --json (per feature, one
array per statistic, an element per leaf element). -o FILE.parquet also
writes the statistics as a Parquet table, one row per scope, feature and
element (columns scope, session_id, env_id, spaces, recordings, steps,
feature, leaf, element, index, count, mean, std, min, max, p01, p25, p50,
p75, p99). The file stands apart from the ROOT: statistics are derived,
recomputed whenever the data grows, and a ROOT's files are never rewritten.

Memory: every value of the selected recordings' numeric features (8 bytes
each) while the quantiles are computed.

Example:

  rlrec stats data
  rlrec stats data --env cartpole --json | jq '.overall[0].features'
  rlrec stats data -o stats.parquet
  duckdb -c "SELECT feature, index, mean, std FROM 'stats.parquet'
      WHERE scope = 'overall'"`,
	SetFlags: func(fs *flag.FlagSet) {
		statsFlags = statsOptions{}
		fs.StringVar(&statsFlags.session, "session", "", "the recordings of session `ID` only")
		fs.StringVar(&statsFlags.env, "env", "", "the recordings of `ENV` only: an env id, component id or name (cartpole), of every session or of --session's")
		fs.BoolVar(&statsFlags.json, "json", false, "write JSON instead of tables")
		outFlag(fs, &statsFlags.out, "also write the statistics as a Parquet table to `FILE`")
		forceFlag(fs, &statsFlags.force)
		publishedFlag(fs, &statsFlags.published)
	},
	Run: runStats,
}

func runStats(ctx context.Context, env *Env, args []string) error {
	f := statsFlags
	if len(args) != 1 {
		return usagef("want one ROOT argument, got %d", len(args))
	}
	if f.out == "-" {
		return usagef("-o takes a file name: the Parquet table is binary, and standard output holds the tables or JSON")
	}
	if f.out != "" && !strings.HasSuffix(f.out, ".parquet") {
		return usagef("-o %s: name the file *.parquet (DuckDB's globs and pandas find it by its suffix)", f.out)
	}
	if err := checkNewFile(f.out, f.force); err != nil {
		return err
	}
	root := args[0]
	d, recs, err := openRecordings(root, f.session, f.env, f.published)
	if err != nil {
		return err
	}
	defer d.Close()
	start := time.Now()
	bar := countProgress(env, len(recs), "reading "+root, "recordings")
	res, err := stats.ComputeProgress(ctx, d, recs, func(done, _ int) {
		if bar != nil {
			bar.Set(done)
		}
	})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintf(env.Stderr, "stats: %s of %s in %.1fs\n", count(len(recs), "recording"), root, time.Since(start).Seconds())
	}()
	if f.out != "" {
		if _, err := writeFileAtomic(vfs.OS(), f.out, func(w io.Writer) (struct{}, error) {
			bw := bufio.NewWriterSize(w, 1<<20)
			if err := res.WriteParquet(bw); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, bw.Flush()
		}); err != nil {
			return err
		}
	}
	bw := bufio.NewWriter(env.Stdout)
	if f.json {
		_, err = bw.Write(append(res.AppendJSON(nil), '\n'))
	} else {
		err = res.WriteText(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if f.out != "" && !f.json {
		fmt.Fprintf(env.Stdout, "Wrote %s to %s.\n", count(len(res.Rows()), "row"), f.out)
	}
	return nil
}
