package recorder

import (
	"context"
	"fmt"

	"github.com/rlrec/rlrec/internal/wal"
)

// A hook appends its record to the log itself, before it returns, and
// queues the item with the record's position; the decoding goroutine then
// only decodes. On a file system that can map files (the OS on Linux), the
// log's Append copies the record into its pending file, mapped shared with
// the kernel's page cache (internal/wal, PendingName): once the hook
// returns, its event survives the death of the process (kill -9, a panic)
// under every sync policy, without a system call on the hook's path. The
// next Open restores such records from the pending file before it
// recovers. Where files cannot be mapped, a record survives a process
// crash once the log's writer has written it (within FlushSize bytes or a
// SyncInterval).

// enqueueLogged appends its record to the log and queues it, as one step
// under the intake's lock, so that the queue's order is the log's: the
// assembly goroutine applies events in log order (snapshots and recovery
// rely on it). It returns the record's position.
func (r *Recorder) enqueueLogged(ctx context.Context, rec []byte, it item) (wal.Pos, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return 0, ErrClosed
	}
	if err := r.err(); err != nil {
		return 0, err
	}
	return r.queue.pushLogged(it, rec, func(rec []byte) (wal.Pos, error) {
		pos, err := r.appends().event(ctx, rec)
		if ctx.Err() != nil && err != nil {
			return 0, ctx.Err() // back-pressure the caller chose not to wait for
		}
		if err != nil {
			err = fmt.Errorf("append to log: %w", err)
			r.fail(err)
			return 0, r.err()
		}
		return pos, nil
	})
}

// pushLogged is push of the item of the record rec, which log appends
// first, under the queue's lock. Nothing is queued when log fails.
func (q *intake) pushLogged(it item, rec []byte, log func([]byte) (wal.Pos, error)) (wal.Pos, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, ErrClosed
	}
	pos, err := log(rec)
	if err != nil {
		q.mu.Unlock()
		return 0, err
	}
	it.pos = pos
	q.items = append(q.items, it)
	q.bytes += it.charge
	ring := q.state == intakeSleeping ||
		(q.state == intakeNapping && (len(q.items) >= napBatch || q.bytes >= q.napBytes))
	if ring {
		q.state = intakeConsuming
	}
	q.mu.Unlock()
	if ring {
		q.ring()
	}
	return pos, nil
}
