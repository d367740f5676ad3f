package recorder

import (
	"log/slog"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// hookOnly returns a Recorder with the hook side only: its log (which the
// hooks append to, on the OS file system, so through the mapped pending
// file) and no pipeline goroutines, so that allocations counted while its
// hooks run are the hooks' own; the log's writer runs only when its
// pending bytes fill up. recycle plays the consumer: it returns the queued
// buffers and their budget.
func hookOnly(t *testing.T, budget int64) (r *Recorder, recycle func()) {
	l, err := wal.Open(vfs.OS(), t.TempDir(), wal.Options{SyncInterval: time.Hour, FlushSize: 1 << 30, MaxPending: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	mem := vfs.NewMem()
	r = &Recorder{opts: defaultOptions(), fs: mem, st: store.NewFS(mem, "/hook-only"), root: "/hook-only", log: l, queueMax: budget, queueBudget: newQueueRoom(budget), queue: newIntake(budget),
		maxEvent: wal.MaxRecordSize, fatal: &fatal{log: slog.New(slog.DiscardHandler)},
		refused: map[hive.Recording]struct{}{}, admitted: map[hive.Recording]struct{}{}}
	r.queue.items = make([]item, 0, 1024)
	r.bufs.Max = budget
	return r, func() {
		for _, it := range r.queue.items {
			if it.buf != nil {
				r.bufs.Put(it.buf)
			}
			if it.copy != nil {
				r.copies.Recycle(it.copy)
			}
			r.queueBudget.release(it.charge)
		}
		clear(r.queue.items)
		r.queue.items, r.queue.bytes = r.queue.items[:0], 0
	}
}

// TestHookAllocations measures what a hook call allocates, apart from the
// pipeline: the target is at most 2 per call; by design it is none
// once the buffer pool is warm (a recycled buffer, an item passed by value).
func TestHookAllocations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lanes     int
		laneBytes int
	}{
		{"cartpole 16 lanes", 16, 16},
		{"images 8 lanes", 8, 84 * 84 * 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, recycle := hookOnly(t, 64<<20)
			spec := benchF32Box(4)
			if tc.laneBytes > 16 {
				spec = benchU8Box(84, 84, 3)
			}
			d := newBenchDriver(r, benchSession, tc.lanes, spec, tc.laneBytes)
			d.start()
			step := func() {
				d.action()
				recycle()
				d.stepDone()
				recycle()
				d.observe()
				recycle()
			}
			for range 10 { // warm the buffer pool
				step()
			}
			perStep := testing.AllocsPerRun(200, step)
			if perCall := perStep / 3; perCall != 0 {
				t.Fatalf("%.2f allocations per hook call (target at most 2; by design 0)", perCall)
			}
		})
	}
}
