package lerobot_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/export/lerobot"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/sim"
)

// BenchmarkExport exports a recording of cartpole (vectors) and of
// pick-place (PNG images, and MP4 with ffmpeg), reporting frames per
// second and allocations.
func BenchmarkExport(b *testing.B) {
	for _, bc := range []struct {
		env   string
		video bool
	}{{"cartpole", false}, {"pick-place", false}, {"pick-place", true}} {
		name := bc.env
		if bc.video {
			name += "-video"
		}
		b.Run(name, func(b *testing.B) {
			root := roottest.Record(b, []sim.Config{{Env: bc.env, NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 20, Seed: 1, SessionID: "bench"}})
			d, err := dataset.Open(root)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			dir := b.TempDir()
			b.ReportAllocs()
			b.ResetTimer()
			var frames int64
			for i := 0; b.Loop(); i++ {
				sum, err := lerobot.Export(context.Background(), d, d.Recordings(), filepath.Join(dir, fmt.Sprint(i)),
					lerobot.WithFPS(30), lerobot.WithIncomplete(true), lerobot.WithVideo(bc.video))
				if err != nil {
					b.Fatal(err)
				}
				frames += sum.Frames
			}
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}
