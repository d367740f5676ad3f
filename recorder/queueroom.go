package recorder

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// queueRoom is the queue's share of the memory budget
// (memoryBudget.queue) as the hooks see it: the bytes of events queued
// for the pipeline, charged from a hook until the event is applied. The
// share is a bound, not a target: a new recorder hands the hooks an
// eighth of it (queueRoomStart at least), and doubles their room only
// when it did not absorb a burst, that is once the pipeline has caught up
// (nothing charged) after a hook had to wait for room. A source faster
// than the pipeline for a whole session fills any room, and the hooks
// then wait at the pipeline's pace whatever the room; before, they ran
// the full share ahead, and each new recorder allocated and faulted in
// its share of record buffers (32 MiB under the default budget) in its
// first seconds. An event larger than the room grows the room to hold it
// (an event is at most half the share, maxEvent).
type queueRoom struct {
	sem *semaphore.Weighted
	max int64
	// room is the bytes the hooks may hold, max less what sem holds back
	// (withheld); written under mu.
	room     atomic.Int64
	inflight atomic.Int64 // bytes charged and not yet released
	waited   atomic.Bool  // a hook waited for room since the last growth

	mu       sync.Mutex
	withheld int64
}

// queueRoomStart is the least room a new recorder starts with.
const queueRoomStart = 1 << 20

func newQueueRoom(share int64) *queueRoom {
	q := &queueRoom{sem: semaphore.NewWeighted(share), max: share}
	start := min(share, max(share/8, queueRoomStart))
	q.withheld = share - start
	q.sem.TryAcquire(q.withheld) // nothing is held yet: it succeeds
	q.room.Store(start)
	return q
}

// acquire charges n bytes (at most max), waiting for room.
func (q *queueRoom) acquire(ctx context.Context, n int64) error {
	if n > q.room.Load() {
		q.grow(n) // an event larger than the room widens it to hold it
	}
	if !q.sem.TryAcquire(n) {
		q.waited.Store(true)
		if err := q.sem.Acquire(ctx, n); err != nil {
			return err
		}
	}
	q.inflight.Add(n)
	return nil
}

// release returns n charged bytes; the room grows once everything
// charged is released after a hook waited.
func (q *queueRoom) release(n int64) {
	q.sem.Release(n)
	if q.inflight.Add(-n) == 0 && q.waited.Load() {
		q.grow(2 * q.room.Load())
	}
}

// grow raises the room to at least want bytes (at most max).
func (q *queueRoom) grow(want int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waited.Store(false)
	room := q.max - q.withheld
	if want <= room || q.withheld == 0 {
		return
	}
	give := min(want-room, q.withheld)
	q.withheld -= give
	q.room.Store(room + give)
	q.sem.Release(give)
}
