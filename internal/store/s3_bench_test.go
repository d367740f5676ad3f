package store

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
)

// benchKey numbers the objects of the benchmark: every key is new, across
// the runs -count and b.N's probing make.
var benchKey atomic.Int64

// BenchmarkS3Publish publishes one object per op, through the store
// (spooled as an encoder writes it, in 256 KiB writes, then committed:
// one conditional put up to the part size, a multipart upload above it)
// and with the bare SDK (one PutObject of the same bytes from memory,
// under the same kind of key: a new episode partition each, which costs
// versitygw directories), to the same versitygw on loopback, and the bare
// SDK with If-None-Match: * (what the server's conditional write costs).
// Compare MB/s of the three in one run; req/op counts the store's
// requests.
//
//	go test -run '^$' -bench S3Publish -count 5 ./internal/store
func BenchmarkS3Publish(b *testing.B) {
	srv := s3server.Start(b)
	srv.Bucket(b, testBucket)
	for _, size := range []int{64 << 10, 4 << 20, 40 << 20} {
		body := payload(size, 1)
		name := fmt.Sprintf("%dKiB", size>>10)
		b.Run("store/"+name, func(b *testing.B) {
			s, err := NewS3(context.Background(), srvConfig(srv), Location{Bucket: testBucket, Prefix: "bench-store"}, S3Options{SpoolDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				part, err := s.Create(hive.EpisodePartition("steps", rec, fmt.Sprint(benchKey.Add(1))), 0)
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < len(body); off += 256 << 10 {
					if _, err := part.Write(body[off:min(off+256<<10, len(body))]); err != nil {
						b.Fatal(err)
					}
				}
				if err := part.Finish(); err != nil {
					b.Fatal(err)
				}
				if err := commit(s, []Part{part}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Requests().Total())/float64(b.N), "req/op")
		})
		for _, cond := range []bool{false, true} {
			variant := "sdk/"
			if cond {
				variant = "sdk-if-none-match/"
			}
			b.Run(variant+name, func(b *testing.B) {
				c := srv.Client()
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					in := &s3.PutObjectInput{
						Bucket: aws.String(testBucket), Key: aws.String(Location{Prefix: "bench-sdk"}.Key(hive.EpisodePartition("steps", rec, fmt.Sprint(benchKey.Add(1))).File(0))),
						Body: bytes.NewReader(body),
					}
					if cond {
						in.IfNoneMatch = aws.String("*")
					}
					if _, err := c.PutObject(context.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
