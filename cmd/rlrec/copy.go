package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/rlrec/rlrec/dataset"
	"path"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/rlrec/rlrec/curate"
	"github.com/rlrec/rlrec/curate/where"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder"
)

// copyOptions are the copy command's flags.
type copyOptions struct {
	published bool
	session   string
	env       string
	where     string
	layout    layoutValue
	split     string
	seed      uint64
	seedSet   bool
	logDir    string
}

var copyFlags copyOptions

var cmdCopy = &Command{
	Name:      "copy",
	UsageLine: "copy SRC DST [--session ID] [--env ENV] [--where FILTER] [--layout episode|session] [--split NAME=F,... [--seed N]] [--published] [--log-dir DIR]",
	Short:     "build a dataset: copy selected episodes into a new ROOT",
	Long: `Copy builds a new ROOT, DST, from the recordings of the ROOT SRC: all of
them, or those of one session id (--session, and --env for one run of it),
and of those the episodes that --where selects, in the steps layout --layout
(default: SRC's). Each recording is replayed as its event stream through a
recorder, so DST is a ROOT like any other and 'rlrec verify DST' passes on
it. A copy without --where and --split holds tables equal to SRC's (only
the episodes column steps_file, and where episode_record_id lives, follow
the layout). DST must be new or an empty directory. On a terminal the
copy shows the steps copied so far; it ends with a summary line on
standard error.

SRC and DST may be s3://bucket/prefix ROOTs. A DST in a bucket must hold
no table yet; its log and lock are in --log-dir (DIR/NAME for split NAME),
by default one directory per ROOT URL under the user's cache directory.

--where FILTER selects episodes by their episodes-table columns, in a small
SQL-like language: comparisons of a column with a literal (= != <> < <= > >=),
IS [NOT] NULL, [NOT] IN (...), a bool column alone, joined by AND, OR and
NOT, with parentheses. Strings are in 'single quotes', times too
('2026-03-01T12:00:00Z'); a comparison with a null value is never true, as
in SQL. The columns: session_id, env_id, episode_record_id, episode_id,
episode_index, env_index, env_component_id, model_component_id,
started_from_auto_reset, status, step_count, cumulative_reward,
steps_recorded, reward_sum, terminated, truncated, success, duration_ms,
started_at, ended_at, final_info, steps_file. Recordings with no selected
episode are left out; the sessions row of a filtered recording counts the
steps of the episodes left out as dropped steps.

--split train=0.9,val=0.1 splits the selected episodes: each split is a ROOT
of its own, DST/train and DST/val. An episode's split depends only on --seed
(default 1) and its session id, env id and episode record id (a SHA-256;
see docs/datasets.md), so it never changes when more is recorded.

Example:

  rlrec copy rlrec-demo successful \
      --where "status = 'completed' AND success = true AND step_count > 10"
  rlrec copy rlrec-demo cartpole --env cartpole --layout session
  rlrec copy successful splits --split train=0.9,val=0.1 --seed 7
  rlrec verify splits/train`,
	SetFlags: func(fs *flag.FlagSet) {
		copyFlags = copyOptions{}
		fs.StringVar(&copyFlags.session, "session", "", "copy the recordings of session `ID` only")
		fs.StringVar(&copyFlags.env, "env", "", "copy the recordings of `ENV` only: an env id, component id or name (cartpole), of every session or of --session's")
		publishedFlag(fs, &copyFlags.published)
		logDirFlag(fs, &copyFlags.logDir)
		fs.StringVar(&copyFlags.where, "where", "", "copy the episodes that `FILTER` selects (see above)")
		fs.Var(&copyFlags.layout, "layout", "steps layout of DST: episode (a partition per episode) or session (episodes packed per recording); default: SRC's")
		fs.StringVar(&copyFlags.split, "split", "", "split the episodes into ROOTs DST/NAME by `FRACTIONS` such as train=0.9,val=0.1")
		copyFlags.seed = 1
		fs.Func("seed", "the seed `N` of --split (default 1, as demo's and simulate's)", func(s string) error {
			var v uint64
			if _, err := fmt.Sscan(s, &v); err != nil {
				return fmt.Errorf("want a non-negative integer")
			}
			copyFlags.seed, copyFlags.seedSet = v, true
			return nil
		})
	},
	Run: runCopy,
}

