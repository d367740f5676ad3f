package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

// BenchmarkRun measures the lane-steps per second the simulator produces
// into NoopHooks, for each env, lane count and order (rlmesh 0.1, rc.5,
// and 0.1 with a lane-served env): the cost later benchmarks of hooks
// implementations can subtract. One op is one session.
func BenchmarkRun(b *testing.B) {
	for _, name := range Envs() {
		for _, n := range []int{1, 16} {
			for _, v := range []struct {
				name   string
				order  Order
				served bool
			}{{"0.1", Order01, false}, {"rc5", OrderRC5, false}, {"0.1-served", Order01, true}} {
				if v.served && n == 1 {
					continue
				}
				b.Run(fmt.Sprintf("%s/n=%d/%s", name, n, v.name), func(b *testing.B) {
					cfg := Config{Env: name, NumEnvs: n, Autoreset: AutoresetNextStep, MaxEpisodes: 64,
						TimeLimit: 200, Seed: 1, Order: v.order, LaneServed: v.served}
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
}
