package curate_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlrec/rlrec/curate"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// BenchmarkCopy copies a cartpole ROOT of about 12,000 steps (8 lanes,
// layout session) without a progress callback and with the steps progress,
// which counts the rows of every action event: the two should cost the
// same. Steps per second are reported.
func BenchmarkCopy(b *testing.B) {
	src := filepath.Join(b.TempDir(), "src")
	rec, err := recorder.Open(src, recorder.WithLayout(hive.LayoutSession))
	if err != nil {
		b.Fatal(err)
	}
	cfg := sim.Config{SessionID: "bench", Env: "cartpole", NumEnvs: 8, Autoreset: sim.AutoresetNextStep,
		MaxEpisodes: 600, TimeLimit: 40, Seed: 1, Clock: sim.StepClock(roottest.Epoch, time.Millisecond)}
	if _, err := sim.RunSessions(context.Background(), rec, []sim.Config{cfg}); err != nil {
		b.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		progress bool
	}{{"no progress", false}, {"steps progress", true}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var steps, calls int64
			for i := range b.N {
				var opts []curate.Option
				if tc.progress {
					opts = append(opts, curate.WithStepsProgress(func(done, total int64) { calls++ }))
				}
				rep, err := curate.Copy(context.Background(), src, filepath.Join(b.TempDir(), fmt.Sprint(i)), opts...)
				if err != nil {
					b.Fatal(err)
				}
				steps += rep.Targets[0].Steps
			}
			b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
			if tc.progress {
				b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
			}
		})
	}
}
