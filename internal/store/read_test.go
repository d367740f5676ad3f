package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/vfs"
)

// TestReaderS3 records a small ROOT into a bucket and reads it through
// the S3 reader and through the FS reader of the server's directory (the
// same bytes as plain files): the same listing, the same bytes at any
// range, the same layout.
func TestReaderS3(t *testing.T) {
	srv := s3server.Start(t)
	bdir := srv.Bucket(t, testBucket)
	w := newS3(t, srv, "data/root")
	a := hive.Recording{SessionID: "local-1", EnvID: "env/a"}
	sizes := map[string]int{}
	var parts []Part
	for i, p := range []hive.Partition{
		hive.RecordingPartition("sessions", a),
		hive.RecordingPartition("episodes", a),
		hive.EpisodePartition("steps", a, "ep-000001"),
		hive.EpisodePartition("steps", a, "ep-000002"),
		hive.RecordingPartition("telemetry", a),
	} {
		size := []int{300, 5000, 3 << 20, MinPartSize + 3, 0}[i]
		part := writePart(t, w, p, -1, payload(size, uint64(i)))
		sizes[part.Rel()] = size
		parts = append(parts, part)
	}
	if err := commit(w, parts); err != nil {
		t.Fatal(err)
	}
	// The recorder's state and a stray, both on the service.
	c := srv.Client()
	for key, body := range map[string]string{
		"data/root/_rlrec/layout":   string(hive.LayoutFile(hive.LayoutEpisode)),
		"data/root/notes.txt":       "a stray",
		"data/rootless/steps/x.bin": "outside the prefix",
	} {
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))}); err != nil {
			t.Fatal(err)
		}
	}

	srv.SetEnv(t)
	r, err := OpenReader(context.Background(), "s3://rec/data/root")
	if err != nil {
		t.Fatal(err)
	}
	local := NewFS(vfs.OS(), filepath.Join(bdir, "data", "root"))
	got, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	want, err := local.List()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("listing of the bucket:\n got %+v\nwant %+v (the server's directory)", got, want)
	}
	if len(got.Files) != 5 || len(got.Strays) != 1 {
		t.Fatalf("%d files and %d strays, want 5 and 1", len(got.Files), len(got.Strays))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range got.Files {
		if f.Size != int64(sizes[f.Rel]) {
			t.Errorf("%s: listed size %d, want %d", f.Rel, f.Size, sizes[f.Rel])
		}
		so, err := r.Open(f.Rel, f.Size)
		if err != nil {
			t.Fatal(err)
		}
		lo, err := local.Open(f.Rel, -1)
		if err != nil {
			t.Fatal(err)
		}
		if so.Size() != lo.Size() {
			t.Fatalf("%s: size %d, want %d", f.Rel, so.Size(), lo.Size())
		}
		// Whole, the last bytes, past the end, and random ranges.
		for i := range 40 {
			off, n := int64(0), int(f.Size)
			switch {
			case i == 1:
				off, n = max(f.Size-8, 0), 8
			case i == 2:
				off, n = max(f.Size-3, 0), 10
			case i > 2 && f.Size > 0:
				off = rng.Int64N(f.Size)
				n = rng.IntN(min(int(f.Size-off), 3<<20) + 1)
			}
			g, w := make([]byte, n), make([]byte, n)
			gn, gerr := so.ReadAt(g, off)
			wn, werr := lo.ReadAt(w, off)
			if gn != wn || !bytes.Equal(g[:gn], w[:wn]) || (gerr == nil) != (werr == nil) || (gerr != nil && !errors.Is(gerr, io.EOF)) {
				t.Fatalf("%s: ReadAt(%d bytes at %d) = %d, %v; want %d, %v", f.Rel, n, off, gn, gerr, wn, werr)
			}
		}
		so.Close()
		lo.Close()
	}
	if l, err := ReadLayout(r); err != nil || l != hive.LayoutEpisode {
		t.Errorf("ReadLayout = %q, %v", l, err)
	}
	if r.Path("steps/x") != "s3://rec/data/root/steps/x" || r.Root() != "s3://rec/data/root" {
		t.Errorf("Path %q, Root %q", r.Path("steps/x"), r.Root())
	}
	empty, err := OpenReader(context.Background(), "s3://rec/nothing/here")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLayout(empty); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLayout of an empty prefix: %v, want fs.ErrNotExist", err)
	}
	if _, err := empty.Open("steps/part-00000.parquet", -1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing key: %v, want fs.ErrNotExist", err)
	}
	o, err := OpenPath(context.Background(), r.Path(got.Files[0].Rel))
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != got.Files[0].Size {
		t.Errorf("OpenPath: size %d, want %d", o.Size(), got.Files[0].Size)
	}
}

// TestObjectBlocks: a Parquet reader's small reads near each other cost
// one ranged GET per block, not one per read.
func TestObjectBlocks(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, testBucket)
	w := newS3(t, srv, "blocks")
	p := hive.RecordingPartition("steps", rec)
	body := payload(3*blockSize+100, 7)
	part := writePart(t, w, p, 0, body)
	if err := commit(w, []Part{part}); err != nil {
		t.Fatal(err)
	}
	r := newS3(t, srv, "blocks")
	o, err := r.Open(part.Rel(), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for _, off := range []int64{int64(len(body)) - 8, int64(len(body)) - 4096, 0, 4096, 8192, blockSize - 10} {
		n, err := o.ReadAt(buf, off)
		if short := off+int64(len(buf)) > int64(len(body)); (err != nil) != short || (short && !errors.Is(err, io.EOF)) || !bytes.Equal(buf[:n], body[off:off+int64(n)]) {
			t.Fatalf("ReadAt at %d: %d, %v", off, n, err)
		}
	}
	// The last block (the footer), the one before it (a read across
	// both), block 0 (three reads) and block 1 (a read across 0 and 1).
	if g := r.Requests().Ops[OpGet]; g != 4 {
		t.Errorf("%d GETs for six small reads in four blocks, want 4", g)
	}
	big := make([]byte, 2*blockSize)
	if n, err := o.ReadAt(big, 100); err != nil || n != len(big) || !bytes.Equal(big, body[100:100+len(big)]) {
		t.Fatalf("large ReadAt: %d, %v", n, err)
	}
	if g := r.Requests().Ops[OpGet]; g != 5 {
		t.Errorf("%d GETs after a large read, want 5 (one more)", g)
	}
}
