package recorder

import (
	"context"
	"github.com/rlrec/rlrec/internal/hive"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
)

// TestSnapshotEpisodeGrowsPastInline: an episode held with its rows by one
// snapshot and left to the log by a later one (it grew past inlineRowsMax)
// must still be rebuilt whole after the first snapshot let the log go: the
// log is kept from the first event of every episode open at a snapshot.
func TestSnapshotEpisodeGrowsPastInline(t *testing.T) {
	src := t.TempDir()
	r, err := Open(src, WithCompression(CompressionNone), withSegmentSize(8<<10), withReclaimEvery(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	ctx := context.Background()
	// Each Flush looks for a snapshot to take, then to seal, then whether
	// its seal is synced (and removes segments): four rounds take a
	// snapshot of everything applied and seal it. A seal appended after
	// the writer took its batch waits for the log's next sync, so after
	// those four, flush until done reports the state (the deadline only
	// bounds a failure).
	settle := func(done func() bool) {
		deadline := time.Now().Add(time.Minute)
		for i := 0; i < 4 || !done() && time.Now().Before(deadline); i++ {
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := r.w.wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	d := newBenchDriver(r, "grow", 1, benchU8Box(64), 64)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range d.obs[0] {
		d.obs[0][i] = byte(rng.Uint32()) // incompressible: the log spans segments
	}
	d.start()
	d.steps(100) // about 10 KiB of rows: in the snapshot
	settle(func() bool { return r.ckpt.sealedAsOf != 0 })
	first := r.ckpt.sealedAsOf
	if first == 0 {
		t.Fatalf("no snapshot sealed after 100 steps: %+v", r.ckpt)
	}
	d.steps(900) // about 80 KiB of rows: past inlineRowsMax
	settle(func() bool { return r.ckpt.sealedAsOf > first })
	if r.ckpt.sealedAsOf <= first {
		t.Fatalf("no later snapshot sealed: %+v", r.ckpt)
	}
	if !r.asm.External(hive.Recording{SessionID: "grow", EnvID: benchRoute.EnvID}, d.rids[0]) {
		t.Fatalf("the episode is not left to the log by the second snapshot")
	}

	dst := t.TempDir()
	copyDir(t, src, dst) // the recorder is still open: a crash
	rec, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	rep := rec.Recovered()
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !rep.Snapshot || rep.Rebuilt != 1 {
		t.Errorf("recovery %+v: want it from a snapshot, one episode rebuilt", rep)
	}
	ds, err := dataset.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := ds.Episodes(dataset.Recording{SessionID: "grow", EnvID: benchRoute.EnvID})
	if err != nil || len(eps) != 1 {
		t.Fatalf("episodes: %v, %v", eps, err)
	}
	if got := eps[0].Row.StepsRecorded; got != 1000 {
		t.Errorf("steps_recorded %d, want 1000", got)
	}
	steps, err := ds.Steps(dataset.Recording{SessionID: "grow", EnvID: benchRoute.EnvID}, d.rids[0])
	if err != nil {
		t.Fatal(err)
	}
	defer steps.Close()
	n := 0
	for steps.Next() {
		if st := steps.Step(); st.Step != int64(n) {
			t.Fatalf("row %d has step %d", n, st.Step)
		}
		n++
	}
	if err := steps.Err(); err != nil || n != 1000 {
		t.Errorf("%d steps rows (%v), want 1000", n, err)
	}
}
