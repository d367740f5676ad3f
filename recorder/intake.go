package recorder

import (
	"sync"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/wal"
)

// intake is the queue from the hooks to the decoding goroutine.
//
// A channel send to a goroutine parked on receive wakes it, and on an idle
// core that wake-up (a futex call) is paid by the sender: by the hook. When
// the driver is slower than the pipeline (the common case: a real
// environment takes its time), the decoding goroutine parked after almost
// every event and almost every hook paid for a wake-up. The intake rings
// for the consumer only when it must:
//
//   - after it has drained the queue, the consumer naps for napTime; events
//     queued meanwhile wait for the end of the nap (durability comes from
//     the log's group commit every 100 ms anyway), unless napBatch of them
//     or a quarter of the queue's byte budget pile up (hooks would soon
//     wait for room) or one is urgent (a SyncEach hook or a Flush is
//     waiting);
//   - a nap that ends with nothing queued becomes a sleep, which the next
//     event ends at once, so an idle recorder costs no timer wake-ups.
//
// Its length is bounded by the queue budget: every event is charged at
// least its buffer's capacity.
type intake struct {
	mu       sync.Mutex
	items    []item
	bytes    int64 // charged by the queued items
	napBytes int64 // bytes that end a nap
	closed   bool
	// state is what the consumer is doing: consuming, napping or
	// sleeping.
	state intakeState
	bell  chan struct{} // capacity 1
	timer *time.Timer
}

type intakeState int

const (
	intakeConsuming intakeState = iota
	intakeNapping
	intakeSleeping
)

// Nap bounds: how long events may wait for the consumer, and how many.
const (
	napTime  = time.Millisecond
	napBatch = 256
)

// newIntake returns an intake for a queue whose items are charged against
// a budget of budget bytes.
func newIntake(budget int64) *intake {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &intake{bell: make(chan struct{}, 1), timer: t, napBytes: max(budget/4, 1)}
}

// push queues it; urgent ends a nap at once. It never blocks, and fails
// only once the intake is closed.
func (q *intake) push(it item, urgent bool) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	q.items = append(q.items, it)
	q.bytes += it.charge
	ring := q.state == intakeSleeping ||
		(q.state == intakeNapping && (urgent || len(q.items) >= napBatch || q.bytes >= q.napBytes))
	if ring {
		q.state = intakeConsuming
	}
	q.mu.Unlock()
	if ring {
		q.ring()
	}
	return nil
}

func (q *intake) ring() {
	select {
	case q.bell <- struct{}{}:
	default:
	}
}

// take returns every queued item (appended to dst[:0]), waiting for some;
// it returns nil once the intake is closed and drained.
func (q *intake) take(dst []item) []item {
	nap := true
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			dst = append(dst[:0], q.items...)
			clear(q.items)
			q.items = q.items[:0]
			q.bytes = 0
			q.state = intakeConsuming
			q.mu.Unlock()
			return dst
		}
		if q.closed {
			q.mu.Unlock()
			return nil
		}
		if nap {
			q.state = intakeNapping
		} else {
			q.state = intakeSleeping
		}
		q.mu.Unlock()
		if nap {
			q.timer.Reset(napTime)
			select {
			case <-q.bell:
				q.timer.Stop()
			case <-q.timer.C:
			}
			nap = false // nothing came during a nap: sleep next
		} else {
			<-q.bell
			nap = true
		}
	}
}

// close makes push fail and take return nil once the queue is drained.
func (q *intake) close() {
	q.mu.Lock()
	q.closed = true
	q.state = intakeConsuming
	q.mu.Unlock()
	q.ring()
}

// item is one unit of work for the pipeline: a logged event, or a barrier
// (wait set) that reports the last log position. An event comes as copy,
// the hook's copy of a step event, or as ev, the caller's decoding of
// its record (RecordEncoded) observed at at; else as buf, its encoded
// log record, which the pipeline decodes (and returns to the pool).
type item struct {
	pos    wal.Pos // the record's log position, once the hook logged it
	buf    *[]byte
	copy   *events.StepCopy
	charge int64
	wait   *waiter
	ev     events.Event
	at     time.Time
	// recClock: at is the recorder's clock (the event came without a
	// time); the log record says so too.
	recClock bool
}

// waiter lets a hook or Flush wait for the pipeline.
type waiter struct {
	pos  wal.Pos
	err  error
	done chan struct{}
}

var waiters = sync.Pool{New: func() any { return &waiter{done: make(chan struct{}, 1)} }}
