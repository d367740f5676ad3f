package dataset_test

import (
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
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

// BenchmarkReplay rebuilds the event stream of a 16-lane cartpole session
// of about 3,000 episodes, recorded in each steps layout. Packed files
// (layout session) hold many episodes per row group, so this is where
// reading a row group once per episode, rather than once, shows.
func BenchmarkReplay(b *testing.B) {
	for _, layout := range []hive.Layout{hive.LayoutEpisode, hive.LayoutSession} {
		b.Run(string(layout), func(b *testing.B) {
			root, sums := recordWith(b, []recorder.Option{recorder.WithLayout(layout)},
				sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3000, Seed: 1})
			sum := sums[0]
			d, err := dataset.Open(root)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				rep, err := d.ReplayEvents(dataset.Recording{SessionID: sum.SessionID, EnvID: sum.EnvID}, func(events.Event, time.Time) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				n += rep.Events
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
