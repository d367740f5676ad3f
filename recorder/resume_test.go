package recorder_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// sequencedRun hands evs[from:to] to rec with RecordSequenced: each event
// numbered within its recording, stamped with a time fixed by its index,
// as a serve client would.
func sequencedRun(t *testing.T, rec *recorder.Recorder, evs []events.Event, seqs []uint64, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		at := time.Unix(1_700_000_000, int64(i)*1e6).UTC()
		if err := rec.RecordSequenced(context.Background(), evs[i], at, seqs[i]); err != nil {
			t.Fatalf("event %d (%s): %v", i, evs[i].Kind(), err)
		}
	}
}

// openResuming opens memRoot on fsys WithResume, each event synced.
func openResuming(t *testing.T, fsys vfs.FS) *recorder.Recorder {
	t.Helper()
	rec, err := recorder.Open(memRoot, fast, recorder.WithFS(fsys), recorder.WithResume(true), recorder.WithSyncPolicy(recorder.SyncEach))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// sequencedTables records evs, numbered seqs, uninterrupted into a new
// ROOT (openResuming) and returns its tables' dump.
func sequencedTables(t *testing.T, evs []events.Event, seqs []uint64) string {
	t.Helper()
	ref := vfs.NewMem()
	rec := openResuming(t, ref)
	sequencedRun(t, rec, evs, seqs, 0, len(evs))
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dump(t, readTables(t, ref, memRoot))
}

// closeResumed closes a recorder resumed on crashed and expects the
// tables of the uninterrupted run, want (sequencedTables).
func closeResumed(t *testing.T, rec *recorder.Recorder, crashed vfs.FS, want string) {
	t.Helper()
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, readTables(t, crashed, memRoot)); got != want {
		t.Errorf("tables after a resumed crash differ from an uninterrupted run:\n%s", diffLines(want, got))
	}
}

// numberEvents numbers evs within their recordings, from 1.
func numberEvents(evs []events.Event) []uint64 {
	next := map[[2]string]uint64{}
	seqs := make([]uint64, len(evs))
	for i, ev := range evs {
		sid, route := ev.Header()
		k := [2]string{sid, route.EnvID}
		next[k]++
		seqs[i] = next[k]
	}
	return seqs
}

// TestResumeAfterCrash crashes a recorder opened WithResume at every cut
// point, resumes on what the crash left, hands over the rest, and expects
// the tables of a run that never crashed; RecoveredSequence names the last
// event of each recording that was synced.
func TestResumeAfterCrash(t *testing.T) {
	evs := recoverySessions(t)
	seqs := numberEvents(evs)
	want := sequencedTables(t, evs, seqs)

	for _, cp := range cutPoints {
		t.Run(cp.name, func(t *testing.T) {
			cut := cp.at(evs)
			mem := vfs.NewMem()
			rec := openResuming(t, mem)
			sequencedRun(t, rec, evs, seqs, 0, cut)
			crashed := mem.Crash()
			t.Cleanup(func() { rec.Close(context.Background()) })

			rec2 := openResuming(t, crashed)
			last := map[[2]string]uint64{}
			for i := range cut {
				sid, route := evs[i].Header()
				last[[2]string{sid, route.EnvID}] = seqs[i]
			}
			for k, seq := range last {
				ended := false
				for i := range cut {
					sid, route := evs[i].Header()
					if [2]string{sid, route.EnvID} == k && evs[i].Kind() == events.KindTelemetrySnapshot {
						if e := evs[i].(*events.TelemetrySnapshot); e.Snapshot.Horizon == events.HorizonSession && i < cut {
							ended = true
						}
					}
				}
				if got := rec2.RecoveredSequence(k[0], k[1]); got != seq && !ended {
					t.Errorf("recording %v: RecoveredSequence = %d, want %d", k, got, seq)
				}
			}
			sequencedRun(t, rec2, evs, seqs, cut, len(evs))
			closeResumed(t, rec2, crashed, want)
			assertEmptyLog(t, crashed, memRoot)
		})
	}
}

