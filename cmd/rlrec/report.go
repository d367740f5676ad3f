package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/report"
)

// reportOptions are the report command's flags.
type reportOptions struct {
	session    string
	env        string
	out        string
	frameSide  int
	frameBytes int
	force      bool
	published  bool
}

var reportFlags reportOptions

var cmdReport = &Command{
	Name:      "report",
	UsageLine: "report ROOT [--session ID] [--env ENV] -o FILE.html [--force] [--frame-side PX] [--frame-budget MB] [--published]",
	Short:     "write a self-contained HTML report: plots, statistics, problems, camera frames",
	Long: `Report writes one HTML page about the recordings of ROOT (all, the
recordings of session S, or with --env the one of env id R) that opens from
disk in any browser: styles, script, plots (SVG) and camera frames (PNG) are
inline, nothing is fetched.

For each recording it shows:
  - returns and lengths of the completed episodes, in order of completion
    (their ended_at), with a rolling mean; beyond 500 episodes each point
    is a bucket of episodes (band from smallest to largest, line the mean);
  - the success rate over the episodes that reported success, rolling and
    overall;
  - a histogram of the reward of every step and one of the returns;
  - the statistics of every numeric feature (as 'rlrec stats': count, mean,
    std, min, quantiles, max) with a small distribution plot per element
    (at most 16 elements per feature shown);
  - the problems and notes 'rlrec inspect' lists;
  - for each image leaf of the observation (a uint8 Box of shape (H, W, 3)
    or (H, W, 1)): the frames of the first completed episode, the best and
    the worst by return, as a strip of 8 frames and a sequence of up to 32
    frames to play (Play/Pause button and a frame slider, keyboard too).

Its size is bounded: frames larger than --frame-side pixels a side are
shrunk by an integer factor, and the frames of the whole page stay within
--frame-budget MB of PNG; what is left out is said where it would be. A
5,000-episode cartpole recording gives a page of about 60 kB, 200
episodes of 84x84 camera frames one of about 300 kB. The page follows
the system's light or dark scheme, and every control is reachable by the
keyboard.

The file is written whole (a temporary file renamed to FILE); '-o -'
writes standard output.

Example:

  rlrec demo --out demo && rlrec report demo -o demo.html
  rlrec report data --env cartpole -o cartpole.html`,
	SetFlags: func(fs *flag.FlagSet) {
		reportFlags = reportOptions{}
		fs.StringVar(&reportFlags.session, "session", "", "the recordings of session `ID` only")
		fs.StringVar(&reportFlags.env, "env", "", "the recordings of `ENV` only: an env id, component id or name (cartpole), of every session or of --session's")
		outFlag(fs, &reportFlags.out, "write the page to `FILE` (required; - for standard output)")
		forceFlag(fs, &reportFlags.force)
		publishedFlag(fs, &reportFlags.published)
		fs.IntVar(&reportFlags.frameSide, "frame-side", 96, "shrink frames to at most `PX` pixels a side")
		fs.IntVar(&reportFlags.frameBytes, "frame-budget", 3, "at most `MB` MiB of PNG frames in the page")
	},
	Run: runReport,
}

func runReport(ctx context.Context, env *Env, args []string) error {
	f := reportFlags
	if len(args) != 1 {
		return usagef("want one ROOT argument, got %d", len(args))
	}
	if f.out == "" {
		return usagef("-o FILE.html is required (- for standard output)")
	}
	if f.frameSide < 8 || f.frameSide > 4096 {
		return usagef("--frame-side %d: want 8 to 4096 pixels", f.frameSide)
	}
	if f.frameBytes < 1 || f.frameBytes > 1024 {
		return usagef("--frame-budget %d: want 1 to 1024 MiB", f.frameBytes)
	}
	if err := checkNewFile(f.out, f.force); err != nil {
		return err
	}
	d, recs, err := openRecordings(args[0], f.session, f.env, f.published)
	if err != nil {
		return err
	}
	defer d.Close()
	rep, err := report.Build(ctx, d, recs, report.WithFrameSide(f.frameSide), report.WithFrameBytes(f.frameBytes<<20),
		report.WithGenerated(time.Now()), report.WithWords(cliWords))
	if err != nil {
		return err
	}
	if f.out == "-" {
		return rep.WriteHTML(env.Stdout)
	}
	if _, err := writeFileAtomic(vfs.OS(), f.out, func(w io.Writer) (struct{}, error) {
		return struct{}{}, rep.WriteHTML(w)
	}); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Wrote %s: %s, %s of frames.\n", f.out, count(len(recs), "recording"), humanBytes(int64(rep.FrameBytes)))
	return nil
}
