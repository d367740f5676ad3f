package recorder

import (
	"errors"
	"testing"
	"time"
)

func TestIntakeRings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		state   intakeState
		queued  int // items already queued; -1: one of 1 MiB
		urgent  bool
		ring    bool
		endsNap bool
	}{
		{"consuming: no ring", intakeConsuming, 0, false, false, false},
		{"consuming, urgent: no ring, it will be taken", intakeConsuming, 0, true, false, false},
		{"napping: waits for the nap", intakeNapping, 0, false, false, false},
		{"napping, urgent: rings", intakeNapping, 0, true, true, true},
		{"napping, a batch piled up: rings", intakeNapping, napBatch - 1, false, true, true},
		{"napping, a quarter of the budget piled up: rings", intakeNapping, -1, false, true, true},
		{"sleeping: rings", intakeSleeping, 0, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newIntake(4 << 20)
			for range tc.queued {
				q.items = append(q.items, item{})
			}
			if tc.queued < 0 { // one large item queued already
				q.items, q.bytes = append(q.items, item{charge: 1 << 20}), 1<<20
			}
			q.state = tc.state
			if err := q.push(item{charge: 1}, tc.urgent); err != nil {
				t.Fatal(err)
			}
			if rang := len(q.bell) == 1; rang != tc.ring {
				t.Errorf("rang %v, want %v", rang, tc.ring)
			}
			if tc.endsNap && q.state != intakeConsuming {
				t.Errorf("state %d after ringing, want consuming", q.state)
			}
		})
	}
}

func TestIntakeTakeAndClose(t *testing.T) {
	q := newIntake(4 << 20)
	for i := range 5 {
		if err := q.push(item{charge: int64(i)}, false); err != nil {
			t.Fatal(err)
		}
	}
	got := q.take(nil)
	if len(got) != 5 {
		t.Fatalf("took %d items, want 5", len(got))
	}
	for i, it := range got {
		if it.charge != int64(i) {
			t.Fatalf("item %d has charge %d: out of order", i, it.charge)
		}
	}

	// A consumer that finds nothing naps, then sleeps; an event pushed
	// while it sleeps wakes it at once.
	done := make(chan []item)
	go func() { done <- q.take(got) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(napTime) {
		q.mu.Lock()
		state := q.state
		q.mu.Unlock()
		if state == intakeSleeping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %d 10 s after an idle nap began, want sleeping", state)
		}
	}
	if err := q.push(item{charge: 9}, false); err != nil {
		t.Fatal(err)
	}
	select {
	case got = <-done:
		if len(got) != 1 || got[0].charge != 9 {
			t.Fatalf("took %v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a sleeping consumer was not woken")
	}

	// Close: what is queued is still taken, then take returns nil.
	q.push(item{charge: 10}, false)
	q.close()
	if err := q.push(item{}, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("push after close: %v", err)
	}
	if got = q.take(got); len(got) != 1 || got[0].charge != 10 {
		t.Fatalf("took %v after close, want the queued item", got)
	}
	if got = q.take(got); got != nil {
		t.Fatalf("took %v from a closed, drained intake", got)
	}
}
