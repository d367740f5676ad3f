package recorder

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
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
	// Snapshot is set when the replay started from a snapshot of the
	// recorder's state instead of the log's first event (checkpoint.go);
	// Rebuilt counts the open episodes of the snapshot whose rows it left
	// to the log, rebuilt by replaying the log from their first event.
	Snapshot bool
	Rebuilt  int
	// Damage describes a torn or corrupt log tail that was cut; it is the
	// zero value when the log was intact.
	Damage wal.RepairReport
}

// Recovered returns the report of the recovery Open ran.
func (r *Recorder) Recovered() RecoveryReport { return r.recovered }

// recover replays a log left by a previous recorder, writes every episode
// and session in it that is not yet durable, and empties the log. Writing is
// idempotent (each partition's files are numbered by the order of writes in
// its session, and a rewrite replaces a file with the same rows), so a crash
// during recovery is recovered by the next Open.
func (r *Recorder) recover() error {
	dir := filepath.Join(r.root, stateDir, logDir)
	rep, err := wal.Repair(r.fs, dir, r.opts.salvage, r.opts.logger)
	if err != nil {
		return fmt.Errorf("recover %s: %w; run 'rlrec recover --salvage %s' to cut the log at the damage, losing what follows it", r.root, err, r.root)
	}
	r.recovered.Damage = rep
	if rep.Records == 0 {
		return nil
	}
	r.opts.logger.Info("recovering from the log of a previous recorder", "root", r.root, "records", rep.Records)

	// Pass 1: the markers say which writes are already durable, and the
	// last sealed snapshot (checkpoint.go) where the replay may start. It
	// skips event records without decompressing them.
	done, snap, err := r.readMarkers(dir)
	if err != nil {
		return err
	}
	r.w.skip = done
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
	n, err := replayEvents(r.fs, dir, from, r.opts.logger.With("root", r.root), func(d replayed) {
		if d.at.After(last) {
			last = d.at
		}
		if cu != nil {
			if uint64(d.pos) <= catchUpTo {
				cu.apply(d)
				return
			}
			cuErr, cu = cu.finish(), nil
		}
		r.asm.apply(d.ev, d.at, uint64(d.pos))
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
		return r.resumeRecovered(last)
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
	r.w.skip = nil
	r.asm = newAssembler(r.w, r.asm.episodeBudget)
	if err := r.clearLog(); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	r.opts.logger.Info("recovered", "root", r.root, "sessions", r.recovered.Sessions, "crashed", r.recovered.Crashed,
		"completed_episodes", r.recovered.Completed, "incomplete_episodes", r.recovered.Incomplete)
	return nil
}

// doneSet holds the writes the markers in a log say are durable, and
// finds the ones whose marker a crash lost by their files: an episode whose
// episodes file is committed, or a session write whose sessions (k = 0),
// telemetry or logs part k is committed, is durable. The log cannot hold a
// more complete version of either: an episode's episodes file is written
// only once the log holds all of its events, so a committed file is what
// the log would rebuild, or better when a salvaged log lost records.
type doneSet struct {
	fs   vfs.FS
	root string

	episodes map[episodeKey]bool
	sessions map[sessionWrite]bool
	// firstWrite is the number of the first session write logged for
	// each recording.
	firstWrite map[hive.Recording]int
}

type episodeKey struct {
	rec hive.Recording
	rid string
}

// marked reports whether an episode's marker was logged: its files are
// durable.
func (d *doneSet) marked(rec hive.Recording, rid string) bool {
	return d.episodes[episodeKey{rec, rid}]
}

// episode reports whether the files of an episode, the k-th episodes file
// of its recording, are durable: its marker was logged, or its episodes
// file landed before a crash took the marker.
func (d *doneSet) episode(rec hive.Recording, rid string, k int) bool {
	return d.marked(rec, rid) || d.exists(hive.RecordingPartition(schema.TableEpisodes, rec), k)
}

// session reports whether the k-th write of a recording's session files is
// durable.
func (d *doneSet) session(rec hive.Recording, k int) bool {
	if d.sessions[sessionWrite{rec, k}] {
		return true
	}
	if k == 0 {
		return d.exists(hive.RecordingPartition(schema.TableSessions, rec), 0)
	}
	return d.exists(hive.RecordingPartition(schema.TableTelemetry, rec), k) ||
		d.exists(hive.RecordingPartition(schema.TableLogs, rec), k)
}

func (d *doneSet) exists(p hive.Partition, part int) bool {
	_, err := d.fs.Stat(filepath.Join(d.root, filepath.FromSlash(p.File(part))))
	return err == nil
}

type sessionWrite struct {
	rec   hive.Recording
	write int
}

// readMarkers reads the markers of the log in dir, and returns the last
// snapshot record that a seal follows (nil if none).
func (r *Recorder) readMarkers(dir string) (*doneSet, []byte, error) {
	done := &doneSet{fs: r.fs, root: r.root, episodes: make(map[episodeKey]bool), sessions: make(map[sessionWrite]bool), firstWrite: make(map[hive.Recording]int)}
	rd, err := wal.NewReader(r.fs, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("recover %s: %w", r.root, err)
	}
	defer rd.Close()
	// Markers are small and few; events, most of the log, are checked
	// but not decompressed.
	rd.Filter(func(first byte) bool { return first != recEvent && first != recInvalid })
	var snap, sealed []byte
	var snapAsOf uint64
	for rd.Next() {
		rec := rd.Record()
		switch rec[0] {
		case recSnapshot:
			asOf, err := snapshotAsOf(rec[1:])
			if err != nil {
				r.opts.logger.Error("skipping a malformed snapshot record", "root", r.root, "pos", rd.Pos(), "err", err)
				continue
			}
			snap, snapAsOf = append(snap[:0], rec...), asOf
			continue
		case recSealed:
			asOf, err := parseSealed(rec[1:])
			if err != nil {
				r.opts.logger.Error("skipping a malformed seal record", "root", r.root, "pos", rd.Pos(), "err", err)
			} else if snap != nil && asOf == snapAsOf {
				sealed = append(sealed[:0], snap...)
			}
			continue
		}
		m, err := parseMarker(rec[1:])
		if err != nil {
			r.opts.logger.Error("skipping a malformed marker record", "root", r.root, "pos", rd.Pos(), "err", err)
			continue
		}
		switch rec[0] {
		case recEpisodeDone:
			done.episodes[episodeKey{m.rec, m.record}] = true
		case recSessionDone:
			done.sessions[sessionWrite{m.rec, m.write}] = true
		case recSessionWrite:
			if _, ok := done.firstWrite[m.rec]; !ok {
				done.firstWrite[m.rec] = m.write
			}
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nil, fmt.Errorf("recover %s: read log: %w", r.root, err)
	}
	return done, sealed, nil
}
