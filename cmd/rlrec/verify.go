package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/rlrec/rlrec/verify"
)

// verifyOptions are the verify command's flags.
type verifyOptions struct {
	maxProblems int
}

var verifyFlags verifyOptions

// verifyProgressBytes is the ROOT size from which a terminal gets a
// progress bar.
const verifyProgressBytes = 64 << 20

var cmdVerify = &Command{
	Name:      "verify",
	UsageLine: "verify [--max-problems N] ROOT",
	Short:     "check a recorded ROOT end to end",
	Long: `Verify reads everything under ROOT and checks it: every Parquet file opens
and reads, its schema version is known, its metadata names the partition it
is in, blobs decode against the stored spaces, typed columns equal the
decoded blobs, steps are consecutive from 0 with one is_first and at most
one is_last, episode rows agree with their steps and session rows with their
episodes, no temp or unknown files lie under the tables, and the recorder's
log under _rlrec/ is empty (records there mean the ROOT needs
'rlrec recover ROOT'). It never writes to ROOT.

Each problem is printed with its file, row and what to do, then a summary.
The exit status is 1 when any problem was found, 0 otherwise.

Example:

  rlrec verify rlrec-demo
  rlrec verify --max-problems 5 /data/run-42 || rlrec recover /data/run-42`,
	SetFlags: func(fs *flag.FlagSet) {
		verifyFlags = verifyOptions{}
		fs.IntVar(&verifyFlags.maxProblems, "max-problems", 20, "list at most `N` problems per file; the rest are counted")
	},
	Run: runVerify,
}

func runVerify(ctx context.Context, env *Env, args []string) error {
	if len(args) != 1 {
		return usagef("want one ROOT directory, got %d arguments", len(args))
	}
	if verifyFlags.maxProblems < 1 {
		return usagef("--max-problems %d: want at least 1", verifyFlags.maxProblems)
	}
	root := args[0]
	if err := checkRoot(root); err != nil {
		return err
	}
	opts := verify.Options{MaxProblemsPerFile: verifyFlags.maxProblems}
	var bar *progressbar.ProgressBar
	if env.IsTerminal {
		opts.Progress = func(done, total int64) {
			if bar == nil && total >= verifyProgressBytes {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(env.Stderr), progressbar.OptionShowBytes(true),
					progressbar.OptionSetDescription("verifying "+root), progressbar.OptionClearOnFinish())
			}
			if bar != nil {
				_ = bar.Set64(done)
			}
		}
	}
	rep, err := verify.Root(ctx, root, opts)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		if errors.Is(err, verify.ErrNotRoot) {
			// checkRoot passed, so the ROOT went away or cannot be listed.
			return fmt.Errorf("%s; check the path and its permissions", strings.TrimPrefix(err.Error(), "verify: "))
		}
		return err
	}
	if err := rep.Write(env.Stdout); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if !rep.OK() {
		return fmt.Errorf("%s: %d problems found; see above for each file and what to do", root, len(rep.Problems))
	}
	return nil
}
