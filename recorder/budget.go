package recorder

// memoryBudget hands out the shares of the memory budget
// (WithMemoryBudget): every bound on what the recorder keeps live comes
// from here, so that they add up. Of a budget B:
//
//	share                                   of B   bounds (min, max)
//	events queued for the pipeline          1/8    at least 1 MiB; hooks wait when it is full; they start with 1/8 of it (queueRoom)
//	idle buffers the hooks recycle          1/32   at least 1 MiB
//	idle step copies the hooks recycle      1/32   at least 1 MiB (events.StepCopier)
//	rows buffered by open episodes          1/4    at most 1 GiB; beyond it rows stream to steps files
//	log bytes appended, not yet written     1/8    at most 64 MiB
//	rows in flight to the writers           1/16   at least 1 MiB
//	steps files open at once                1/16   at least 1 MiB, divided among them (parquetout.FileShare)
//	one snapshot                            1/32   1 to 8 MiB
//
// That is 23/32 of B; the rest is headroom for what the shares do not
// count (parquet-go's buffers beyond a file's share, compression state,
// a session's logs and telemetry). One event is at most maxEvent, 1/16 of
// B: it is charged to the queue's share once, in full, from its hook until
// it is applied, and it must fit there with room for others. An event's
// bytes are also held, for a while, by the log (its share), by an open
// episode's rows (its share) and by the parquet encoder; so one event of
// size S costs several times S in memory, and maxEvent keeps that within
// the budget.
//
// With Go's default GOGC the heap may grow to about twice the live data
// before a collection, so the recorder's share of the peak RSS stays within
// the budget plus 64 MiB (plus the log's mapped pending file, two halves
// of logPending) only under a Go memory limit: GCMemoryLimit gives it, the
// rlrec command sets it, and a program embedding a Recorder should include
// it in its own limit (TestPeakRSSLargeEvents).
type memoryBudget int64

// queue bounds the bytes of events queued for the pipeline.
func (b memoryBudget) queue() int64 { return max(int64(b)/8, 1<<20) }

// idleBuffers bounds the idle buffers of the hooks' pool (logrec.BufPool),
// and apart the idle copies of their StepCopier.
func (b memoryBudget) idleBuffers() int64 { return max(int64(b)/32, 1<<20) }

// episodes bounds the rows all open episodes buffer together.
func (b memoryBudget) episodes() int { return int(min(int64(b)/4, 1<<30)) }

// logPending bounds the log's appended bytes not yet written.
func (b memoryBudget) logPending() int { return int(min(int64(b)/8, 64<<20)) }

// rowsInFlight bounds the rows handed to the writers and not yet written.
func (b memoryBudget) rowsInFlight() int64 { return max(int64(b)/16, 1<<20) }

// rowGroup bounds one steps file's row group: no more than the rows in
// flight may hold.
func (b memoryBudget) rowGroup() int64 { return min(int64(b)/16, 32<<20) }

// stepsFiles is the share the open steps files divide among them.
func (b memoryBudget) stepsFiles() int64 { return max(int64(b)/16, 1<<20) }

// snapshot bounds one snapshot, in estimated bytes: large enough for many
// sessions of small observations, small against a segment (64 MiB) so
// that snapshots cost at most an eighth of the log.
func (b memoryBudget) snapshot() int { return int(min(max(int64(b)/32, 1<<20), 8<<20)) }

// maxEvent is the largest encoded event the recorder accepts by default
// (WithMaxEventSize): half the queue's share.
func (b memoryBudget) maxEvent() int64 { return int64(b) / 16 }
