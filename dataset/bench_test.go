package dataset_test

import (
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/sim"
)

// BenchmarkSteps iterates the steps of one long cartpole episode and
// renders its observations as JSON (the replay --format jsonl path).
func BenchmarkSteps(b *testing.B) {
	root, sums := record(b, sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 1, MaxEpisodeSteps: 5000, Seed: 1})
	d, err := dataset.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	sid := dataset.Recording{SessionID: sums[0].SessionID, EnvID: sums[0].EnvID}
	var buf []byte
	rows := 0
	b.ReportAllocs()
	for b.Loop() {
		st, err := d.Steps(sid, "ep-000001")
		if err != nil {
			b.Fatal(err)
		}
		for st.Next() {
			buf, err = st.AppendObservationJSON(buf[:0])
			if err != nil {
				b.Fatal(err)
			}
			rows++
		}
		if err := st.Err(); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
}
