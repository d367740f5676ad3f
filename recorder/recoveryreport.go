package recorder

import "github.com/rlrec/rlrec/internal/wal"

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
