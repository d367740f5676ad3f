package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/s3server"
)

// newStreamS3 is a store whose streamed parts go up in pieces of
// MinPartSize, with a memory budget mem (0: the default).
func newStreamS3(t *testing.T, srv *s3server.Server, prefix string, mem int64) *S3 {
	t.Helper()
	return newS3Opts(t, srv, prefix, S3Options{StreamPieceSize: MinPartSize, MemoryBytes: mem})
}

// inFlight returns the uploads in flight of the object key.
func inFlight(t *testing.T, srv *s3server.Server, key string) int {
	t.Helper()
	out, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(testBucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// TestS3Stream: a part let stream goes up in one put while it fits the
// memory budget; past it, it begins its upload while it is written, only
// after begin returned, and waits for its pieces to go up rather than
// spilling; its object is its bytes, its memory goes back to the budget,
// and a budget held by another part (it spills), a failing begin and an
// abort leave no upload in flight and no spool file.
func TestS3Stream(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	const size = 4*MinPartSize + 12345
	cases := []struct {
		name string
		mem  int64
		// other is what another unpublished part holds of the budget.
		other    int
		beginErr error
		abort    bool
		streams  bool
	}{
		{name: "fits the budget"},
		{name: "past the budget", mem: 3 * MinPartSize, streams: true},
		{name: "budget held by another part", mem: 3 * MinPartSize, other: 5 * MinPartSize / 2},
		{name: "begin fails", mem: 3 * MinPartSize, beginErr: errors.New("the log is full"), streams: true},
		{name: "aborted", mem: 3 * MinPartSize, abort: true, streams: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStreamS3(t, srv, fmt.Sprint("stream", i), c.mem)
			var other Part
			if c.other > 0 {
				other = writePart(t, s, episodesP, 0, payload(c.other, 99))
			}
			body := payload(size, uint64(i+1))
			part, err := s.Create(stepsP, 0)
			if err != nil {
				t.Fatal(err)
			}
			key := s.loc.Key(part.Rel())
			var begun int
			var mu sync.Mutex
			s.Stream(part, func() error {
				mu.Lock()
				defer mu.Unlock()
				begun++
				if n := inFlight(t, srv, key); n != 0 {
					t.Errorf("%d uploads in flight before begin returned", n)
				}
				return c.beginErr
			})
			for off := 0; off < len(body); off += 256 << 10 {
				if _, err := part.Write(body[off:min(off+256<<10, len(body))]); err != nil {
					t.Fatal(err)
				}
			}
			spooled := spoolFiles(t, s)
			if c.streams && spooled != 0 {
				t.Errorf("%d spool files: the part spilled rather than streamed", spooled)
			}
			if !c.streams && c.other > 0 && spooled != 1 {
				t.Errorf("%d spool files, want 1: a part with no piece in flight spills", spooled)
			}
			if c.streams && c.beginErr == nil {
				// The upload is in flight before the part is finished.
				deadline := time.Now().Add(30 * time.Second)
				for inFlight(t, srv, key) == 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if inFlight(t, srv, key) != 1 {
					t.Fatal("no upload in flight while the part was written")
				}
			}
			if c.abort {
				if err := part.Abort(); err != nil {
					t.Fatal(err)
				}
				if n := inFlight(t, srv, key); n != 0 {
					t.Errorf("%d uploads in flight after the abort", n)
				}
				if used := s.memUsed.Load(); used != 0 {
					t.Errorf("%d bytes of the budget held after the abort", used)
				}
				spoolEmpty(t, s)
				return
			}
			if err := part.Finish(); err != nil {
				t.Fatal(err)
			}
			parts := []Part{part}
			if other != nil {
				parts = append(parts, other)
			}
			err = commit(s, parts)
			mu.Lock()
			if want := map[bool]int{true: 1}[c.streams]; begun != want {
				t.Errorf("begin called %d times, want %d", begun, want)
			}
			mu.Unlock()
			if used := s.memUsed.Load(); used != 0 {
				t.Errorf("%d bytes of the budget held after the commit", used)
			}
			spoolEmpty(t, s)
			if c.beginErr != nil {
				var ge *GroupError
				if !errors.As(err, &ge) || len(ge.Parts) != 1 || !errors.Is(ge.Parts[0].Err, c.beginErr) {
					t.Fatalf("commit after a failed begin: %v, want a GroupError with the begin's error", err)
				}
				if n := inFlight(t, srv, key); n != 0 {
					t.Errorf("%d uploads in flight after a failed begin", n)
				}
				if _, err := srv.Object(testBucket, key); err == nil {
					t.Error("the part was published after its begin failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !srv.Equal(testBucket, key, body) {
				t.Fatal("the object does not hold the part's bytes")
			}
			r := s.Requests()
			if !c.streams {
				if r.Ops[OpCreateUpload] != 0 || r.Ops[OpPut] != int64(len(parts)) {
					t.Errorf("requests %v, want one put per part", r.Ops)
				}
				return
			}
			// Pieces handed over while it was written, then the rest at
			// Sync in pieces of PartSize: never more than the part's
			// pieces, never a byte twice (the object is equal).
			most := int64((size + MinPartSize - 1) / MinPartSize)
			if r.Ops[OpCreateUpload] != 1 || r.Ops[OpComplete] != 1 || r.Ops[OpPut] != 0 ||
				r.Ops[OpUploadPiece] < 2 || r.Ops[OpUploadPiece] > most {
				t.Errorf("requests %v, want 1 create, 2 to %d pieces, 1 complete, no put", r.Ops, most)
			}
		})
	}
}

// spoolFiles counts the files in the store's spool directory.
func spoolFiles(t *testing.T, s *S3) int {
	t.Helper()
	entries, err := os.ReadDir(s.opts.SpoolDir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// headerClient records the headers of the requests that carry a body.
type headerClient struct {
	next aws.HTTPClient
	mu   sync.Mutex
	puts []http.Header
}

func (c *headerClient) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		c.mu.Lock()
		c.puts = append(c.puts, r.Header.Clone())
		c.mu.Unlock()
	}
	return c.next.Do(r)
}

// TestS3UnsignedPayload: on loopback the bytes of a part are sent
// unsigned (the signature covers the headers), for one put and for
// pieces, and the server takes both.
func TestS3UnsignedPayload(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	cfg := srvConfig(srv)
	hc := &headerClient{next: http.DefaultClient}
	cfg.HTTPClient = hc
	s, err := NewS3(context.Background(), cfg, Location{Bucket: testBucket, Prefix: "unsigned"}, S3Options{PartSize: MinPartSize, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	bodies := [][]byte{payload(1000, 1), payload(MinPartSize+10, 2)}
	small := writePart(t, s, stepsP, 0, bodies[0])
	large := writePart(t, s, episodesP, 0, bodies[1])
	if err := commit(s, []Part{small, large}); err != nil {
		t.Fatal(err)
	}
	for i, p := range []Part{small, large} {
		if !srv.Equal(testBucket, s.loc.Key(p.Rel()), bodies[i]) {
			t.Errorf("%s does not hold its bytes", p.Rel())
		}
	}
	if len(hc.puts) != 3 {
		t.Fatalf("%d PUT requests, want 3 (a put, two pieces)", len(hc.puts))
	}
	for i, h := range hc.puts {
		if got := h.Get("X-Amz-Content-Sha256"); got != "UNSIGNED-PAYLOAD" {
			t.Errorf("PUT %d: x-amz-content-sha256 %q, want UNSIGNED-PAYLOAD", i, got)
		}
	}
}

func TestUnsignedPayloadSafe(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		want     bool
	}{
		{"https://s3.example.com", true},
		{"https://10.0.0.5:9000", true},
		{"http://127.0.0.1:7070", true},
		{"http://[::1]:7070", true},
		{"http://localhost:9000", true},
		{"http://10.0.0.5:9000", false},
		{"http://minio.lan:9000", false},
		{"http://localhost.example.com", false},
		{"::not a url", false},
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			if got := unsignedPayloadSafe(c.endpoint); got != c.want {
				t.Errorf("unsignedPayloadSafe(%q) = %v, want %v", c.endpoint, got, c.want)
			}
		})
	}
	if opts := payloadOptions(nil); len(opts) != 1 {
		t.Errorf("AWS itself (no endpoint): %d options, want the unsigned payload", len(opts))
	}
}

// TestS3StreamThenSpill: a streaming part that finds the budget full
// with no piece of its own in flight (other parts hold the memory) spills
// the rest to the spool file, and the rest goes up from there at Sync:
// the object is the part's bytes.
func TestS3StreamThenSpill(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	s := newStreamS3(t, srv, "spill", 3*MinPartSize)
	part, err := s.Create(stepsP, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Stream(part, func() error { return nil })
	body := payload(4*MinPartSize+3<<20+17, 5)
	streamed := 4 * MinPartSize
	for off := 0; off < streamed; off += 256 << 10 {
		if _, err := part.Write(body[off : off+256<<10]); err != nil {
			t.Fatal(err)
		}
	}
	sp := part.(*s3Part)
	if sp.stream == nil {
		t.Fatal("the part did not stream past the budget")
	}
	deadline := time.Now().Add(30 * time.Second)
	for sp.stream.pending.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Other parts take the whole budget.
	const others = 3 * MinPartSize
	s.memUsed.Add(others)
	if _, err := part.Write(body[streamed:]); err != nil {
		t.Fatal(err)
	}
	if n := spoolFiles(t, s); n != 1 {
		t.Fatalf("%d spool files, want 1: the rest spills", n)
	}
	s.memUsed.Add(-others)
	if err := part.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := commit(s, []Part{part}); err != nil {
		t.Fatal(err)
	}
	if !srv.Equal(testBucket, s.loc.Key(part.Rel()), body) {
		t.Fatal("the object does not hold the part's bytes")
	}
	if used := s.memUsed.Load(); used != 0 {
		t.Errorf("%d bytes of the budget held after the commit", used)
	}
	spoolEmpty(t, s)
}
