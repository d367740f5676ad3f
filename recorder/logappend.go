package recorder

import (
	"context"
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/wal"
)

// logAppender is the one way records go into an open log: each stage that
// appends has its method here, and the rules that order their records
// are these.
//
//  1. Events (hooks, hooklog.go): a hook appends its event record and
//     queues the event under the intake's lock, so that the queue's order
//     is the log's: the assembly goroutine applies events in log order,
//     which snapshots and recovery rely on. Nothing else about an event
//     happens before its record is appended.
//  2. Session writes (the assembly goroutine, as it hands the k-th
//     session write of a recording to the writer): a TypeSessionWrite
//     record, after every event the write was built from, so that
//     recovery numbers the recording's writes as the run did.
//  3. Snapshots (the assembly goroutine, checkpoint.go): a snapshot as of
//     the last event applied; its seal only once every write handed over
//     before the snapshot is published, and the snapshot is relied on
//     only once its seal is synced.
//  4. Markers (the committer, commit.go): a group's markers after its
//     files are durable under their temp names and before they are
//     published, waiting until the markers are synced; on object storage,
//     the uploads a group is about to begin before they begin, and those
//     of a steps file streamed to a multipart upload from its writer job
//     (recovery.StreamLogged) before its first part.
//
// During recovery there is no open log: markers go to the journal instead
// (phase.go), and nothing else is appended.
type logAppender struct{ log *wal.Log }

// event appends a hook's event record (rule 1; the caller holds the
// intake's lock), waiting for room under ctx.
func (a logAppender) event(ctx context.Context, rec []byte) (wal.Pos, error) {
	return a.log.AppendContext(ctx, rec)
}

// sessionWrite appends the record of rec's k-th session write (rule 2).
func (a logAppender) sessionWrite(rec hive.Recording, k int) error {
	if _, err := a.log.Append(logrec.AppendSessionMarker(nil, logrec.TypeSessionWrite, logrec.Marker{Recording: rec, Write: k})); err != nil {
		return fmt.Errorf("append session write record: %w", err)
	}
	return nil
}

// snapshot appends a snapshot record (rule 3).
func (a logAppender) snapshot(rec []byte) error {
	if _, err := a.log.Append(rec); err != nil {
		return fmt.Errorf("append snapshot: %w", err)
	}
	return nil
}

// seal appends the seal of the snapshot as of asOf (rule 3) and returns
// its position.
func (a logAppender) seal(asOf uint64) (wal.Pos, error) {
	pos, err := a.log.Append(logrec.AppendSealed(nil, asOf))
	if err != nil {
		return 0, fmt.Errorf("append snapshot seal: %w", err)
	}
	return pos, nil
}

// markers appends markers and waits until they are synced (rule 4).
func (a logAppender) markers(markers [][]byte) error {
	if len(markers) == 0 {
		return nil
	}
	var last wal.Pos
	for _, m := range markers {
		pos, err := a.log.Append(m)
		if err != nil {
			return fmt.Errorf("append marker: %w", err)
		}
		last = pos
	}
	if err := a.log.WaitSynced(context.Background(), last); err != nil {
		return fmt.Errorf("sync markers: %w", err)
	}
	return nil
}
