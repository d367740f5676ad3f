package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
)

// snapshotMax is the largest snapshot taken, in (estimated) bytes: large
// enough for many sessions of small observations, small against a
// segment (64 MiB) so that snapshots cost at most an eighth of the log.
func (r *Recorder) snapshotMax() int {
	return r.budget.snapshot()
}

// reclaimEvery is how many events the pipeline handles between looks for
// snapshots to take or seal and log segments to remove; when it has
// nothing queued it looks every reclaimIdleEvery events, so that a
// snapshot is sealed soon after its writes are durable.
const (
	reclaimEvery     = 1024
	reclaimIdleEvery = 64
)

// maybeReclaim counts one event (or barrier) handled by the assembly
// goroutine and reclaims when it is time; idle says nothing is queued.
func (r *Recorder) maybeReclaim(idle bool) {
	r.sinceReclaim++
	if r.sinceReclaim >= r.reclaimEvery() || (idle && r.sinceReclaim >= min(reclaimIdleEvery, r.reclaimEvery())) {
		r.sinceReclaim = 0
		r.reclaim()
	}
}

// snapshotEvery is the most events applied between snapshots while a
// session runs: about 2 MB of log for sixteen cartpole lanes, whose
// snapshot is about 100 KB. A larger snapshot waits for at least one event
// per snapshotBytesPerEvent of its size, so that snapshots stay a small
// part of the log.
const (
	snapshotEvery         = 8192
	snapshotBytesPerEvent = 64
)

func (r *Recorder) reclaimEvery() int {
	if r.opts.reclaimEvery > 0 {
		return r.opts.reclaimEvery
	}
	return reclaimEvery
}

// reclaim takes and seals snapshots (see checkpoints) and removes the log
// segments that hold only records of writes that are durable: everything
// before the first record of the oldest session not yet handed to the
// writer (or after the last sealed snapshot, for a session it covers) and
// of the oldest write still in flight.
func (r *Recorder) reclaim() {
	r.checkpoint()
	if r.log.Segments() < 2 {
		return
	}
	keep := r.sessionsKeep()
	if l := r.w.minLive(); l != 0 && l < keep {
		keep = l
	}
	if err := r.log.RemoveBefore(wal.Pos(keep)); err != nil {
		r.fail(fmt.Errorf("reclaim log space: %w", err))
	}
}

// sessionsKeep is the first log position the sessions still need.
func (r *Recorder) sessionsKeep() uint64 {
	keep := uint64(r.log.LastPos())
	r.asm.Each(func(s assembly.Recording) {
		if s.Finished {
			return
		}
		p := s.FirstPos
		if p <= r.ckpt.sealedAsOf {
			p = r.ckpt.sealedAsOf + 1
		}
		keep = min(keep, p)
	})
	if r.ckpt.sealedFrom != 0 {
		// The episodes open at the snapshot.
		keep = min(keep, r.ckpt.sealedFrom)
	}
	return keep
}

// checkpoint advances the snapshots: seals a pending one whose writes are
// durable, notes a synced seal, and takes a new snapshot when one is due.
func (r *Recorder) checkpoint() {
	c := &r.ckpt
	if c.pending != 0 {
		if r.w.finishedUpTo(c.pendingWrites) {
			pos, err := r.appends().seal(c.pending)
			if err != nil {
				r.fail(err)
				return
			}
			c.sealPos, c.sealAsOf, c.sealFrom, c.pending = pos, c.pending, c.pendingFrom, 0
		}
	}
	if c.sealPos != 0 && r.log.SyncedPos() >= c.sealPos {
		c.sealedAsOf, c.sealedFrom, c.sealPos = c.sealAsOf, c.sealFrom, 0
	}
	if c.pending != 0 || c.sealPos != 0 || c.applied == 0 {
		return
	}
	// A snapshot is due when it would let reclaim remove a segment (one
	// has been sealed since the last snapshot, and the sessions hold it),
	// or when snapshotEvery events were applied since the last one while
	// a session runs: recovery replays only what follows the last sealed
	// snapshot, so this bounds its work too.
	active := uint64(r.log.ActiveFirst())
	frees := c.lastAsOf < active && r.sessionsKeep() < active
	due := c.applied-c.lastAsOf >= snapshotEvery && r.sessionsKeep() <= c.applied
	if !frees && !due {
		return
	}
	size, ok := r.asm.Snapshotable()
	if !ok || size > r.snapshotMax() || c.applied-c.lastAsOf < uint64(size/snapshotBytesPerEvent) {
		return
	}
	rec, err := r.asm.AppendSnapshot(make([]byte, 0, size), c.applied)
	if err != nil {
		r.opts.logger.Warn("skipping a log snapshot", "root", r.root, "err", err)
		return
	}
	if err := r.appends().snapshot(rec); err != nil {
		r.fail(err)
		return
	}
	c.pending, c.lastAsOf = c.applied, c.applied
	c.pendingWrites = r.w.handedOver()
	c.pendingFrom = r.asm.OldestOpen()
	c.taken++
}

// clearLog removes the log's segments once everything in them is in
// Parquet files, so the next Open has nothing to recover.
func (r *Recorder) clearLog() error {
	dir := filepath.Join(r.state, logDir)
	// The log's expectation outside it first, then its manifest: neither
	// may name a segment or pending file that is gone.
	if err := wal.RemoveExpected(r.fs, dir); err != nil {
		return fmt.Errorf("clear log: %w", err)
	}
	if err := r.fs.Remove(filepath.Join(dir, wal.ManifestName)); err == nil {
		if err := r.fs.SyncDir(dir); err != nil {
			return fmt.Errorf("clear log: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear log: %w", err)
	}
	entries, err := r.fs.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clear log: %w", err)
	}
	for _, e := range entries {
		if err := r.fs.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("clear log: %w", err)
		}
	}
	return r.fs.SyncDir(dir)
}
