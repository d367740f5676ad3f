package recorder

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/logreplay"
	"github.com/rlrec/rlrec/internal/published"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/schema"
)

// RecoveryReport says what Open found in the log a previous recorder left
// and what it rebuilt from it.
type RecoveryReport struct {
	// Records is the number of intact log records replayed.
	Records int64
	// Sessions is the number of sessions found in the log; Crashed of them
	// had not ended and are recorded with status "crashed".
	Sessions, Crashed int
	// Completed and Incomplete count the episodes written by recovery.
	Completed, Incomplete int
	// Skipped counts episodes whose files were already durable.
	Skipped int
	// Unclean is set when the previous recorder did not close: its open
	// marker was still there (it was killed, or crashed), whether or not
	// its log held records.
	Unclean bool
	// Snapshot is set when the replay started from a snapshot of the
	// recorder's state instead of the log's first event (checkpoint.go);
	// Rebuilt counts the open episodes of the snapshot whose rows it left
	// to the log, rebuilt by replaying the log from their first event.
	Snapshot bool
	Rebuilt  int
	// Damage describes a torn or corrupt log tail that was cut; it is the
	// zero value when the log was intact.
	Damage wal.RepairReport
	// Failed lists the recordings recovery could not write (failure.go):
	// they stay in the log for the next recovery, and Close returns them.
	Failed []*RecordingError
}

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
	journal, err := store.ReadJournal(r.fs, r.state)
	if err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	crashed, err := store.MarkOpen(r.fs, r.state)
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
		done.addRecords(r, journal, "journal")
		if err := r.settleTemps(done); err != nil {
			return err
		}
		return store.RemoveJournal(r.fs, r.state)
	}
	r.opts.logger.Info("recovering from the log of a previous recorder", "root", r.root, "records", rep.Records)

	// Pass 1: the markers say which writes are already published, and the
	// last sealed snapshot (checkpoint.go) where the replay may start. It
	// skips event records without decompressing them.
	done, snap, err := r.readMarkers(dir)
	if err != nil {
		return err
	}
	done.addRecords(r, journal, "journal")
	if err := r.settleTemps(done); err != nil {
		return err
	}
	r.w.setPhase(replaying{recovered: recovered{fs: r.fs, state: r.state}, done: done})
	var last time.Time
	var from wal.Pos
	var cu *catchUp
	var catchUpTo uint64
	if snap != nil {
		asOf, sessions, err := parseSnapshot(snap[1:])
		if err != nil {
			return fmt.Errorf("recover %s: restore the log's snapshot: %w", r.root, err)
		}
		for _, s := range sessions {
			if s.lastAt.After(last) {
				last = s.lastAt
			}
		}
		r.asm.restore(sessions, asOf+1)
		from = wal.Pos(asOf + 1)
		r.recovered.Snapshot = true
		if cu = newCatchUp(r.w, r.asm.episodeBudget, sessions, r.opts.logger.With("root", r.root)); cu != nil {
			from, catchUpTo = wal.Pos(cu.from), asOf
			r.recovered.Rebuilt = len(cu.targets)
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
				cu.apply(d)
				return
			}
			cuErr, cu = cu.finish(), nil
		}
		r.asm.apply(d.Ev, d.At, uint64(d.Pos))
	})
	if cu != nil {
		cuErr = cu.finish()
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
	for _, s := range r.asm.sortedSessions() {
		r.recovered.Sessions++
		if !s.ended {
			r.recovered.Crashed++
		}
		r.asm.finishOpen(s, statusCrashed, last)
	}
	if err := r.w.wait(); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	r.recovered.Completed, r.recovered.Incomplete, r.recovered.Skipped = r.w.counts()
	r.w.setPhase(recovered{fs: r.fs, state: r.state})
	r.asm = newAssembler(r.w, r.asm.episodeBudget)
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
	if err := store.RemoveJournal(r.fs, r.state); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	r.opts.logger.Info("recovered", "root", r.root, "sessions", r.recovered.Sessions, "crashed", r.recovered.Crashed,
		"completed_episodes", r.recovered.Completed, "incomplete_episodes", r.recovered.Incomplete)
	return nil
}

// doneSet holds the writes the markers in a log (and the recovery
// journal) say are published, and the files they name. A file is published
// only once its marker is durable (commit.go), so a write without a marker
// has no published file, and recovery writes it afresh. Only a damaged log
// (cut by --salvage past a marker) can lose the marker of a published
// write; so that recovery then duplicates nothing, an episode whose row is
// in a published episodes file, and a recording whose sessions row is
// published, count as published too (read from ROOT once per recording,
// during recovery only).
type doneSet struct {
	*logrec.Published
	st store.Root
	// rows caches the episode record ids in each recording's published
	// episodes files.
	rows map[hive.Recording]map[string]bool
}

func newDoneSet(st store.Root) *doneSet {
	return &doneSet{Published: logrec.NewPublished(), st: st, rows: make(map[hive.Recording]map[string]bool)}
}

// episode reports whether an episode's files are published.
func (d *doneSet) episode(rec hive.Recording, rid string) bool {
	if d.Episode(rec, rid) {
		return true
	}
	rows, ok := d.rows[rec]
	if !ok {
		rows = published.EpisodeIDs(d.st, rec)
		d.rows[rec] = rows
	}
	return rows[rid]
}

// session reports whether the k-th write of a recording's session files
// is published; final is set for the write with its sessions row.
func (d *doneSet) session(rec hive.Recording, k int, final bool) bool {
	if d.Session(rec, k) {
		return true
	}
	if !final {
		return false
	}
	n, err := d.st.Next(hive.RecordingPartition(schema.TableSessions, rec))
	return err == nil && n > 0
}

// addRecords notes marker records read from where.
func (d *doneSet) addRecords(r *Recorder, recs [][]byte, where string) {
	for _, rec := range recs {
		if err := d.Add(rec); err != nil {
			r.opts.logger.Error("skipping a malformed marker record", "root", r.root, "in", where, "err", err)
		}
	}
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
		if err := store.SettleUploads(up, done.Published, r.failTemp, r.opts.logger.With("root", r.root)); err != nil {
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
