package report

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
	"github.com/rlrec/rlrec/stats"
)

// BenchmarkReport builds and renders the report of one recording: 5,000
// cartpole episodes (16 lanes, next-step autoreset, 200-step cap; about
// 230,000 steps rows) in each layout, and 200 pick-place episodes (8
// lanes, 84x84x3 frames; about 6,000 rows). Each op also runs
// stats.Compute alone on the same recording, in alternating order, so
// the report's cost over the statistics it cannot avoid is a ratio
// measured in one run. Reports ms per report and per stats pass
// (medians over the ops), their ratio, and the page's size.
func BenchmarkReport(b *testing.B) {
	cases := []struct {
		name   string
		layout hive.Layout
		cfg    sim.Config
	}{
		{"cartpole-5000/session", hive.LayoutSession, sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5000, TimeLimit: 200, Seed: 1}},
		{"cartpole-5000/episode", hive.LayoutEpisode, sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5000, TimeLimit: 200, Seed: 1}},
		{"pick-place-200/episode", hive.LayoutEpisode, sim.Config{Env: "pick-place", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 200, Seed: 2}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			root := roottest.Record(b, []sim.Config{tc.cfg}, recorder.WithLayout(tc.layout))
			d, err := dataset.Open(root)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			recs := d.Recordings()
			var reportMs, statsMs []float64
			var size int
			var eps int
			report := func() {
				start := time.Now()
				rep, err := Build(context.Background(), d, recs)
				if err != nil {
					b.Fatal(err)
				}
				var page bytes.Buffer
				if err := rep.WriteHTML(&page); err != nil {
					b.Fatal(err)
				}
				reportMs = append(reportMs, float64(time.Since(start).Microseconds())/1000)
				size, eps = page.Len(), rep.Recordings[0].Episodes
			}
			statsOnly := func() {
				start := time.Now()
				if _, err := stats.Compute(context.Background(), d, recs); err != nil {
					b.Fatal(err)
				}
				statsMs = append(statsMs, float64(time.Since(start).Microseconds())/1000)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					report()
					statsOnly()
				} else {
					statsOnly()
					report()
				}
				i++
			}
			rm, sm := median(reportMs), median(statsMs)
			b.ReportMetric(rm, "report-ms")
			b.ReportMetric(sm, "stats-ms")
			b.ReportMetric(rm/sm, "report/stats")
			b.ReportMetric(float64(size)/1e3, "page-kB")
			b.ReportMetric(float64(eps), "episodes")
		})
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkPlots renders the plots of 5,000 values, as a report of a
// 5,000-episode recording draws them.
func BenchmarkPlots(b *testing.B) {
	vals := make([]float64, 5000)
	for i := range vals {
		vals[i] = float64(i%200) + float64(i)/100
	}
	h := stats.HistogramOf(vals)
	b.ReportAllocs()
	for b.Loop() {
		io.WriteString(io.Discard, linePlot{Title: "returns", XLabel: "episode", YLabel: "return", Values: vals, Window: 250}.SVG())
		io.WriteString(io.Discard, histogramPlot("returns", "return", h))
	}
}