func runCopy(ctx context.Context, env *Env, args []string) error {
	f := copyFlags
	if len(args) != 2 {
		return usagef("want SRC and DST, got %d arguments", len(args))
	}
	src, dst := args[0], args[1]
	if f.seedSet && f.split == "" {
		return usagef("--seed needs --split")
	}
	opts := []curate.Option{curate.WithSession(f.session), curate.WithLayout(f.layout.l), curate.WithSeed(f.seed),
		curate.WithRecorderOptions(recorder.WithLogger(env.Logger))}
	if store.IsURL(dst) {
		// A bucket's ROOT: its log in --log-dir (DIR/NAME for split
		// NAME), or the default of its URL.
		opts = append(opts, curate.WithOpen(func(root string, ro ...recorder.Option) (*recorder.Recorder, error) {
			logDir := f.logDir
			if logDir != "" && root != dst {
				logDir = filepath.Join(logDir, path.Base(root))
			}
			return openRecorder(ctx, env.Logger, root, logDir, ro...)
		}))
	} else if f.logDir != "" {
		return usagef("--log-dir is for an s3:// DST; a ROOT directory keeps its log in DST/%s", hive.StateDir)
	}
	var flt *where.Filter
	if f.where != "" {
		var err error
		if flt, err = where.Parse(f.where); err != nil {
			return usagef("--where: %v", err)
		}
		opts = append(opts, curate.WithWhere(flt))
	}
	if f.split != "" {
		s, err := curate.ParseSplits(f.split)
		if err != nil {
			return usagef("--split: %v", err)
		}
		opts = append(opts, curate.WithSplits(s))
	}
	if err := checkRoot(src); err != nil {
		return err
	}
	if err := checkRecovered(src, f.published); err != nil {
		return err
	}
	if f.env != "" {
		// --env may be a component name that several recordings run:
		// copy takes every recording it selects.
		d, err := dataset.Open(src)
		if err != nil {
			return err
		}
		recs, err := selectRecordings(d, selectBy(f.session, f.env))
		d.Close()
		if err != nil {
			return err
		}
		opts = append(opts, curate.WithSession(""), curate.WithRecordings(recs...))
	}
	// Progress on a terminal, by the steps (rows) handed to DST's
	// recorders as the copy goes, not by recordings: one long recording
	// is most of the work of many a copy.
	var bar *progressbar.ProgressBar
	if env.IsTerminal {
		opts = append(opts, curate.WithStepsProgress(func(done, total int64) {
			if bar == nil {
				bar = countProgress(env, int(total), "copying "+src, "steps")
			}
			_ = bar.Set64(done)
		}))
	}
	start := time.Now()
	rep, err := curate.Copy(ctx, src, dst, opts...)
	if bar != nil {
		if err != nil {
			// The error starts on a clean line, and the bar stays where
			// the copy stopped.
			_ = bar.Clear()
			_ = bar.Exit()
		} else {
			_ = bar.Finish()
		}
	}
	if err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(env.Stderr, "rlrec copy: note: %s\n", n)
	}
	for _, t := range rep.Targets {
		what := ""
		if t.Split != "" {
			what = " (split " + t.Split + ")"
		}
		fmt.Fprintf(env.Stdout, "Copied %s (%s) of %s into %s%s, layout %s.\n",
			count(t.Episodes, "episode"), count(t.Steps, "step"), count(t.Recordings, "recording"), t.Root, what, rep.Layout)
	}
	if f.where != "" {
		fmt.Fprintf(env.Stdout, "Filter: %s\n", flt)
	}
	if len(rep.Targets) == 1 {
		fmt.Fprintf(env.Stdout, "Check it with: rlrec verify %s\n", rep.Targets[0].Root)
	} else {
		fmt.Fprintf(env.Stdout, "Each split is a ROOT of its own: rlrec verify %s\n", rep.Targets[0].Root)
	}
	var steps, episodes, recordings int64
	for _, t := range rep.Targets {
		steps += t.Steps
		episodes += t.Episodes
		recordings += t.Recordings
	}
	took := time.Since(start)
	fmt.Fprintf(env.Stderr, "copy: %s (%s, %s) from %s into %s in %.1fs, %s/s\n", count(steps, "step"), count(episodes, "episode"),
		count(recordings, "recording"), src, dst, took.Seconds(), count(int64(float64(steps)/max(took.Seconds(), 1e-3)), "step"))
	return nil
}
