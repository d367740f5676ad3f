package recorder

import (
	"context"
	"testing"
	"time"
)

// TestQueueRoom: the hooks' room starts at an eighth of the queue's
// share, doubles only once the pipeline caught up after a hook waited,
// grows at once to hold an event larger than it, and never passes the
// share.
func TestQueueRoom(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		share int64
		start int64
	}{
		{"default budget", 32 << 20, 4 << 20},
		{"small share", 4 << 20, 1 << 20},
		{"share under the least room", 512 << 10, 512 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueueRoom(tc.share)
			if got := q.room.Load(); got != tc.start {
				t.Fatalf("room %d at the start, want %d", got, tc.start)
			}
			// Filling the room does not wait.
			for range 4 {
				if err := q.acquire(ctx, tc.start/4); err != nil {
					t.Fatal(err)
				}
			}
			if q.waited.Load() {
				t.Fatal("a hook waited within the room")
			}
			// Releasing without a wait does not grow the room.
			q.release(tc.start / 4)
			if err := q.acquire(ctx, tc.start/4); err != nil {
				t.Fatal(err)
			}
			if got := q.room.Load(); got != tc.start {
				t.Fatalf("room %d with no hook waiting, want %d", got, tc.start)
			}
			// A full room makes the next hook wait until there is room.
			done := make(chan error, 1)
			go func() { done <- q.acquire(ctx, tc.start/4) }()
			deadline := time.Now().Add(10 * time.Second)
			for !q.waited.Load() {
				if time.Now().After(deadline) {
					t.Fatal("the hook never waited for room")
				}
				time.Sleep(time.Millisecond)
			}
			for range 4 {
				q.release(tc.start / 4)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// The pipeline catches up after the wait: the room doubles.
			q.release(tc.start / 4)
			want := min(2*tc.start, tc.share)
			if got := q.room.Load(); got != want {
				t.Fatalf("room %d after the pipeline caught up from a wait, want %d", got, want)
			}
			// An event larger than the room makes room for itself.
			big := tc.share
			if err := q.acquire(ctx, big); err != nil {
				t.Fatal(err)
			}
			if got := q.room.Load(); got != tc.share {
				t.Fatalf("room %d after an event of %d, want the share %d", got, big, tc.share)
			}
			if q.sem.TryAcquire(1) {
				t.Fatal("the room passed the share")
			}
			q.release(big)
			if q.inflight.Load() != 0 {
				t.Fatalf("%d bytes still charged", q.inflight.Load())
			}
		})
	}
}
