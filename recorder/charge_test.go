package recorder

import (
	"context"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

// TestHookCharges checks what a hook leaves in the queue and charges to
// its budget: an event that travels as the hook's copy or as the caller's
// decoding leaves its record only in the log (the buffer is back in the
// pool at once) and is charged what waits, the event, at least minCharge;
// a record the pipeline decodes waits in its buffer and is charged the
// buffer's capacity.
func TestHookCharges(t *testing.T) {
	const imageLane = 84 * 84 * 3
	at := time.Unix(1_700_000_000, 0).UTC()
	ids, rids := []string{"e0", "e1", "e2", "e3"}, []string{"r0", "r1", "r2", "r3"}
	action := &events.ActionReceived{SessionID: benchSession, Route: benchRoute, EpisodeID: "e0", EpisodeRecordID: "r0",
		EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: 3, ActionSpace: benchF32Box(1), Action: [][]byte{make([]byte, 4*8)}}
	image := &events.ObservationEmitted{SessionID: benchSession, Route: benchRoute, EpisodeID: "e0", EpisodeRecordID: "r0",
		EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: 3, NumEnvs: 4, ObservationSpace: benchU8Box(84, 84, 3),
		Observation: [][]byte{make([]byte, 4*imageLane)}} // beyond maxCopyPayload
	started := &events.EpisodeStarted{SessionID: benchSession, Route: benchRoute, EpisodeID: "e4", EpisodeRecordID: "r4"}
	encoded := func(r *Recorder, ev events.Event) error {
		msg, err := events.AppendMarshal(nil, ev, at)
		if err != nil {
			return err
		}
		d, got, err := (&events.Decoder{}).Decode(msg)
		if err != nil {
			return err
		}
		return r.RecordEncoded(context.Background(), msg, d, got, 0)
	}
	for _, tc := range []struct {
		name   string
		record func(*Recorder) error
		// carried: the event travels without its record (a copy or the
		// caller's decoding); least: the charge is at least this.
		carried bool
		least   int64
	}{
		{"copied action", func(r *Recorder) error { return r.RecordAt(context.Background(), action, at) }, true, minCharge},
		{"sequenced action, decoded by the pipeline", func(r *Recorder) error {
			return r.RecordSequenced(context.Background(), action, at, 7)
		}, false, 0},
		{"image batch beyond the copy bound, decoded by the pipeline", func(r *Recorder) error {
			return r.RecordAt(context.Background(), image, at)
		}, false, 4 * imageLane},
		{"encoded image batch", func(r *Recorder) error { return encoded(r, image) }, true, 2 * 4 * imageLane},
		{"encoded small event", func(r *Recorder) error { return encoded(r, started) }, true, minCharge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, recycle := hookOnly(t, 64<<20)
			defer recycle()
			// The only buffer in the pool, which the hook takes.
			own := make([]byte, 0, 1<<20+123)
			r.bufs.Put(&own)
			if err := tc.record(r); err != nil {
				t.Fatal(err)
			}
			if len(r.queue.items) != 1 {
				t.Fatalf("%d items queued, want 1", len(r.queue.items))
			}
			it := r.queue.items[0]
			pooled := r.bufs.Get(0) == &own
			if tc.carried {
				if it.buf != nil || !pooled || (it.copy == nil) == (it.ev == nil) {
					t.Fatalf("buffer queued %v, back in the pool %v, copy %v, event %v: want the event alone queued and its record's buffer in the pool",
						it.buf != nil, pooled, it.copy != nil, it.ev != nil)
				}
			} else if it.buf != &own || pooled || it.charge != int64(cap(own)) {
				t.Fatalf("buffer queued %v (charge %d), back in the pool %v: want the record queued, charged its buffer", it.buf != nil, it.charge, pooled)
			}
			if it.charge < tc.least || it.charge < minCharge {
				t.Fatalf("charged %d, want at least %d and %d", it.charge, tc.least, minCharge)
			}
			if it.copy != nil && it.charge != int64(max(it.copy.Footprint(), minCharge)) {
				t.Fatalf("copy charged %d, its footprint is %d", it.charge, it.copy.Footprint())
			}
			if got := r.queueBudget.inflight.Load(); got != it.charge {
				t.Fatalf("the room holds %d bytes, the item was charged %d", got, it.charge)
			}
		})
	}
}
