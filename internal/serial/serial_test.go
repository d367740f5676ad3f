package serial

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueueOrder: the jobs of one queue run one at a time in submission
// order, while queues run in parallel.
func TestQueueOrder(t *testing.T) {
	for _, tc := range []struct {
		name            string
		workers, queues int
		jobs            int
	}{
		{"one-worker", 1, 4, 50},
		{"two-workers", 2, 8, 50},
		{"more-workers-than-queues", 8, 2, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPool(tc.workers)
			qs := make([]Queue, tc.queues)
			got := make([][]int, tc.queues)
			running := make([]atomic.Int32, tc.queues)
			for j := range tc.jobs {
				for i := range qs {
					p.Submit(&qs[i], func() {
						if running[i].Add(1) != 1 {
							t.Errorf("queue %d: two jobs at once", i)
						}
						got[i] = append(got[i], j)
						running[i].Add(-1)
					})
				}
			}
			p.Wait()
			for i := range qs {
				if len(got[i]) != tc.jobs {
					t.Fatalf("queue %d ran %d jobs, want %d", i, len(got[i]), tc.jobs)
				}
				for j, v := range got[i] {
					if v != j {
						t.Fatalf("queue %d ran job %d in place %d", i, v, j)
					}
				}
			}
			p.Stop()
		})
	}
}

// TestParallel: two queues run at the same time on two workers.
func TestParallel(t *testing.T) {
	p := NewPool(2)
	defer p.Stop()
	var a, b Queue
	var wg sync.WaitGroup
	wg.Add(2)
	meet := make(chan struct{})
	p.Submit(&a, func() { wg.Done(); <-meet })
	p.Submit(&b, func() { wg.Done(); <-meet })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the second queue did not start while the first ran")
	}
	close(meet)
	p.Wait()
}

// TestWaitWhileSubmitting: Wait returns once what was submitted, also
// during the wait, has run.
func TestWaitWhileSubmitting(t *testing.T) {
	p := NewPool(2)
	defer p.Stop()
	var q Queue
	var n atomic.Int32
	p.Submit(&q, func() {
		time.Sleep(10 * time.Millisecond)
		p.Submit(&q, func() { n.Add(1) })
		n.Add(1)
	})
	p.Wait()
	if n.Load() != 2 {
		t.Fatalf("Wait returned with %d of 2 jobs run", n.Load())
	}
}
