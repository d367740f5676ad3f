package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

// BenchmarkRun measures the lane-steps per second the simulator produces
// into NoopHooks, for each env and lane count: the cost later benchmarks
// of hooks implementations can subtract. One op is one session.
func BenchmarkRun(b *testing.B) {
	for _, name := range Envs() {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				cfg := Config{Env: name, NumEnvs: n, Autoreset: AutoresetNextStep, MaxEpisodes: 64,
					TimeLimit: 200, Seed: 1}
				b.ReportAllocs()
				var laneSteps int64
				start := time.Now()
				for b.Loop() {
					sum, err := Run(context.Background(), events.NoopHooks{}, cfg)
					if err != nil {
						b.Fatal(err)
					}
					laneSteps += sum.LaneSteps
				}
				b.ReportMetric(float64(laneSteps)/time.Since(start).Seconds(), "lane-steps/s")
			})
		}
	}
}
