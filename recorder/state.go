package recorder

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
)

// The Recorder's state: the struct whose methods the stages' files hold,
// the items the decoding goroutine hands the assembly goroutine, and the
// snapshots' bookkeeping. It lies under every stage: it uses only the
// types of the queue, the budget, the options and the writer's state
// (writerstate.go), none of the stages' methods.

// Paths under ROOT that belong to the recorder itself. Readers skip paths
// that start with "_".
const (
	stateDir = "_rlrec"
	logDir   = "log"
	lockName = "LOCK"
)

// Recorder records the events of any number of concurrent sessions under
// one ROOT. It implements events.Hooks and is safe for concurrent use.
type Recorder struct {
	root string
	opts options
	fs   vfs.FS
	// st is the store ROOT is written and read through; state is the
	// local directory of the log, the lock, the journal and the open
	// marker (ROOT/_rlrec, or WithStore's).
	st    store.Root
	state string
	lock  interface{ Close() error }
	// log is appended to only through appends (logappend.go).
	log *wal.Log

	// mu guards closed and the queue's lifetime: hooks hold it shared while
	// they hand an event over; Close takes it exclusively to close the queue.
	mu     sync.RWMutex
	closed bool
	queue  *intake
	// queueBudget bounds the bytes of events queued for the pipeline.
	queueBudget *queueRoom
	queueMax    int64
	// budget hands out the memory budget's shares (budget.go); maxEvent
	// is the largest encoded event a hook accepts.
	budget   memoryBudget
	maxEvent int64
	bufs     logrec.BufPool

	// The pipeline is two goroutines: decoding (hands on the events the hooks logged) and
	// assembly, connected by decoded. assemblyDone closes when both ended.
	decoded      chan decodedItem
	assemblyDone chan struct{}
	dec          events.Decoder // the decoding goroutine's
	// copies copies the step events hooks hand over, for the assembly
	// goroutine (see record).
	copies events.StepCopier
	// asm is touched only by the assembly goroutine, and by Open and Close
	// when the pipeline is not running.
	asm          *assembly.Assembler
	sinceReclaim int
	ckpt         checkpoints
	w            *writer

	// fatal is the error that failed the recorder; the writer shares it.
	fatal *fatal

	// refused holds the recordings whose SessionStarted was refused
	// because ROOT already holds them (admit); refusedN counts them, so
	// that a hook looks the map up only when there are any.
	// admitted holds the recordings whose SessionStarted this recorder
	// accepted.
	admitMu  sync.Mutex
	refused  map[hive.Recording]struct{}
	admitted map[hive.Recording]struct{}
	refusedN atomic.Int32

	recovered RecoveryReport

	// layout is the ROOT's steps layout; layoutFile
	// (internal/store.OpenLayout) is pending while a new ROOT's layout
	// file is to be written with its first file.
	layout     hive.Layout
	layoutFile *store.LayoutFile

	// resume mode (resume.go): the recordings Open resumed and their
	// sequence numbers, and whether Close leaves the log for the next Open.
	resumed   int
	recovSeqs map[hive.Recording]uint64
	recovRuns map[hive.Recording]RecoveredRun
	keepLog   bool
}

// decodedItem is what the decoding goroutine hands the assembly goroutine:
// a logged event (ev non-nil) or a barrier (wait non-nil), in queue order.
type decodedItem struct {
	ev     events.Event
	at     time.Time
	copy   *events.StepCopy // ev's, recycled once ev is applied
	pos    wal.Pos
	charge int64 // held in queueBudget until the event is applied
	// recClock: at is the recorder's clock reading (see item).
	recClock bool
	wait     *waiter
}

// Checkpoints bound the log of long-running sessions and the work of
// recovery. Without them a session's records stay in the log until the
// session ends: recovery rebuilds its counters, lanes and open episodes
// from its first event. With them:
//
//  1. When a sealed log segment is held by sessions still running, or
//     every snapshotEvery events while a session runs, the assembly
//     goroutine appends a snapshot of the whole assembly state
//     (internal/assembly's snapshot.go) as of the last event it applied, as_of. The events after as_of that the decoding
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

// appends is the appender of r's open log (logappend.go).
func (r *Recorder) appends() logAppender { return logAppender{r.log} }
