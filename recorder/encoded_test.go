package recorder_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// encodedRun hands evs[from:to] to rec as a server does with its clients'
// messages: each event encoded with its time and sequence number (as
// sequencedRun stamps them), decoded again by one Decoder, and handed over
// with RecordEncoded.
func encodedRun(t *testing.T, rec *recorder.Recorder, dec *events.Decoder, evs []events.Event, seqs []uint64, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		at := time.Unix(1_700_000_000, int64(i)*1e6).UTC()
		msg, err := events.AppendMarshal(nil, evs[i], at)
		if err != nil {
			t.Fatalf("encode event %d: %v", i, err)
		}
		msg = events.AppendSequence(msg, seqs[i])
		ev, got, err := dec.Decode(msg)
		if err != nil {
			t.Fatalf("decode event %d: %v", i, err)
		}
		if err := rec.RecordEncoded(context.Background(), msg, ev, got, dec.Sequence()); err != nil {
			t.Fatalf("event %d (%s): %v", i, evs[i].Kind(), err)
		}
		// The caller keeps msg: the recorder copied it.
		clear(msg)
	}
}

// TestRecordEncoded records the recovery sessions through RecordEncoded
// and expects the tables RecordSequenced gives, both in one run and when
// the recorder crashes at every cut point and resumes (recovery decodes
// the logged messages), with the same RecoveredSequence.
func TestRecordEncoded(t *testing.T) {
	evs := recoverySessions(t)
	seqs := numberEvents(evs)
	want := sequencedTables(t, evs, seqs)

	t.Run("uninterrupted", func(t *testing.T) {
		mem := vfs.NewMem()
		rec := openResuming(t, mem)
		encodedRun(t, rec, &events.Decoder{}, evs, seqs, 0, len(evs))
		if err := rec.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, readTables(t, mem, memRoot)); got != want {
			t.Errorf("tables of RecordEncoded differ from RecordSequenced's:\n%s", diffLines(want, got))
		}
	})
	for _, cp := range cutPoints {
		t.Run("crash "+cp.name, func(t *testing.T) {
			cut := cp.at(evs)
			mem := vfs.NewMem()
			rec := openResuming(t, mem)
			encodedRun(t, rec, &events.Decoder{}, evs, seqs, 0, cut)
			crashed := mem.Crash()
			t.Cleanup(func() { rec.Close(context.Background()) })

			// The same crash after RecordSequenced: the recovered
			// numbers must agree.
			memSeq := vfs.NewMem()
			recSeq := openResuming(t, memSeq)
			sequencedRun(t, recSeq, evs, seqs, 0, cut)
			crashedSeq := memSeq.Crash()
			t.Cleanup(func() { recSeq.Close(context.Background()) })
			recSeq2 := openResuming(t, crashedSeq)
			t.Cleanup(func() { recSeq2.Close(context.Background()) })

			rec2 := openResuming(t, crashed)
			for k := range lastSeqs(evs[:cut], seqs[:cut]) {
				if got, want := rec2.RecoveredSequence(k[0], k[1]), recSeq2.RecoveredSequence(k[0], k[1]); got != want {
					t.Errorf("recording %v: RecoveredSequence = %d after RecordEncoded, %d after RecordSequenced", k, got, want)
				}
			}
			encodedRun(t, rec2, &events.Decoder{}, evs, seqs, cut, len(evs))
			closeResumed(t, rec2, crashed, want)
			assertEmptyLog(t, crashed, memRoot)
		})
	}
}

// TestRecordEncodedRefusals: what RecordEncoded refuses before anything
// is logged.
func TestRecordEncodedRefusals(t *testing.T) {
	evs := recoverySessions(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	msg, err := events.AppendMarshal(nil, evs[0], at)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		msg  []byte
		ev   events.Event
		at   time.Time
		want error
	}{
		{"nil event", msg, nil, at, events.ErrNilEvent},
		{"zero time", msg, evs[0], time.Time{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			rec, err := recorder.Open(memRoot, fast, recorder.WithFS(mem))
			if err != nil {
				t.Fatal(err)
			}
			err = rec.RecordEncoded(context.Background(), tc.msg, tc.ev, tc.at, 1)
			if err == nil {
				t.Fatal("RecordEncoded succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tb := readTables(t, mem, memRoot); len(tb.sessions) != 0 {
				t.Errorf("a refused event was recorded: %d sessions", len(tb.sessions))
			}
		})
	}
}

// TestRecordEncodedSnapshot: the sequence numbers of events handed over
// with RecordEncoded reach the snapshots, so a recorder that crashes after
// a sealed snapshot (and removed the log before it) still reports them.
func TestRecordEncodedSnapshot(t *testing.T) {
	wl := snapshotWorkloads[0]
	var each [][]events.Event
	for _, cfg := range wl.cfgs {
		each = append(each, simEvents(t, []sim.Config{cfg}))
	}
	evs := interleave(each...)
	seqs := numberEvents(evs)
	opts := func(fsys vfs.FS) []recorder.Option {
		return []recorder.Option{fast, recorder.WithFS(fsys), recorder.WithSyncPolicy(recorder.SyncEach), recorder.WithMemoryBudget(16 << 20),
			recorder.WithSegmentSize(32 << 10), recorder.WithReclaimEvery(64), recorder.WithResume(true)}
	}
	ref := vfs.NewMem()
	rec, err := recorder.Open(memRoot, opts(ref)...)
	if err != nil {
		t.Fatal(err)
	}
	sequencedRun(t, rec, evs, seqs, 0, len(evs))
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := dump(t, readTables(t, ref, memRoot))

	mem := vfs.NewMem()
	rec, err = recorder.Open(memRoot, opts(mem)...)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(evs) / 2
	dec := &events.Decoder{}
	for i := 0; i < cut; i += 150 {
		encodedRun(t, rec, dec, evs, seqs, i, min(i+150, cut))
		if err := rec.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if rec.SealedAsOf() == 0 {
		t.Fatal("no snapshot sealed")
	}
	ended := map[[2]string]bool{}
	for _, ev := range evs[:cut] {
		if e, ok := ev.(*events.TelemetrySnapshot); ok && e.Snapshot.Horizon == events.HorizonSession {
			sid, route := ev.Header()
			ended[[2]string{sid, route.EnvID}] = true
		}
	}
	// What the snapshots take the numbers from.
	for k, seq := range lastSeqs(evs[:cut], seqs) {
		if got := rec.AssembledSequence(k[0], k[1]); got != seq && (got != 0 || !ended[k]) {
			t.Errorf("recording %v: assembled sequence %d, want %d", k, got, seq)
		}
	}
	crashed := mem.Crash()
	t.Cleanup(func() { rec.Close(context.Background()) })
	rec2, err := recorder.Open(memRoot, opts(crashed)...)
	if err != nil {
		t.Fatal(err)
	}
	for k, seq := range lastSeqs(evs[:cut], seqs) {
		// A recording whose files were written may be gone (0).
		if got := rec2.RecoveredSequence(k[0], k[1]); got != seq && (got != 0 || !ended[k]) {
			t.Errorf("recording %v: RecoveredSequence = %d, want %d", k, got, seq)
		}
	}
	encodedRun(t, rec2, &events.Decoder{}, evs, seqs, cut, len(evs))
	closeResumed(t, rec2, crashed, want)
}
