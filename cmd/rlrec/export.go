package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/rlrec/rlrec/export/lerobot"
)

// exportOptions are the export command's flags.
type exportOptions struct {
	format     string
	out        string
	session    string
	env        string
	fps        float64
	incomplete bool
}

var exportFlags exportOptions

var cmdExport = &Command{
	Name:      "export",
	UsageLine: "export ROOT --format lerobot -o DIR [--session S [--env R]] [--fps F] [--incomplete]",
	Short:     "write recordings as a LeRobot v3.0 dataset",
	Long: `Export writes the recordings of ROOT (all of them, or those of --session,
narrowed by --env) as a LeRobot dataset in the v3.0 layout into DIR, which
must not exist or be empty:

  meta/info.json                            features, counts, fps, paths
  meta/stats.json                           mean, std, min, max, count
  meta/tasks.parquet                        task_index, task
  meta/episodes/chunk-000/file-000.parquet  one row per episode
  data/chunk-000/file-000.parquet           one row per frame

A frame is a recorded step with both an observation and an action. Each
observation leaf is a feature observation.<path> (observation.state for a
single-leaf space), each action leaf action.<path> (action for a
single-leaf space): uint8 Box(H,W,3) or Box(H,W,1) leaves are images (PNG
bytes in the data file), other Boxes float32 vectors, Discrete int64. The
observation's first Text leaf (an instruction) is the frame's task; without
one the task is the env component id. Videos are not written.

Only completed episodes are exported unless --incomplete is given.
fps is --fps, or else the median interval between the steps' recorded_at.
The exported recordings must share their observation and action spaces.

Example:

  rlrec export data --format lerobot -o pp-lerobot --session 0190a1b2-...
  python -c "from lerobot.datasets.lerobot_dataset import LeRobotDataset as D;
      print(D('local/pick-place', root='pp-lerobot')[0].keys())"`,
	SetFlags: func(fs *flag.FlagSet) {
		exportFlags = exportOptions{}
		fs.StringVar(&exportFlags.format, "format", "", "the dataset `FORMAT` to write: lerobot")
		fs.StringVar(&exportFlags.out, "o", "", "the output `DIR` (new or empty)")
		fs.StringVar(&exportFlags.session, "session", "", "the recordings of session id `S` only")
		fs.StringVar(&exportFlags.env, "env", "", "with --session, the recording of env id `R` only")
		fs.BoolVar(&exportFlags.incomplete, "incomplete", false, "also export episodes that did not complete")
		fs.Float64Var(&exportFlags.fps, "fps", 0, "frames per second `F` for info.json (default: from the step timestamps)")
	},
	Run: runExport,
}

func runExport(ctx context.Context, env *Env, args []string) error {
	f := exportFlags
	if len(args) != 1 {
		return usagef("want one ROOT argument, got %d", len(args))
	}
	switch f.format {
	case "lerobot":
	case "":
		return usagef("--format is required: lerobot")
	default:
		return usagef("--format %s: unknown format; the one format is lerobot", f.format)
	}
	if f.out == "" || f.out == "-" {
		return usagef("-o DIR is required: the dataset is a directory")
	}
	if f.env != "" && f.session == "" {
		return usagef("--env needs --session")
	}
	if f.fps < 0 {
		return usagef("--fps %v: want a positive number", f.fps)
	}
	root := args[0]
	d, recs, err := openRecordings(root, f.session, f.env)
	if err != nil {
		return err
	}
	defer d.Close()
	sum, err := lerobot.Export(ctx, d, recs, f.out, lerobot.Options{FPS: f.fps, Incomplete: f.incomplete})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Wrote a LeRobot %s dataset to %s: %d episodes, %d frames, %d tasks, %g fps.\n",
		lerobot.CodebaseVersion, f.out, sum.Episodes, sum.Frames, sum.Tasks, sum.FPS)
	if sum.Skipped > 0 {
		fmt.Fprintf(env.Stdout, "Skipped %d steps with no observation or no action.\n", sum.Skipped)
	}
	if sum.Incomplete > 0 {
		fmt.Fprintf(env.Stdout, "Left out %d episodes that did not complete (--incomplete exports them).\n", sum.Incomplete)
	}
	return nil
}
