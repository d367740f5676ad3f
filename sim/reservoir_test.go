package sim

import (
	"testing"

	"github.com/rlrec/rlrec/events"
)

// TestReservoirMatchesRlmesh: the reservoir draws rlmesh's xorshift64*
// sequence and keeps the samples rlmesh's keeps, so past 8,192 samples
// the quantiles match. The expected values come from an independent
// transcription of rlmesh's Reservoir::push and stats::summary
// (crates/rlmesh-runtime/src/telemetry, v0.1.0-rc.5).
func TestReservoirMatchesRlmesh(t *testing.T) {
	r := newReservoir()
	for i, want := range []uint64{0x0d83b3e29a21487a, 0x54c44c79f1fe9d67, 0xa845f342007a0e78} {
		if got := r.next(); got != want {
			t.Fatalf("draw %d: %#x, want %#x", i, got, want)
		}
	}
	m := newMeter(false)
	batch := make([]sample, 0, 20000)
	for i := range 20000 {
		batch = append(batch, sample{predictRPC, float64(i)})
	}
	m.add(batch)
	snap := m.snapshot(events.HorizonSession)
	if len(snap.Rows) != 1 {
		t.Fatalf("%d rows", len(snap.Rows))
	}
	row := snap.Rows[0]
	if row.Count != 20000 || row.Avg != 10018.216186523438 || row.P50 != 10072 || row.P95 != 19017 || row.P99 != 19804 {
		t.Fatalf("row %+v, want count 20000 avg 10018.216186523438 p50 10072 p95 19017 p99 19804", row)
	}
}
