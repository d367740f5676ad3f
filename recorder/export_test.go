package recorder

import "context"

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

// SealedAsOf is the as_of of r's newest sealed snapshot, 0 if none. Call
// it after Flush or Settle.
func (r *Recorder) SealedAsOf() uint64 { return r.ckpt.sealedAsOf }
