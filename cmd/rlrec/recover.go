package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/recorder"
)

// recoverOptions are the recover command's flags.
type recoverOptions struct {
	salvage bool
	logDir  string
}

var recoverFlags recoverOptions

var cmdRecover = &Command{
	Records:   true,
	Name:      "recover",
	UsageLine: "recover [--salvage] [--log-dir DIR] ROOT",
	Short:     "rebuild what a crashed recorder left in ROOT's log",
	Long: `Recover runs the recorder's crash recovery on ROOT explicitly (opening ROOT
with a recorder does the same) and reports what it rebuilt: the log records
replayed, the sessions found (those that had not ended are recorded as
crashed), the episodes written (completed ones as completed, open ones as
incomplete with every step that reached the log), those already durable,
and what was cut from a damaged log.

After a kill of 'rlrec ingest', ingesting the same stream again resumes
the recordings recover finished as crashed ('rlrec help ingest'). A kill
of such a resume while it swapped the recordings' files in is completed
here (or by the next ingest).

A recording whose files cannot be written (its directory not writable, a
file in the way, an I/O error on its files) does not stop the others: they
are recovered, the failed one stays in the log, recover names it and exits
1, and a later recover, once the cause is fixed, writes it.

A torn log tail, as a crash leaves it, is cut without asking: none of it
had been synced. Under the default SyncGroup policy that can include events
whose hooks had returned (those of the last sync interval): after a kill
the log's pending file restores them, after a power cut they are lost, and
recover says how many records it cut and restored. Any other damage
(inside a sealed segment, a bad segment header, a record the log shows was
durable, a duplicated or missing record, a missing segment file) is
corruption of data that was durable; recover then stops, naming the
segment and offset, and --salvage repairs the log instead: it drops the
damaged records and keeps every intact record after them. The flag may
come before or after ROOT.

A ROOT in object storage (s3://bucket/prefix) keeps its log on the disk
of the machine that recorded it, in --log-dir (the same default as the
recording command's): recover runs there. It completes the multipart
uploads the log says are whole, takes back (deletes and writes again) the
files of a write the crash left half published, and aborts every other
upload the log names.

Example:

  rlrec recover rlrec-data && rlrec verify rlrec-data
  rlrec recover --log-dir /var/lib/rlrec/run1 s3://datasets/run1
  rlrec recover --salvage rlrec-data`,
	SetFlags: func(fs *flag.FlagSet) {
		recoverFlags = recoverOptions{}
		fs.BoolVar(&recoverFlags.salvage, "salvage", false, "repair a corrupt log: drop the damaged records, keep every intact one")
		logDirFlag(fs, &recoverFlags.logDir)
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
	if store.IsURL(root) {
		// The log of a bucket's ROOT is on the disk of the machine that
		// recorded: a missing one is no log to recover, not one to make.
		state, err := stateDir(root, recoverFlags.logDir)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(state, hive.LogDir)); errors.Is(err, fs.ErrNotExist) {
			// Nothing was logged here: a recorder killed before it made its
			// log, or one that recorded elsewhere. Nothing to recover.
			_, err := fmt.Fprintf(env.Stdout, "%s: no log in %s, so nothing to recover here (a recorder that was killed before it logged anything leaves none; one that recorded on another machine or with another --log-dir has its log there: run recover there)\n", root, state)
			if err == nil {
				err = writeClaims(env.Stdout, root)
			}
			return err
		} else if err != nil {
			return fmt.Errorf("cannot read the log of %s in %s: %v; check its permissions", root, state, err)
		}
	}
	rec, err := openRecorder(ctx, env.Logger, root, recoverFlags.logDir, recorder.WithSalvage(salvage), recorder.WithLogger(env.Logger))
	if err != nil {
		var ce *wal.CorruptionError
		if errors.As(err, &ce) && !salvage && errors.Is(err, wal.ErrPendingMissing) {
			return fmt.Errorf("the log lacks its pending file, which held the last records a recorder accepted, so recover stops: %v; "+
				"put the file back and run recover again, or rerun with --salvage to recover what the segments hold: what only the pending file held is lost", ce.Err)
		}
		if errors.As(err, &ce) && !salvage && errors.Is(err, wal.ErrSegmentMissing) {
			return fmt.Errorf("the log lacks segments that held durable records, so recover stops: %v; "+
				"put the files back and run recover again, or rerun with --salvage to recover what the other segments hold: "+
				"what the missing ones held is lost (episodes that had steps in them are written without those steps, or incomplete, or not at all)", ce.Err)
		}
		if errors.As(err, &ce) && !salvage {
			where := "sealed segment"
			if ce.Last {
				where = "last segment"
			}
			return fmt.Errorf("the log is corrupt inside %s %s at offset %d (%v): records there were durable, so recover stops; "+
				"rerun with --salvage to drop the damaged records and keep every intact one: what the damaged records held is lost (episodes "+
				"that had steps in them are written without those steps, or incomplete)", where, ce.Segment, ce.Offset, ce.Err)
		}
		return err
	}
	rep := rec.Recovered()
	if !store.IsURL(root) {
		// Under the lock: a resume's swap that a crash interrupted
		// (rlrec ingest, resume.go) is finished.
		if err := finishSwap(root, env.Logger); err != nil {
			_ = rec.Close(context.WithoutCancel(ctx))
			return err
		}
	}
	if err := rec.Close(context.WithoutCancel(ctx)); err != nil {
		if recorder.RecordingErrors(err) == nil {
			return err
		}
		// Recordings it could not write: the others are recovered, and
		// the report says so before the error names them.
		if werr := writeRecovery(env.Stdout, root, rep); werr != nil {
			return werr
		}
		return fmt.Errorf("%w; the other recordings are recovered", err)
	}
	return writeRecovery(env.Stdout, root, rep)
}

