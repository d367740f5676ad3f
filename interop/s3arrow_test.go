package interop

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// getLog is a reverse proxy in front of the S3 server that records every
// GET it forwards: its Range header and the bytes of its answer. The
// request reaches the server with the Host header the client signed, so
// signatures hold.
type getLog struct {
	mu   sync.Mutex
	gets []getRecord
}

type getRecord struct {
	key, rng string
	bytes    int64
}

func (g *getLog) proxy(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Query().Has("list-type") {
			rp.ServeHTTP(w, r)
			return
		}
		cw := &countingWriter{ResponseWriter: w}
		rp.ServeHTTP(cw, r)
		g.mu.Lock()
		g.gets = append(g.gets, getRecord{key: r.URL.Path, rng: r.Header.Get("Range"), bytes: cw.n})
		g.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// of returns the GETs of the object at path (/bucket/key) since the last
// reset.
func (g *getLog) of(path string) []getRecord {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []getRecord
	for _, r := range g.gets {
		if r.key == path {
			out = append(out, r)
		}
	}
	return out
}

func (g *getLog) reset() {
	g.mu.Lock()
	g.gets = nil
	g.mu.Unlock()
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// readParquetArrow reads the columns cols (all when nil) of a Parquet
// file through arrow-go's parquet reader over r, and returns the table.
func readParquetArrow(t *testing.T, name string, r parquet.ReaderAtSeeker, cols []string) arrow.Table {
	t.Helper()
	pf, err := file.NewParquetReader(r)
	if err != nil {
		t.Fatalf("arrow-go: open %s: %v", name, err)
	}
	t.Cleanup(func() { pf.Close() })
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("arrow-go: reader for %s: %v", name, err)
	}
	var idx []int
	for _, c := range cols {
		i := pf.MetaData().Schema.ColumnIndexByName(c)
		if i < 0 {
			t.Fatalf("arrow-go: %s has no column %s", name, c)
		}
		idx = append(idx, i)
	}
	var tbl arrow.Table
	if idx == nil {
		tbl, err = fr.ReadTable(context.Background())
	} else {
		// The leaf columns asked for, from every row group (nil would
		// read none).
		rgs := make([]int, pf.NumRowGroups())
		for i := range rgs {
			rgs[i] = i
		}
		tbl, err = fr.ReadRowGroups(context.Background(), idx, rgs)
	}
	if err != nil {
		t.Fatalf("arrow-go: read %s: %v", name, err)
	}
	t.Cleanup(tbl.Release)
	return tbl
}

// sameTables reports the first column of a whose values differ from b's.
func sameTables(t *testing.T, what string, a, b arrow.Table) {
	t.Helper()
	if !a.Schema().Equal(b.Schema()) {
		t.Fatalf("%s: schemas differ:\n%s\n%s", what, a.Schema(), b.Schema())
	}
	if a.NumRows() == 0 || a.NumRows() != b.NumRows() {
		t.Fatalf("%s: %d rows against %d", what, a.NumRows(), b.NumRows())
	}
	for c := 0; c < int(a.NumCols()); c++ {
		if !array.ChunkedEqual(a.Column(c).Data(), b.Column(c).Data()) {
			t.Errorf("%s: column %s differs", what, a.Column(c).Name())
		}
	}
}

// TestArrowReadsS3Part: arrow-go's Parquet reader opens a steps part of an
// s3:// ROOT through internal/store's object, which reads by ranged GETs
// from a real S3 server (versitygw), and gets the values the local file
// holds; reading a few small columns fetches ranges only, far less than
// the object, and every GET asks for a range.
func TestArrowReadsS3Part(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	// Uncompressed, pick-place's camera images make a steps part of several
	// MiB, with column chunks larger than the store's 1 MiB read block.
	rec, err := recorder.Open(root, recorder.WithLayout(hive.LayoutSession), recorder.WithCompression(recorder.CompressionNone))
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{SessionID: "s3-arrow", Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep,
		MaxEpisodes: 12, TimeLimit: 25, Seed: 3, Clock: sim.StepClock(epoch, time.Millisecond)}
	if _, err := sim.RunSessions(context.Background(), rec, []sim.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	srv := s3server.Start(t)
	srv.Bucket(t, "datasets")
	srv.PutTree(t, root, "datasets", "pick-place", s3server.SkipState)
	var gets getLog
	proxy := gets.proxy(t, srv.Endpoint())
	srv.SetEnv(t)
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)

	ctx := context.Background()
	rd, err := store.OpenReader(ctx, "s3://datasets/pick-place")
	if err != nil {
		t.Fatal(err)
	}
	l, err := rd.List()
	if err != nil {
		t.Fatal(err)
	}
	var part hive.File
	for _, f := range l.Files {
		if f.Table == schema.TableSteps && f.Size > part.Size {
			part = f
		}
	}
	if part.Size < 4<<20 {
		t.Fatalf("the largest steps part is %d bytes; the test wants one over 4 MiB (more images)", part.Size)
	}
	local, err := os.Open(filepath.Join(root, filepath.FromSlash(part.Rel)))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	key := "/datasets/pick-place/" + part.Rel

	open := func() *io.SectionReader {
		obj, err := rd.Open(part.Rel, part.Size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { obj.Close() })
		return io.NewSectionReader(obj, 0, obj.Size())
	}

	// A few small columns: ranges of the object only.
	cols := []string{schema.ColEpisodeID, schema.ColStep, schema.ColReward, schema.ColIsLast}
	gets.reset()
	remote := readParquetArrow(t, rd.Path(part.Rel), open(), cols)
	sameTables(t, "columns "+strings.Join(cols, ", "), remote, readParquetArrow(t, local.Name(), local, cols))
	got := gets.of(key)
	var fetched int64
	for _, g := range got {
		fetched += g.bytes
		if !strings.HasPrefix(g.rng, "bytes=") {
			t.Errorf("a GET of %s without a range (Range %q, %d bytes)", key, g.rng, g.bytes)
		}
	}
	if len(got) == 0 || fetched*2 > part.Size {
		t.Errorf("reading %d small columns fetched %d bytes in %d GETs of a %d-byte object: want ranges, well under half of it", len(cols), fetched, len(got), part.Size)
	}
	t.Logf("%d columns of a %d-byte part: %d ranged GETs, %d bytes (%.1f%%)", len(cols), part.Size, len(got), fetched, 100*float64(fetched)/float64(part.Size))

	// Every column, images included, equals the local file's.
	gets.reset()
	sameTables(t, "every column", readParquetArrow(t, rd.Path(part.Rel), open(), nil), readParquetArrow(t, local.Name(), local, nil))
	for _, g := range gets.of(key) {
		if !strings.HasPrefix(g.rng, "bytes=") {
			t.Errorf("a GET of %s without a range (Range %q)", key, g.rng)
		}
	}
}
