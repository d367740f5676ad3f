package recorder

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/filetree"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/sim"
)

// benchPrefix numbers the prefixes of BenchmarkS3LayoutSession: every op
// writes new keys.
var benchPrefix atomic.Int64

// BenchmarkS3LayoutSession records one event stream (a pick-place
// session: images, 4 lanes, as rlrec ingest reads it) with layout session
// into a new prefix of a versitygw bucket on loopback (recorder-bucket:
// decoding, the log, assembly, Parquet, the uploads) and into a directory
// (recorder-directory), and puts the objects the bucket's recording
// published, the same bytes under the same keys, with the bare SDK, one
// PutObject each (sdk). Each reports MB/s of the objects' bytes; compare
// them within one run. req/op counts the recorder's requests, close-ms/op
// the time Close takes (from the last event to every file published).
// Uncompressed Parquet (none) is the case where the bytes uploaded are
// the bytes recorded; zstd is the default. With 60 episodes the packed
// steps file (57 MB) fits the store's 64 MiB memory budget and goes up in
// one put once finished; with 240 (none-240) the packed files outgrow
// it, and stream their pieces while they are written (internal/store,
// s3stream.go).
//
//	go test -run '^$' -bench S3LayoutSession -benchtime 5x -count 5 ./recorder
func BenchmarkS3LayoutSession(b *testing.B) {
	srv := s3server.Start(b)
	bucketDir := srv.Bucket(b, s3Bucket)
	for _, c := range []struct {
		name     string
		episodes int64
		codec    Compression
	}{{"none", 60, CompressionNone}, {"zstd", 60, CompressionZstd}, {"none-240", 240, CompressionNone}} {
		var stream bytes.Buffer
		sw := events.NewStreamWriter(&stream)
		cfg := sim.Config{Env: "pick-place", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: c.episodes, TimeLimit: 25, Seed: 9, SessionID: "bench"}
		if _, err := sim.Run(context.Background(), sim.NewStreamHooks(sw), cfg); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) { benchS3Layout(b, srv, bucketDir, stream.Bytes(), c.codec) })
	}
}

func benchS3Layout(b *testing.B, srv *s3server.Server, bucketDir string, stream []byte, codec Compression) {
	// record records the stream into root (an s3:// ROOT when st is
	// set), and returns the store's requests and how long Close took
	// (from the last event to every file published).
	record := func(b *testing.B, root string, st *store.S3) (store.Requests, time.Duration) {
		opts := []Option{WithLayout(hive.LayoutSession), WithCompression(codec)}
		if st != nil {
			opts = append(opts, WithStore(st, filepath.Join(b.TempDir(), "state")))
		}
		r, err := Open(root, opts...)
		if err != nil {
			b.Fatal(err)
		}
		sr := events.NewStreamReader(bytes.NewReader(stream), events.DefaultMaxMessageBytes)
		for sr.Next() {
			if err := r.RecordAt(context.Background(), sr.Event(), sr.Time()); err != nil {
				b.Fatal(err)
			}
		}
		if err := sr.Err(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := r.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		closing := time.Since(start)
		if st == nil {
			return store.Requests{}, closing
		}
		return st.Requests(), closing
	}
	toBucket := func(b *testing.B) (string, store.Requests, time.Duration) {
		prefix := fmt.Sprint("bench-", benchPrefix.Add(1))
		req, closing := record(b, "s3://"+s3Bucket+"/"+prefix, newS3Store(b, srv, prefix))
		return prefix, req, closing
	}
	prefix, _, _ := toBucket(b)
	objs := tree(b, filepath.Join(bucketDir, prefix), filetree.State)
	var size int64
	for _, o := range objs {
		size += int64(len(o))
	}
	b.Logf("%d objects, %d bytes", len(objs), size)

	b.Run("recorder-bucket", func(b *testing.B) {
		b.SetBytes(size)
		var reqs int64
		var closing time.Duration
		for b.Loop() {
			_, req, c := toBucket(b)
			reqs += req.Total()
			closing += c
		}
		b.ReportMetric(float64(reqs)/float64(b.N), "req/op")
		b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms/op")
	})
	b.Run("recorder-directory", func(b *testing.B) {
		b.SetBytes(size)
		var closing time.Duration
		for i := 0; b.Loop(); i++ {
			_, c := record(b, filepath.Join(b.TempDir(), fmt.Sprint(i)), nil)
			closing += c
		}
		b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms/op")
	})
	b.Run("sdk", func(b *testing.B) {
		b.SetBytes(size)
		c := srv.Client()
		for b.Loop() {
			prefix := fmt.Sprint("bench-", benchPrefix.Add(1))
			for rel, body := range objs {
				if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{
					Bucket: aws.String(s3Bucket), Key: aws.String(prefix + "/" + rel),
					Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
				}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
