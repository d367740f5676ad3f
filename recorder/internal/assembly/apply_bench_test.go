package assembly

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/sim"
)

// BenchmarkApply measures the assembly stage alone, per row: the events of
// the simulated session the recorder's BenchmarkLayoutRecord records
// (cartpole, 16 lanes, NEXT_STEP autoreset, 2,000 episodes), decoded
// once as the recorder decodes them, folded into a new Assembler per op whose output recycles what it
// receives, as the writer does once it wrote it. ns/row is per lane step,
// cpu-ns/row the process's CPU time (user and system, garbage collection
// included) per lane step, which holds better than the wall time on a
// loaded machine.
func BenchmarkApply(b *testing.B) {
	type timed struct {
		ev events.Event
		at time.Time
	}
	var stream bytes.Buffer
	w := events.NewStreamWriter(&stream)
	cfg := sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep,
		MaxEpisodes: 2000, TimeLimit: 200, Seed: 1}
	sum, err := sim.Run(context.Background(), sim.NewStreamHooks(w), cfg)
	if err != nil {
		b.Fatal(err)
	}
	// Decoded as the recorder decodes what it logged: one Decoder, whose
	// events share a spec while it is unchanged (so does a step copy).
	var evs []timed
	var dec events.Decoder
	r := events.NewStreamReader(&stream, 0)
	for r.Next() {
		ev, at, err := dec.Decode(r.Message())
		if err != nil {
			b.Fatal(err)
		}
		evs = append(evs, timed{ev, at})
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	end := evs[len(evs)-1].at
	var rows int64
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		a := New(discard{}, 256<<20)
		for i, e := range evs {
			a.Apply(e.ev, e.at, uint64(i+1))
		}
		a.FinishAll(StatusOpen, end, false)
		rows += sum.LaneSteps
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(rows), "cpu-ns/row")
	}
}
