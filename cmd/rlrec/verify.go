package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/verify"
)

// verifyOptions are the verify command's flags.
type verifyOptions struct {
	maxProblems int
}

var verifyFlags verifyOptions

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
		return usagef("want one ROOT directory, got %s", count(len(args), "argument"))
	}
	if verifyFlags.maxProblems < 1 {
		return usagef("--max-problems %d: want at least 1", verifyFlags.maxProblems)
	}
	root := args[0]
	if err := checkRoot(root); err != nil {
		return err
	}
	opts := []verify.Option{verify.WithMaxProblemsPerFile(verifyFlags.maxProblems), verify.WithWords(cliWords)}
	// Progress per file on a terminal: the listing reads directories only,
	// so counting the files first costs little beside reading them.
	var bar *progressbar.ProgressBar
	if env.IsTerminal {
		if l, err := hive.List(vfs.OS(), root); err == nil && len(l.Files) > 0 {
			bar = countProgress(env, len(l.Files), "verifying "+root, "files")
			opts = append(opts, verify.WithProgress(func(done, total int64) {
				bar.Describe(fmt.Sprintf("verifying %s (%s of %s)", root, humanBytes(done), humanBytes(total)))
				_ = bar.Add(1)
			}))
		}
	}
	rep, err := verify.Root(ctx, root, opts...)
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
		return fmt.Errorf("%s: %s found; see above for each file and what to do", root, count(len(rep.Problems), "problem"))
	}
	return nil
}
