package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/recorder"
)

// recoverOptions are the recover command's flags.
type recoverOptions struct {
	salvage bool
}

var recoverFlags recoverOptions

var cmdRecover = &Command{
	Records:   true,
	Name:      "recover",
	UsageLine: "recover [--salvage] ROOT",
	Short:     "rebuild what a crashed recorder left in ROOT's log",
	Long: `Recover runs the recorder's crash recovery on ROOT explicitly (opening ROOT
with a recorder does the same) and reports what it rebuilt: the log records
replayed, the sessions found (those that had not ended are recorded as
crashed), the episodes written (completed ones as completed, open ones as
incomplete with every step that reached the log), those already durable,
and what was cut from a damaged log.

A torn log tail, as a crash leaves it, is cut without asking: nothing in it
was reported durable. Damage inside a sealed (older) segment is corruption
of data that was durable; recover then stops, and --salvage cuts the log at
the damage instead, losing every record after it.

Example:

  rlrec recover rlrec-data && rlrec verify rlrec-data
  rlrec recover --salvage rlrec-data`,
	SetFlags: func(fs *flag.FlagSet) {
		recoverFlags = recoverOptions{}
		fs.BoolVar(&recoverFlags.salvage, "salvage", false, "cut a log damaged inside a sealed segment at the damage, losing the records after it")
	},
	Run: runRecover,
}

func runRecover(ctx context.Context, env *Env, args []string) error {
	salvage := recoverFlags.salvage
	if len(args) != 1 {
		return usagef("want one ROOT directory, got %s", count(len(args), "argument"))
	}
	root := args[0]
	// Opening a recorder creates ROOT: recover never does.
	if err := checkRoot(root); err != nil {
		return err
	}
	rec, err := openRecorder(root, recorder.WithSalvage(salvage), recorder.WithLogger(env.Logger))
	if err != nil {
		var ce *wal.CorruptionError
		if errors.As(err, &ce) && !salvage {
			return fmt.Errorf("the log is corrupt inside sealed segment %s at offset %d (%v): records there were durable, so recover stops; "+
				"rerun with --salvage to cut the log at the damage: every record after it is lost (their steps, episodes and sessions are not written, "+
				"and episodes with records on both sides are written incomplete)", ce.Segment, ce.Offset, ce.Err)
		}
		return err
	}
	rep := rec.Recovered()
	if err := rec.Close(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return writeRecovery(env.Stdout, root, rep)
}

// writeRecovery prints what a recovery did.
func writeRecovery(w io.Writer, root string, rep recorder.RecoveryReport) error {
	d := rep.Damage
	if rep.Records == 0 && !d.Cut {
		_, err := fmt.Fprintf(w, "%s: the log is empty (the last recorder closed cleanly); nothing to recover\n", root)
		return err
	}
	fmt.Fprintf(w, "%s: recovered from the log of a recorder that did not close\n", root)
	fmt.Fprintf(w, "  log records replayed:  %d\n", rep.Records)
	if rep.Snapshot {
		fmt.Fprintf(w, "  replayed from:         the recorder's last sealed snapshot (%s rebuilt from the log before it)\n", count(int(rep.Rebuilt), "open episode"))
	}
	fmt.Fprintf(w, "  sessions:              %d (%d crashed: they had not ended)\n", rep.Sessions, rep.Crashed)
	fmt.Fprintf(w, "  episodes written:      %d completed, %d incomplete\n", rep.Completed, rep.Incomplete)
	fmt.Fprintf(w, "  episodes skipped:      %d (already durable)\n", rep.Skipped)
	if !d.Cut {
		_, err := fmt.Fprintf(w, "  log damage:            none\n")
		return err
	}
	kind := "torn tail (a crash's unfinished write; nothing in it had been reported durable)"
	if d.Salvaged {
		kind = "corruption in a sealed segment, cut by --salvage"
	}
	fmt.Fprintf(w, "  log damage:            %s\n", kind)
	fmt.Fprintf(w, "    cut at:              %s offset %d (%v)\n", d.Segment, d.Offset, d.Cause)
	fmt.Fprintf(w, "    cut:                 %s, %s lost", count(int(d.BytesCut), "byte"), count(int(d.RecordsCut), "intact record"))
	if len(d.SegmentsRemoved) > 0 {
		fmt.Fprintf(w, ", %s removed", count(len(d.SegmentsRemoved), "segment file"))
	}
	fmt.Fprintln(w)
	if d.Salvaged {
		fmt.Fprintf(w, "  the records after the damage are lost: sessions recovered from the cut log may disagree with files written before the crash; run 'rlrec verify %s' to list them\n", root)
	}
	return nil
}