// TestResumeAcrossClose closes a resuming recorder mid-run: the open
// recordings stay in the log, and the next Open continues them.
func TestResumeAcrossClose(t *testing.T) {
	evs := recoverySessions(t)
	seqs := numberEvents(evs)
	mem := vfs.NewMem()
	opts := []recorder.Option{fast, recorder.WithFS(mem), recorder.WithResume(true)}
	half := len(evs) / 2
	rec, err := recorder.Open(memRoot, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sequencedRun(t, rec, evs, seqs, 0, half)
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err = recorder.Open(memRoot, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Resumed() == 0 {
		t.Fatalf("Open resumed no recording after a Close mid-run")
	}
	sequencedRun(t, rec, evs, seqs, half, len(evs))
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := readTables(t, mem, memRoot)

	ref := vfs.NewMem()
	rec, err = recorder.Open(memRoot, fast, recorder.WithFS(ref))
	if err != nil {
		t.Fatal(err)
	}
	sequencedRun(t, rec, evs, seqs, 0, len(evs))
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want, got := dump(t, readTables(t, ref, memRoot)), dump(t, got); got != want {
		t.Errorf("tables after a resumed Close differ from an uninterrupted run:\n%s", diffLines(want, got))
	}
	assertEmptyLog(t, mem, memRoot)
}

// TestResumeFromSnapshot crashes twice a resuming recorder whose log is
// cut into small segments, so that it snapshots its state and removes the
// segments before it while the sessions run: each Open restores the
// snapshot (with each recording's sequence number) and resumes, and the
// tables end as those of a run that never crashed.
func TestResumeFromSnapshot(t *testing.T) {
	for _, wl := range snapshotWorkloads {
		t.Run(wl.name, func(t *testing.T) {
			var each [][]events.Event
			for _, cfg := range wl.cfgs {
				each = append(each, simEvents(t, []sim.Config{cfg}))
			}
			evs := interleave(each...)
			seqs := numberEvents(evs)
			segment := int64(32 << 10)
			if wl.images {
				segment = 64 << 10
			}
			opts := func(fsys vfs.FS) []recorder.Option {
				return []recorder.Option{fast, recorder.WithFS(fsys), recorder.WithSyncPolicy(recorder.SyncEach), recorder.WithMemoryBudget(16 << 20),
					recorder.WithSegmentSize(segment), recorder.WithReclaimEvery(64), recorder.WithResume(true)}
			}
			// chunks hands evs[from:to] over in chunks, letting the writers
			// catch up in between so that snapshots get sealed.
			chunks := func(rec *recorder.Recorder, from, to int) {
				for i := from; i < to; i += 150 {
					sequencedRun(t, rec, evs, seqs, i, min(i+150, to))
					if err := rec.Settle(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			ref := vfs.NewMem()
			rec, err := recorder.Open(memRoot, opts(ref)...)
			if err != nil {
				t.Fatal(err)
			}
			chunks(rec, 0, len(evs))
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := dump(t, readTables(t, ref, memRoot))

			fsys := vfs.NewMem()
			cuts := []int{0, len(evs) / 3, len(evs) * 2 / 3, len(evs)}
			for i := 1; i < len(cuts); i++ {
				rec, err := recorder.Open(memRoot, opts(fsys)...)
				if err != nil {
					t.Fatalf("open %d: %v", i, err)
				}
				// A recording whose files were written may be gone from the
				// log (0); any other reports its last event.
				known := 0
				for k, seq := range lastSeqs(evs[:cuts[i-1]], seqs) {
					got := rec.RecoveredSequence(k[0], k[1])
					if got != 0 && got != seq {
						t.Errorf("open %d: recording %v: RecoveredSequence = %d, want %d", i, k, got, seq)
					}
					if got != 0 {
						known++
					}
				}
				if i > 1 && (rec.Resumed() == 0 || known == 0) {
					t.Errorf("open %d resumed %d recordings and knows the sequence of %d", i, rec.Resumed(), known)
				}
				chunks(rec, cuts[i-1], cuts[i])
				if i == len(cuts)-1 {
					if err := rec.Close(context.Background()); err != nil {
						t.Fatal(err)
					}
					break
				}
				if rec.SealedAsOf() == 0 {
					t.Errorf("run %d sealed no snapshot", i)
				}
				fsys = fsys.Crash()
				t.Cleanup(func() { rec.Close(context.Background()) })
			}
			if got := dump(t, readTables(t, fsys, memRoot)); got != want {
				t.Errorf("tables after two resumed crashes differ from an uninterrupted run:\n%s", diffLines(want, got))
			}
			assertEmptyLog(t, fsys, memRoot)
		})
	}
}

// lastSeqs returns the last sequence number of each recording in evs.
func lastSeqs(evs []events.Event, seqs []uint64) map[[2]string]uint64 {
	last := map[[2]string]uint64{}
	for i, ev := range evs {
		sid, route := ev.Header()
		last[[2]string{sid, route.EnvID}] = seqs[i]
	}
	return last
}
