package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
)

// testBucket is the bucket of every S3 test; each test has its own
// server and prefix.
const testBucket = "rec"

// newS3 returns a store of s3://rec/prefix on srv with a small part size
// (MinPartSize) and a spool directory of its own, as a separate process
// would have.
func newS3(t *testing.T, srv *s3server.Server, prefix string) *S3 {
	t.Helper()
	return newS3Mem(t, srv, prefix, 0)
}

// newS3Mem is newS3 with a memory budget (S3Options.MemoryBytes).
func newS3Mem(t *testing.T, srv *s3server.Server, prefix string, mem int64) *S3 {
	t.Helper()
	return newS3Opts(t, srv, prefix, S3Options{PartSize: MinPartSize, MemoryBytes: mem})
}

// newS3Opts returns a store of s3://rec/prefix on srv with opts, a spool
// directory of its own and a quick retry policy.
func newS3Opts(t *testing.T, srv *s3server.Server, prefix string, opts S3Options) *S3 {
	t.Helper()
	opts.SpoolDir, opts.MaxBackoff, opts.MaxAttempts = t.TempDir(), 500*time.Millisecond, 40
	s, err := NewS3(context.Background(), srvConfig(srv), Location{Bucket: testBucket, Prefix: prefix}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// srvConfig is the AWS configuration of srv.
func srvConfig(srv *s3server.Server) aws.Config {
	return aws.Config{
		Region:       s3server.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(s3server.AccessKey, s3server.SecretKey, ""),
		BaseEndpoint: aws.String(srv.Endpoint()),
	}
}

// payload returns n bytes that differ for every seed.
func payload(n int, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// writePart starts part n of p (n < 0: the next), writes b and finishes it.
func writePart(t *testing.T, s Store, p hive.Partition, n int, b []byte) Part {
	t.Helper()
	part, err := s.Create(p, n)
	if err != nil {
		t.Fatal(err)
	}
	// The encoder writes in pieces.
	for len(b) > 0 {
		k := min(len(b), 100_000)
		if _, err := part.Write(b[:k]); err != nil {
			t.Fatal(err)
		}
		b = b[k:]
	}
	if err := part.Finish(); err != nil {
		t.Fatal(err)
	}
	return part
}

func spoolEmpty(t *testing.T, s *S3) {
	t.Helper()
	entries, err := os.ReadDir(s.opts.SpoolDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("spool directory holds %d files after the parts were settled", len(entries))
	}
}

func TestS3Publish(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	for _, tc := range []struct {
		name string
		size int
		// requests beyond the listing of Next, per part.
		want map[Op]int64
	}{
		{"small", 1000, map[Op]int64{OpPut: 1}},
		{"empty", 0, map[Op]int64{OpPut: 1}},
		{"one piece exactly", MinPartSize, map[Op]int64{OpPut: 1}},
		{"multipart", 2*MinPartSize + 123, map[Op]int64{OpCreateUpload: 1, OpUploadPiece: 3, OpComplete: 1}},
	} {
		for _, mem := range []struct {
			name  string
			bytes int64
		}{{"in memory", 0}, {"spooled", -1}, {"spilled", 200_000}} {
			t.Run(tc.name+"/"+mem.name, func(t *testing.T) {
				s := newS3Mem(t, srv, "p/"+tc.name+"/"+mem.name, mem.bytes)
				p := hive.EpisodePartition("steps", rec, "ep-000001")
				want := [][]byte{payload(tc.size, 1), payload(tc.size, 2)}
				for i, b := range want {
					part := writePart(t, s, p, -1, b)
					if got := part.Rel(); got != p.File(i) {
						t.Fatalf("part %d: Rel %q, want %q", i, got, p.File(i))
					}
					if err := commit(s, []Part{part}); err != nil {
						t.Fatal(err)
					}
				}
				for i, b := range want {
					if !srv.Equal(testBucket, s.Location().Key(p.File(i)), b) {
						t.Errorf("object %s does not hold the bytes written", p.File(i))
					}
				}
				if n, err := s.Next(p); err != nil || n != 2 {
					t.Errorf("Next after two parts = %d, %v; want 2", n, err)
				}
				r := s.Requests()
				for op := range numOps {
					want := 2 * tc.want[op]
					if op == OpList {
						want = 3 // Next for each Create, and the check above
					}
					if r.Ops[op] != want {
						t.Errorf("%s requests: %d, want %d", op, r.Ops[op], want)
					}
				}
				if r.Attempts != r.Total() {
					t.Errorf("%d HTTP attempts for %d requests on a server that did not fail", r.Attempts, r.Total())
				}
				spoolEmpty(t, s)
				if n := s.memUsed.Load(); n != 0 {
					t.Errorf("%d bytes of the memory budget held after publishing", n)
				}
			})
		}
	}
}

// TestS3NameTaken races two writers, as two processes, for one part name
// many times: exactly one publishes, the other gets a *NameTakenError,
// and the object holds the winner's bytes, whole.
func TestS3NameTaken(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	for _, tc := range []struct {
		name   string
		size   int
		rounds int
	}{
		{"put", 4000, 20},
		{"multipart", MinPartSize + 1000, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newS3(t, srv, "race"), newS3(t, srv, "race")
			for round := range tc.rounds {
				p := hive.RecordingPartition("episodes", hive.Recording{SessionID: tc.name, EnvID: fmt.Sprint(round)})
				stores := []*S3{a, b}
				bodies := [][]byte{payload(tc.size, uint64(2*round)), payload(tc.size, uint64(2*round+1))}
				parts := []Part{writePart(t, a, p, 0, bodies[0]), writePart(t, b, p, 0, bodies[1])}
				for i, s := range stores {
					if err := s.Sync(parts[i : i+1]); err != nil {
						t.Fatal(err)
					}
				}
				errs := make([]error, 2)
				var wg sync.WaitGroup
				for i, s := range stores {
					wg.Go(func() { errs[i] = s.Publish(parts[i : i+1]) })
				}
				wg.Wait()
				won := -1
				for i, err := range errs {
					var nt *NameTakenError
					switch {
					case err == nil:
						if won >= 0 {
							t.Fatalf("round %d: both writers published %s", round, p.File(0))
						}
						won = i
					case errors.Is(err, ErrExists) && errors.As(err, &nt):
					default:
						t.Fatalf("round %d: writer %d: %v, want nil or a NameTakenError", round, i, err)
					}
				}
				if won < 0 {
					t.Fatalf("round %d: neither writer published: %v", round, errs)
				}
				if !srv.Equal(testBucket, a.Location().Key(p.File(0)), bodies[won]) {
					t.Fatalf("round %d: the object does not hold the winner's bytes", round)
				}
				if ups, err := a.Uploads(p.File(0)); err != nil || len(ups) != 0 {
					t.Fatalf("round %d: uploads left in flight: %v, %v", round, ups, err)
				}
			}
			spoolEmpty(t, a)
			spoolEmpty(t, b)
		})
	}
}

// TestS3NeverReplaces: a partition another writer made (a collision of
// recordings, or a restart that forgot it) is refused at publishing; the
// published object is unchanged.
func TestS3NeverReplaces(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	p := hive.EpisodePartition("steps", rec, "ep-000001")
	first := newS3(t, srv, "")
	part, err := first.CreateNew(p)
	if err != nil {
		t.Fatal(err)
	}
	part.Write([]byte("first"))
	part.Finish()
	if err := commit(first, []Part{part}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.CreateNew(p); !errors.Is(err, ErrPartitionExists) {
		t.Fatalf("CreateNew of a partition the store wrote: %v, want ErrPartitionExists", err)
	}
	second := newS3(t, srv, "")
	for _, size := range []int{10, MinPartSize + 1} {
		part, err := second.CreateNew(hive.EpisodePartition("steps", rec, fmt.Sprint("ep-000001", size)))
		if err != nil {
			t.Fatal(err)
		}
		part.Abort()
		part = writePart(t, second, p, 0, payload(size, 9))
		err = commit(second, []Part{part})
		var nt *NameTakenError
		if !errors.As(err, &nt) || !errors.Is(err, ErrExists) {
			t.Fatalf("%d bytes: publishing over an object: %v, want a NameTakenError", size, err)
		}
		if !srv.Equal(testBucket, p.File(0), []byte("first")) {
			t.Fatalf("%d bytes: the published object changed", size)
		}
	}
	spoolEmpty(t, second)
}

// TestS3ServerRestart stops the server in the middle of a recording's
// uploads and starts it again a second later: the requests are retried
// with backoff until it answers, and every part is published whole.
func TestS3ServerRestart(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	s := newS3Mem(t, srv, "restart", -1) // spooled: reread on every retry
	small := writePart(t, s, hive.RecordingPartition("episodes", rec), 0, payload(3000, 1))
	big := writePart(t, s, hive.RecordingPartition("steps", rec), 0, payload(2*MinPartSize+5, 2))
	if err := s.Sync([]Part{small, big}); err != nil {
		t.Fatal(err)
	}
	later := writePart(t, s, hive.RecordingPartition("logs", rec), 0, payload(MinPartSize+7, 3))
	for _, kill := range []bool{true, false} {
		var err error
		if kill {
			err = srv.Kill()
		} else {
			err = srv.Stop()
		}
		if err != nil {
			t.Fatal(err)
		}
		restarted := make(chan error, 1)
		go func() {
			time.Sleep(time.Second)
			restarted <- srv.Restart()
		}()
		if kill {
			// Pieces of an upload begun before the crash, and completes.
			if err := s.Sync([]Part{later}); err != nil {
				t.Fatalf("sync while the server is down: %v", err)
			}
		} else {
			if err := s.Publish([]Part{small, big, later}); err != nil {
				t.Fatalf("publish while the server is down: %v", err)
			}
		}
		if err := <-restarted; err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range []Part{small, big, later} {
		if !srv.Equal(testBucket, s.Location().Key(p.Rel()), payload([]int{3000, 2*MinPartSize + 5, MinPartSize + 7}[i], uint64(i+1))) {
			t.Errorf("%s does not hold its bytes after the restarts", p.Rel())
		}
	}
	if r := s.Requests(); r.Attempts <= r.Total() {
		t.Errorf("%d attempts for %d requests: nothing was retried while the server was down", r.Attempts, r.Total())
	}
	// Every request was the recording's, and so every retry.
	if got, all := s.RequestsOf(rec), s.Requests(); got != all {
		t.Errorf("RequestsOf(%s) = %+v, want every request the store sent, retries included: %+v", rec, got, all)
	}
	spoolEmpty(t, s)
}

// TestS3CompleteAfterCrash: the upload a writer recorded before it died
// is found by its exact key and completed by another store; one it did
// not get to record is aborted; nothing is left in flight.
func TestS3CompleteAfterCrash(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	crashed := newS3(t, srv, "crash")
	keep := writePart(t, crashed, hive.RecordingPartition("steps", rec), 0, payload(MinPartSize+10, 1))
	drop := writePart(t, crashed, hive.RecordingPartition("steps", hive.Recording{SessionID: "s", EnvID: "r2"}), 0, payload(MinPartSize+10, 2))
	if err := crashed.Sync([]Part{keep, drop}); err != nil {
		t.Fatal(err)
	}
	rec, ok := crashed.PendingUpload(keep)
	if !ok || len(rec.Pieces) != 2 {
		t.Fatalf("PendingUpload of a synced large part: %+v, %v", rec, ok)
	}

	s := newS3(t, srv, "crash")
	ups, err := s.Uploads(keep.Rel())
	if err != nil || len(ups) != 1 || ups[0].ID != rec.ID {
		t.Fatalf("Uploads(%s) = %+v, %v; want the one upload %s", keep.Rel(), ups, err, rec.ID)
	}
	if err := s.CompleteUpload(rec); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteUpload(rec); err != nil {
		t.Fatalf("completing it again (a lost reply): %v", err)
	}
	if !srv.Equal(testBucket, s.Location().Key(keep.Rel()), payload(MinPartSize+10, 1)) {
		t.Fatal("the completed object does not hold the part")
	}
	ups, err = s.Uploads(drop.Rel())
	if err != nil || len(ups) != 1 {
		t.Fatalf("Uploads(%s) = %+v, %v", drop.Rel(), ups, err)
	}
	if err := s.AbortUpload(ups[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.AbortUpload(ups[0]); err != nil {
		t.Fatalf("aborting it again: %v", err)
	}
	if ups, err := s.Uploads(drop.Rel()); err != nil || len(ups) != 0 {
		t.Fatalf("uploads left: %+v, %v", ups, err)
	}
	if _, err := srv.Object(testBucket, s.Location().Key(drop.Rel())); err == nil {
		t.Fatal("an aborted upload left an object")
	}
}

func TestS3Abort(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	s := newS3(t, srv, "abort")
	open, err := s.Create(hive.RecordingPartition("logs", rec), 0)
	if err != nil {
		t.Fatal(err)
	}
	open.Write([]byte("never finished"))
	big := writePart(t, s, hive.RecordingPartition("steps", rec), 0, payload(MinPartSize+1, 1))
	if err := s.Sync([]Part{big}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Part{open, big} {
		if err := p.Abort(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Write([]byte("x")); !errors.Is(err, ErrClosed) {
			t.Errorf("write after Abort: %v, want ErrClosed", err)
		}
	}
	if ups, err := s.Uploads(big.Rel()); err != nil || len(ups) != 0 {
		t.Fatalf("uploads left: %+v, %v", ups, err)
	}
	spoolEmpty(t, s)
	if err := s.Publish([]Part{big}); !errors.Is(err, errNotFinished) {
		t.Fatalf("Publish of an aborted part: %v", err)
	}
}

// TestLoadS3 opens a store through the standard configuration chain
// (environment variables, as a user sets them for a MinIO or versitygw
// endpoint): path-style addressing of the endpoint.
func TestLoadS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	srv.SetEnv(t)
	s, err := LoadS3(context.Background(), "s3://rec/a/b/", S3Options{SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	part := writePart(t, s, hive.RecordingPartition("sessions", rec), -1, []byte("row"))
	if err := commit(s, []Part{part}); err != nil {
		t.Fatal(err)
	}
	if !srv.Equal(testBucket, "a/b/"+part.Rel(), []byte("row")) {
		t.Fatal("the object is not under the prefix")
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Location
		err  bool
	}{
		{in: "s3://b", want: Location{Bucket: "b"}},
		{in: "s3://b/", want: Location{Bucket: "b"}},
		{in: "s3://b/p/q/", want: Location{Bucket: "b", Prefix: "p/q"}},
		{in: "s3://b//p", err: true},
		{in: "s3://b/p/../q", err: true},
		{in: "s3://b/./q", err: true},
		{in: "s3:///p", err: true},
		{in: "/local/root", err: true},
		{in: "S3://b", err: true},
	} {
		got, err := ParseURL(tc.in)
		if tc.err {
			if !errors.Is(err, ErrBadURL) {
				t.Errorf("ParseURL(%q) = %+v, %v; want ErrBadURL", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, _ := ParseURL(got.String()); back != got {
			t.Errorf("%q: String() %q does not parse back", tc.in, got.String())
		}
	}
	if k := (Location{Bucket: "b", Prefix: "p"}).Key("steps/x"); k != "p/steps/x" {
		t.Errorf("Key = %q", k)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	t.Setenv("HOME", "/home/u")
	for _, tc := range []struct{ a, b string }{
		{"s3://b/p", "s3://b/p/"}, // the same ROOT
	} {
		da, err := DefaultStateDir(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := DefaultStateDir(tc.b)
		if da != db {
			t.Errorf("%q and %q get %q and %q", tc.a, tc.b, da, db)
		}
		if want := filepath.FromSlash("/cache/rlrec/roots/root=s3%3A%2F%2Fb%2Fp"); da != want {
			t.Errorf("DefaultStateDir(%q) = %q, want %q", tc.a, da, want)
		}
	}
	seen := map[string]string{}
	for _, u := range []string{"s3://b", "s3://b/p", "s3://b/p/q", "s3://bp", "s3://b/" + strings.Repeat("x", 300), "s3://b/" + strings.Repeat("x", 301)} {
		d, err := DefaultStateDir(u)
		if err != nil {
			t.Fatal(err)
		}
		if len(filepath.Base(d)) > 255 {
			t.Errorf("%q: a directory name of %d bytes", u, len(filepath.Base(d)))
		}
		if o, ok := seen[d]; ok {
			t.Errorf("%q and %q share %s", u, o, d)
		}
		seen[d] = u
	}
	if _, err := DefaultStateDir("/local/root"); !errors.Is(err, ErrBadURL) {
		t.Errorf("a local ROOT: %v, want ErrBadURL", err)
	}
}
