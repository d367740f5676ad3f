package recorder

import (
	"fmt"

	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/wal"
)

// Checkpoints bound the log of long-running sessions and the work of
// recovery. Without them a session's records stay in the log until the
// session ends: recovery rebuilds its counters, lanes and open episodes
// from its first event. With them:
//
//  1. When a sealed log segment is held by sessions still running, or
//     every snapshotEvery events while a session runs, the assembly
//     goroutine appends a snapshot of the whole assembly state
//     (snapshot.go) as of the last event it applied, as_of. The events after as_of that the decoding
//     goroutine has already appended are not in it; recovery replays them.
//  2. Once every write handed to the writer up to then is durable (their
//     markers are in the log before the writer lets go of them), it
//     appends a seal naming as_of.
//  3. Once the seal is synced, the log before as_of+1 is no longer needed
//     but for the episodes open at the snapshot: reclaim removes the
//     segments that lie wholly before it, before the first event of the
//     oldest episode then open, and before every write in flight. (The
//     log is kept for every open episode, not only for those whose rows
//     the snapshot leaves to the log: a later snapshot may leave any of
//     them to the log.)
//
// Recovery restores the last snapshot that has a seal and replays the
// event records after its as_of; without one it replays the whole log.
// A snapshot is taken only when it is small (snapshotMax) and no episode
// is waiting to be finalised. An open episode streaming rows to a steps
// file being written (those rows are only in the log until the file is
// durable), or buffering many rows, is in it without its rows: the snapshot
// names the log position of its first event, reclaim keeps the log from
// there, and recovery rebuilds its rows from there (recover.go).
type checkpoints struct {
	applied  uint64 // position of the last event applied
	lastAsOf uint64 // as_of of the last snapshot taken
	pending  uint64 // as_of of a snapshot not yet sealed, or 0
	// pendingWrites is the number of writes handed to the writer when
	// the pending snapshot was taken: it is sealed once they are all
	// durable. (Writes handed over later, such as an episode open in the
	// snapshot that completed since, are rebuilt from it.)
	pendingWrites uint64
	// pendingFrom and sealedFrom are the first events of the oldest
	// episode open at the pending and at the sealed snapshot (0: none):
	// the log is kept from there, so that any episode open then can be
	// rebuilt from the log (see oldestOpen).
	pendingFrom, sealedFrom uint64
	sealPos                 wal.Pos // position of a seal not yet synced, or 0
	sealAsOf                uint64  // as_of that seal names
	sealFrom                uint64  // pendingFrom of that snapshot
	sealedAsOf              uint64  // as_of of the newest synced seal, or 0
	taken                   int     // snapshots taken, for tests
}

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
	for _, s := range r.asm.sessions {
		if s.finalTelemetry {
			continue
		}
		p := s.firstPos
		if p <= r.ckpt.sealedAsOf {
			p = r.ckpt.sealedAsOf + 1
		}
		keep = min(keep, p)
	}
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
			pos, err := r.log.Append(logrec.AppendSealed(nil, c.pending))
			if err != nil {
				r.fail(fmt.Errorf("append snapshot seal: %w", err))
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
	size, ok := r.asm.snapshotable()
	if !ok || size > r.snapshotMax() || c.applied-c.lastAsOf < uint64(size/snapshotBytesPerEvent) {
		return
	}
	rec, err := r.asm.appendSnapshot(make([]byte, 0, size), c.applied)
	if err != nil {
		r.opts.logger.Warn("skipping a log snapshot", "root", r.root, "err", err)
		return
	}
	if _, err := r.log.Append(rec); err != nil {
		r.fail(fmt.Errorf("append snapshot: %w", err))
		return
	}
	c.pending, c.lastAsOf = c.applied, c.applied
	c.pendingWrites = r.w.handedOver()
	c.pendingFrom = r.asm.oldestOpen()
	c.taken++
}
