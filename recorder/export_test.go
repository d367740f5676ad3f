package recorder

import (
	"context"
	"fmt"
)

// Test hooks for the external tests of this package.
var (
	WithSegmentSize  = withSegmentSize
	WithReclaimEvery = withReclaimEvery
)

// SnapshotsTaken is the number of log snapshots r has taken.
func (r *Recorder) SnapshotsTaken() int { return r.ckpt.taken }

// Settle returns once every event handed over is applied and every write
// it caused is committed. The pipeline must not be handed events meanwhile.
func (r *Recorder) Settle(ctx context.Context) error {
	if err := r.Flush(ctx); err != nil {
		return err
	}
	return r.w.wait()
}

// SettleSnapshots settles r and then its checkpoints: Settle's Flush
// reclaims before the writes are durable, so a snapshot pending then is
// sealed (and the log before it removed) only at a later reclaim. It
// settles again until no snapshot is pending or awaiting its seal's sync,
// so that what the log holds afterwards does not depend on how fast the
// writer was. The pipeline must not be handed events meanwhile.
func (r *Recorder) SettleSnapshots(ctx context.Context) error {
	const rounds = 8
	for range rounds {
		if err := r.Settle(ctx); err != nil {
			return err
		}
		if r.ckpt.pending == 0 && r.ckpt.sealPos == 0 {
			return nil
		}
	}
	return fmt.Errorf("after %d settles a snapshot is still pending (as of %d) or its seal unsynced (at %d)", rounds, r.ckpt.pending, r.ckpt.sealPos)
}

// SealedAsOf is the as_of of r's newest sealed snapshot, 0 if none. Call
// it after Flush or Settle.
func (r *Recorder) SealedAsOf() uint64 { return r.ckpt.sealedAsOf }

// LogSynced reports whether every record appended to r's log is durable.
func (r *Recorder) LogSynced() bool { return r.log.SyncedPos() >= r.log.LastPos() }