// writeRecovery prints what a recovery did.
func writeRecovery(w io.Writer, root string, rep recorder.RecoveryReport) error {
	d := rep.Damage
	if rep.Records == 0 && !d.Cut {
		if rep.Unclean {
			_, err := fmt.Fprintf(w, "%s: the log is empty, but the last recorder did not close (it was killed or crashed before it logged anything, or once everything it logged was written out); nothing to recover\n", root)
			return err
		}
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
	if len(rep.Failed) > 0 {
		fmt.Fprintf(w, "  not written:           %s, kept in the log for the next recover:\n", count(len(rep.Failed), "recording"))
		for _, e := range rep.Failed {
			fmt.Fprintf(w, "    session_id=%q env_id=%q: %s: %v\n", e.SessionID, e.EnvID, e.Path, e.Err)
		}
	}
	if !d.Cut {
		_, err := fmt.Fprintf(w, "  log damage:            none\n")
		return err
	}
	kind := "torn tail (a crash's unfinished write: a partial record, no whole record cut)"
	if d.RecordsCut > 0 {
		kind = fmt.Sprintf("torn tail (a crash's unfinished writes: %s never synced cut; hooks may have returned for them under the SyncGroup policy, "+
			"so events handed over in the last sync interval before the crash are lost unless the pending file held them: %s restored from it)",
			count(int(d.RecordsCut), "record"), count(int(d.Restored), "record"))
	}
	if d.Salvaged {
		kind = "corruption in the log, repaired by --salvage"
		var ce *wal.CorruptionError
		if errors.As(d.Cause, &ce) && !ce.Last {
			kind = "corruption in a sealed segment, cut by --salvage"
		}
	}
	fmt.Fprintf(w, "  log damage:            %s\n", kind)
	if d.PendingMissing != "" {
		fmt.Fprintf(w, "    missing:             the pending file %s, whose records not yet in a segment are lost\n", d.PendingMissing)
	}
	if len(d.SegmentsMissing) > 0 {
		fmt.Fprintf(w, "    missing:             %s (%s), whose records are lost\n", count(len(d.SegmentsMissing), "segment file"), strings.Join(d.SegmentsMissing, ", "))
	}
	fmt.Fprintf(w, "    cut at:              %s offset %d (%v)\n", d.Segment, d.Offset, d.Cause)
	fmt.Fprintf(w, "    cut:                 %s, %s lost", count(int(d.BytesCut), "byte"), count(int(d.RecordsCut), "intact record"))
	if d.Salvaged {
		fmt.Fprintf(w, ", %s lost, %s rewritten", count(int(d.RecordsLost), "damaged record"), count(len(d.SegmentsRewritten), "segment file"))
	}
	if len(d.SegmentsRemoved) > 0 {
		fmt.Fprintf(w, ", %s removed", count(len(d.SegmentsRemoved), "segment file"))
	}
	fmt.Fprintln(w)
	if d.Salvaged {
		fmt.Fprintf(w, "  the damaged records are lost, the intact ones around them kept: sessions recovered from the log may lack what they held and disagree with files written before the crash; run 'rlrec verify %s' to list them\n", root)
	}
	return nil
}

// writeClaims names the recordings of a bucket's ROOT claimed with
// nothing published, which may be blocked for good (release-claim).
func writeClaims(w io.Writer, root string) error {
	for _, c := range unpublishedClaims(root) {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", c.Path, c.Reason); err != nil {
			return err
		}
	}
	return nil
}
