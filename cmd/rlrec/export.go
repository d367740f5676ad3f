package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/export/lerobot"
)

// exportOptions are the export command's flags.
type exportOptions struct {
	published  bool
	format     string
	out        string
	session    string
	env        string
	fps        int
	incomplete bool
	force      bool
	video      bool
}

var exportFlags exportOptions

var cmdExport = &Command{
	Name:      "export",
	UsageLine: "export ROOT --format lerobot -o DIR [--session ID] [--env ENV] [--fps N] [--incomplete] [--video] [--force] [--published]",
	Short:     "write recordings as a LeRobot v3.0 dataset",
	Long: `Export writes the recordings of ROOT (all of them, or those of --session,
narrowed by --env) as a LeRobot dataset in the v3.0 layout into DIR, which
must not exist or be empty (--force replaces it once the new export is
complete):

  meta/info.json                            features, counts, fps, paths
  meta/stats.json                           min, max, mean, std, count, q01..q99
  meta/tasks.parquet                        task_index, task
  meta/episodes/chunk-000/file-000.parquet  one row per episode, with stats/*
  data/chunk-NNN/file-NNN.parquet           one row per frame, 100 MiB a file

A frame is a recorded step with both an observation and an action. The
float leaves of the observation (and integer leaves whose values a float32
holds exactly) are concatenated into observation.state, those of the
action into action; other integer leaves are kept exact as features of
their own; uint8 Box(H,W,3) or Box(H,W,1) observation leaves are images
observation.images.<leaf> (PNG bytes in the data file). The observation's
first Text leaf (an instruction) is the frame's task; without one the task
is the env component id. With --video, RGB camera images are encoded as MP4
videos (H.264, by ffmpeg, which must be installed: apt-get install ffmpeg)
under videos/observation.images.<leaf>/chunk-NNN/file-NNN.mp4, declared
as LeRobot declares video features; otherwise they are PNG images in the
data files.

Only completed episodes are exported unless --incomplete is given. fps is
--fps, or else the median interval between the recorded step times; a
recording whose times the recorder stamped (sessions clock "recorder")
needs --fps, and so do times that give a rate no recorded env has: above
1,000 fps (times that measure how fast a loop ran, not the env), or too
irregular to call a rate (fewer than 75% of the intervals within a factor
1.5 of their median). A simulated run's times advance by its env's
control period, so it exports at that rate (cartpole 50 fps, pick-place
10 fps). timestamp is frame_index / fps.
The exported recordings must share their observation and action spaces:
--env NAME selects every recording of one env.

Example:

  rlrec export rlrec-demo --format lerobot -o pp-lerobot --env pick-place
  python -c "from lerobot.datasets.lerobot_dataset import LeRobotDataset as D;
      print(D('local/pick-place', root='pp-lerobot')[0].keys())"`,
	SetFlags: func(fs *flag.FlagSet) {
		exportFlags = exportOptions{}
		fs.StringVar(&exportFlags.format, "format", "", "the dataset `FORMAT` to write: lerobot")
		outFlag(fs, &exportFlags.out, "the output `DIR` (new or empty)")
		fs.StringVar(&exportFlags.session, "session", "", "the recordings of session `ID` only")
		fs.StringVar(&exportFlags.env, "env", "", "the recordings of `ENV` only: an env id, component id or name (cartpole), of every session or of --session's")
		fs.BoolVar(&exportFlags.incomplete, "incomplete", false, "also export episodes that did not complete")
		fs.IntVar(&exportFlags.fps, "fps", 0, "the frame rate, `N` frames per second (default: from the recorded step times)")
		fs.BoolVar(&exportFlags.force, "force", false, "replace DIR when it exists and is not empty")
		publishedFlag(fs, &exportFlags.published)
		fs.BoolVar(&exportFlags.video, "video", false, "encode RGB camera images as MP4 videos with ffmpeg")
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
	if f.fps < 0 {
		return usagef("--fps %d: want a positive whole number", f.fps)
	}
	root := args[0]
	d, recs, err := openRecordings(root, f.session, f.env, f.published)
	if err != nil {
		return err
	}
	defer d.Close()
	bar := countProgress(env, 0, "exporting", "episodes")
	opts := []lerobot.Option{lerobot.WithFPS(f.fps), lerobot.WithIncomplete(f.incomplete), lerobot.WithReplace(f.force), lerobot.WithVideo(f.video)}
	if bar != nil {
		opts = append(opts, lerobot.WithProgress(func(p lerobot.Progress) {
			bar.ChangeMax(p.TotalEpisodes)
			bar.Set(p.Episodes)
		}))
	}
	sum, err := lerobot.Export(ctx, d, recs, f.out, opts...)
	if bar != nil {
		bar.Finish()
	}
	switch {
	case errors.Is(err, lerobot.ErrExists):
		return fmt.Errorf("%s exists and is not empty: export into a new directory, or give --force to replace it", f.out)
	case errors.Is(err, lerobot.ErrTimesUnknown):
		return fmt.Errorf("%w: give it with --fps N", err)
	case errors.Is(err, lerobot.ErrFFmpeg):
		return fmt.Errorf("%w; --video needs ffmpeg (Debian: apt-get install ffmpeg), or export without --video to store images as PNG", err)
	case errors.Is(err, lerobot.ErrSpaces):
		return fmt.Errorf("%w; %s", err, exportSpacesHint(d, recs))
	case err != nil:
		return err
	}
	fmt.Fprintf(env.Stdout, "Wrote a LeRobot %s dataset to %s: %s, %s, %s, %d fps, %s.\n",
		lerobot.CodebaseVersion, f.out, count(sum.Episodes, "episode"), count(sum.Frames, "frame"),
		count(sum.Tasks, "task"), sum.FPS, count(sum.DataFiles, "data file"))
	if sum.Skipped > 0 {
		fmt.Fprintf(env.Stdout, "Skipped %s with no observation or no action.\n", count(sum.Skipped, "step"))
	}
	if sum.Incomplete > 0 {
		fmt.Fprintf(env.Stdout, "Left out %s that did not complete (--incomplete exports them).\n", count(sum.Incomplete, "episode"))
	}
	fmt.Fprintf(env.Stderr, "export: %s, %s into %s (recorded times within %v of frame_index / fps)\n",
		count(sum.Episodes, "episode"), count(sum.Frames, "frame"), f.out, sum.MaxDrift)
	return nil
}

// exportSpacesHint says how to export recordings of different spaces:
// one env at a time (--env NAME takes every recording of that env) when
// the recordings run several envs, else one recording at a time.
func exportSpacesHint(d *dataset.Dataset, recs []dataset.Recording) string {
	n := map[string]int{}
	var names []string
	for _, r := range recs {
		c := componentName(envComponent(d, r))
		if n[c] == 0 {
			names = append(names, c)
		}
		n[c]++
	}
	if len(names) > 1 && !slices.Contains(names, "") {
		slices.Sort(names)
		opts := make([]string, len(names))
		for i, c := range names {
			opts[i] = fmt.Sprintf("--env %s (%s)", shellWord(c), count(n[c], "recording"))
		}
		return "a LeRobot dataset holds one observation and action space: export one env at a time, " + strings.Join(opts, " or ")
	}
	return "a LeRobot dataset holds one observation and action space: export one recording at a time (--session ID --env ENV-ID; 'rlrec inspect ROOT' lists them)"
}
