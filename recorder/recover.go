package recorder

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logreplay"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
	"github.com/rlrec/rlrec/recorder/internal/recovery"
)

// Recovered returns the report of the recovery Open ran.
func (r *Recorder) Recovered() RecoveryReport { return r.recovered }

// recover replays a log left by a previous recorder, writes every episode
// and session in it that is not yet published, and empties the log. It
// first settles the temp files a crash left: one a marker names was synced
// before its marker, and is published; any other is removed, and its write
// redone from the log under a new name (commit.go). A crash during
// recovery is recovered by the next Open: its markers are in the journal.
func (r *Recorder) recover() error {
	dir := filepath.Join(r.state, logDir)
	rep, err := wal.Repair(r.fs, dir, r.opts.salvage, r.opts.logger)
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) {
			return fmt.Errorf("recover %s: %w: %w; recovery with salvage drops the damaged records and keeps every intact one", r.root, ErrDamagedLog, err)
		}
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	r.recovered.Damage = rep
	journal, err := recovery.ReadJournal(r.fs, r.state)
	if err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	crashed, err := recovery.MarkOpen(r.fs, r.state)
	if err != nil {
		return fmt.Errorf("open %s: %w", r.root, err)
	}
	r.recovered.Unclean = crashed
	if rep.Records == 0 {
		if journal == nil {
			if crashed {
				// A crash before the log's first sync can still leave
				// temp files: none is named by a marker.
				return r.settleTemps(newDoneSet(r.st))
			}
			return nil
		}
		// A crash after recovery emptied the log, before it removed the
		// journal: every file the journal names was published.
		done := newDoneSet(r.st)
		done.addRecords(journal, "journal", r.opts.logger.With("root", r.root))
		if err := r.settleTemps(done); err != nil {
			return err
		}
		return recovery.RemoveJournal(r.fs, r.state)
	}
	r.opts.logger.Info("recovering from the log of a previous recorder", "root", r.root, "records", rep.Records)

	// Pass 1: the markers say which writes are already published, and the
	// last sealed snapshot (checkpoint.go) where the replay may start. It
	// skips event records without decompressing them.
	done, snap, err := r.readMarkers(dir)
	if err != nil {
		return err
	}
	done.addRecords(journal, "journal", r.opts.logger.With("root", r.root))
	if err := r.settleTemps(done); err != nil {
		return err
	}
	r.w.setPhase(replaying{recovered{fs: r.fs, state: r.state}})
	r.asm = assembly.New(replayFilter{w: r.w, done: done}, r.budget.episodes())
	r.asm.KeepHashes(r.opts.resume)
	var last time.Time
	var from wal.Pos
	var cu *assembly.CatchUp
	var catchUpTo uint64
	if snap != nil {
		asOf, snapLast, c, err := r.asm.Restore(snap[1:], r.opts.logger.With("root", r.root))
		if err != nil {
			return fmt.Errorf("recover %s: restore the log's snapshot: %w", r.root, err)
		}
		last = snapLast
		from = wal.Pos(asOf + 1)
		r.recovered.Snapshot = true
		if cu = c; cu != nil {
			from, catchUpTo = wal.Pos(cu.From()), asOf
			r.recovered.Rebuilt = cu.Rebuilds()
		}
	}

	// Pass 2: rebuild the sessions from their events (after the snapshot,
	// and before it only the episodes it left to the log).
	var cuErr error
	n, err := logreplay.Events(r.fs, dir, from, r.opts.logger.With("root", r.root), func(d logreplay.Event) {
		if d.At.After(last) {
			last = d.At
		}
		if cu != nil {
			if uint64(d.Pos) <= catchUpTo {
				cu.Apply(d.Ev, d.At, uint64(d.Pos))
				return
			}
			cuErr, cu = cu.Finish(), nil
		}
		r.asm.Apply(d.Ev, d.At, uint64(d.Pos))
	})
	if cu != nil {
		cuErr = cu.Finish()
	}
	r.recovered.Records = n
	if err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	if cuErr != nil {
		// The log and its snapshot disagree (a bug, or a log damaged where
		// no checksum could tell). Nothing more is to be had: the episode
		// keeps the rows the log held, and verify will name it.
		r.opts.logger.Error("recovery could not rebuild an episode as the log's snapshot recorded it", "root", r.root, "err", cuErr)
	}
	if r.opts.resume {
		return r.resumeRecovered()
	}
	r.recovered.Sessions, r.recovered.Crashed = r.asm.FinishAll(assembly.StatusCrashed, last, false)
	if err := r.w.wait(); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	r.recovered.Completed, r.recovered.Incomplete, r.recovered.Skipped = r.w.counts()
	r.w.setPhase(recovered{fs: r.fs, state: r.state})
	r.asm = assembly.New(r.w, r.budget.episodes())
	if failed := r.w.recordingErrors(false); len(failed) > 0 {
		// Failure isolation (failure.go): the others are written; the
		// log (and the journal naming what this recovery published) stay
		// for the next recovery, and the failed writes stay in flight, so
		// that this recorder keeps the log too. Close reports them.
		r.recovered.Failed = failed
		r.opts.logger.Error("recovered all but some recordings; their events stay in the log: fix the cause and recover the ROOT again",
			"root", r.root, "sessions", r.recovered.Sessions, "failed_recordings", len(failed),
			"completed_episodes", r.recovered.Completed, "incomplete_episodes", r.recovered.Incomplete)
		return nil
	}
	if err := r.clearLog(); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	if err := recovery.RemoveJournal(r.fs, r.state); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	r.opts.logger.Info("recovered", "root", r.root, "sessions", r.recovered.Sessions, "crashed", r.recovered.Crashed,
		"completed_episodes", r.recovered.Completed, "incomplete_episodes", r.recovered.Incomplete)
	return nil
}

