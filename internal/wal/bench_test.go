package wal

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
)

// stepRecord returns a record like a small RL step: float32 observations
// from a random walk (a little compressible, as real ones are).
func stepRecord(rng *rand.Rand, size int) []byte {
	b := make([]byte, 0, size)
	v := float32(0)
	for len(b)+4 <= size {
		v += float32(rng.NormFloat64()) * 0.01
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b[:cap(b)]
}

func benchRecords(n, size int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = stepRecord(rng, size)
	}
	return recs
}

// BenchmarkAppend measures the caller's cost of Append with 1 KiB records
// on the OS file system, with the writer running; p50-ns and p99-ns are
// the per-call latency percentiles.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []Compression{CompressionNone, CompressionS2} {
		b.Run(c.String(), func(b *testing.B) {
			l, err := Open(vfs.OS(), filepath.Join(b.TempDir(), "log"), Options{Compression: c})
			if err != nil {
				b.Fatal(err)
			}
			recs := benchRecords(64, 1024)
			lat := make([]int64, b.N)
			b.SetBytes(1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := l.Append(recs[i&63]); err != nil {
					b.Fatal(err)
				}
				lat[i] = int64(time.Since(t0))
			}
			b.StopTimer()
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
		})
	}
}

// BenchmarkThroughput appends 32 MiB of 1 KiB records to a log and syncs
// (a steady state: the log stays open across iterations), and in
// the same iteration writes the same bytes to a plain file with one fsync
// at the end; it reports both rates in MB/s (10^6 bytes) and their ratio.
func BenchmarkThroughput(b *testing.B) {
	const total = 32 << 20
	recs := benchRecords(total/1024, 1024)
	raw := make([]byte, 0, total)
	for _, r := range recs {
		raw = append(raw, r...)
	}
	for _, c := range []Compression{CompressionNone, CompressionS2} {
		b.Run(c.String(), func(b *testing.B) {
			dir := b.TempDir()
			logDir := filepath.Join(dir, "log")
			l, err := Open(vfs.OS(), logDir, Options{Compression: c})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var walTime, rawTime time.Duration
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				for _, r := range recs {
					if _, err := l.Append(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Sync(context.Background()); err != nil {
					b.Fatal(err)
				}
				walTime += time.Since(t0)
				if err := l.RemoveBefore(l.LastPos()); err != nil {
					b.Fatal(err)
				}

				name := filepath.Join(dir, "raw")
				t0 = time.Now()
				f, err := os.Create(name)
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < len(raw); off += 1 << 20 {
					if _, err := f.Write(raw[off:min(off+1<<20, len(raw))]); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				rawTime += time.Since(t0)
				f.Close()
				os.Remove(name)
			}
			mb := float64(total) * float64(b.N) / 1e6
			walRate, rawRate := mb/walTime.Seconds(), mb/rawTime.Seconds()
			b.ReportMetric(walRate, "wal-MB/s")
			b.ReportMetric(rawRate, "raw-MB/s")
			b.ReportMetric(walRate/rawRate, "wal/raw")
		})
	}
}

// BenchmarkReplay reads a 64 MiB log of 1 KiB records back from the page
// cache.
func BenchmarkReplay(b *testing.B) {
	const total = 64 << 20
	recs := benchRecords(256, 1024)
	for _, c := range []Compression{CompressionNone, CompressionS2} {
		b.Run(c.String(), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "log")
			l, err := Open(vfs.OS(), dir, Options{Compression: c, SegmentSize: 16 << 20})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < total/1024; i++ {
				l.Append(recs[i&255])
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(total)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := NewReader(vfs.OS(), dir)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for r.Next() {
					n += len(r.Record())
				}
				if r.Err() != nil || n != total {
					b.Fatalf("read %d bytes: %v", n, r.Err())
				}
				r.Close()
			}
		})
	}
}