// settleTemps publishes the temp files the markers name and removes every
// other temp file under ROOT, which a crashed writer left; it then syncs
// the file system. A recording whose directory cannot be listed, or whose
// temp file cannot be settled, fails (failTemp): its events stay in the log
// for a later recovery. A file a marker names that is neither published nor
// under its temp name was removed by someone else: it is logged (verify
// reports what is missing).
func (r *Recorder) settleTemps(done *doneSet) error {
	if up, ok := r.st.(store.Uploader); ok {
		// Object storage has no temp files.
		if err := recovery.SettleUploads(up, done.Published, r.failTemp, r.opts.logger.With("root", r.root)); err != nil {
			return fmt.Errorf("recover %s: %w", r.root, err)
		}
		return nil
	}
	l, err := hive.List(r.fs, r.root)
	if err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	changed := false
	for _, st := range l.Strays {
		if st.Err != nil {
			// A directory that cannot be listed may hold a temp file a
			// marker names, or a stale one whose number a new part would
			// then skip: its recording waits for a recovery that can list
			// it (one above any recording fails the recovery).
			if err := r.failTemp(st.Rel, fmt.Errorf("list %s for a crashed write's temp files: %w", st.Rel, st.Err)); err != nil {
				return fmt.Errorf("recover %s: %w", r.root, err)
			}
			continue
		}
		if !st.Temp {
			continue
		}
		dir, name := path.Split(st.Rel)
		n, _, _ := hive.ParsePartName(name)
		final := path.Join(dir, hive.PartName(n))
		if done.File(final) {
			if _, err := r.fs.Stat(filepath.Join(r.root, filepath.FromSlash(final))); err != nil {
				if err := r.w.st.PublishTemp(dir, n); err != nil {
					if err := r.failTemp(st.Rel, fmt.Errorf("publish a file the crashed recorder had made durable: %w", err)); err != nil {
						return fmt.Errorf("recover %s: %w", r.root, err)
					}
					continue
				}
				r.opts.logger.Info("published a file the crashed recorder had made durable", "root", r.root, "file", final)
				changed = true
				continue
			}
		}
		if err := r.w.st.RemoveTemp(st.Rel); err != nil {
			if err := r.failTemp(st.Rel, fmt.Errorf("remove a crashed write's temp file %s: %w", st.Rel, err)); err != nil {
				return fmt.Errorf("recover %s: %w", r.root, err)
			}
			continue
		}
		changed = true
	}
	if !changed {
		return nil
	}
	if err := r.w.st.SyncAll(); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	return nil
}

// failTemp charges a temp file that could not be settled to the recording
// whose partition holds it (failure.go): recovery then writes nothing of
// that recording, whose records stay in the log. An error that is not one
// recording's is returned as it is.
func (r *Recorder) failTemp(rel string, err error) error {
	dir, rec, ok := hive.RecordingOf(rel)
	if rootWide(err) || !ok {
		return err
	}
	// Keyed by the path's own directory: a cut name does not give the
	// ids back.
	r.w.failKey(dir, &RecordingError{SessionID: rec.SessionID, EnvID: rec.EnvID,
		Path: r.st.Path(rel), Err: err})
	return nil
}

// readMarkers reads the markers of the log in dir, and returns the last
// snapshot record that a seal follows (nil if none): logreplay.Markers.
func (r *Recorder) readMarkers(dir string) (*doneSet, []byte, error) {
	pub, sealed, err := logreplay.Markers(r.fs, dir, r.opts.logger.With("root", r.root))
	if err != nil {
		return nil, nil, fmt.Errorf("recover %s: %w", r.root, err)
	}
	done := newDoneSet(r.st)
	done.Published = pub
	return done, sealed, nil
}
