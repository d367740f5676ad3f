package wal

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
)

var update = flag.Bool("update", false, "rewrite the golden segments under testdata/segments")

// goldenPayloads are the records of the golden segments: empty, short,
// compressible and not.
func goldenPayloads() [][]byte {
	out := [][]byte{{}, []byte("x"), []byte("hello, log")}
	for i := 0; i < 6; i++ {
		out = append(out, payload(i))
	}
	return out
}

var goldenCodecs = []struct {
	file string
	c    Compression
}{
	{"plain.wal", CompressionNone},
	{"s2.wal", CompressionS2},
	{"zstd.wal", CompressionZstd},
}

func makeSegment(t testing.TB, c Compression) []byte {
	fsys := vfs.NewMem()
	l, err := Open(fsys, testDir, Options{Compression: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range goldenPayloads() {
		if _, err := l.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := readFile(fsys, filepath.Join(testDir, segmentName(1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenSegments reads segments written by earlier builds: the format
// must stay readable. The uncompressed one must also be written byte for
// byte the same (compressed bytes may change with the codec library).
func TestGoldenSegments(t *testing.T) {
	for _, g := range goldenCodecs {
		t.Run(g.file, func(t *testing.T) {
			path := filepath.Join("testdata", "segments", g.file)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, makeSegment(t, g.c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if g.c == CompressionNone {
				if got := makeSegment(t, g.c); !bytes.Equal(got, want) {
					t.Fatalf("the on-disk format changed: %s differs from what this build writes", path)
				}
			}
			fsys := vfs.NewMem()
			fsys.MkdirAll(testDir)
			writeSegment(t, fsys, filepath.Join(testDir, segmentName(1)), want)
			recs, _, err := readAll(t, fsys, testDir)
			if err != nil {
				t.Fatal(err)
			}
			gp := goldenPayloads()
			if len(recs) != len(gp) {
				t.Fatalf("%d records, want %d", len(recs), len(gp))
			}
			for i := range gp {
				if !bytes.Equal(recs[i], gp[i]) {
					t.Fatalf("record %d differs", i)
				}
			}
			if g.c != CompressionNone && bytes.Equal(want, makeSegment(t, CompressionNone)) {
				t.Fatal("the compressed golden segment holds no compressed record")
			}
		})
	}
}

// TestReaderAllocationBound: a record header claiming a huge length must
// not make the reader allocate it.
func TestReaderAllocationBound(t *testing.T) {
	seg := appendSegmentHeader(nil, 1)
	seg = append(seg, 0, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff, kindFull|codecS2)
	seg = append(seg, make([]byte, 100)...)
	fsys := vfs.NewMem()
	fsys.MkdirAll(testDir)
	writeSegment(t, fsys, filepath.Join(testDir, segmentName(1)), seg)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := readAll(t, fsys, testDir)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("error %v, want ErrTruncated", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<16 {
		t.Fatalf("reading a %d-byte segment allocated %d bytes", len(seg), d)
	}
}

// FuzzReader feeds arbitrary bytes as the only segment: the reader must
// not panic, must number records consecutively, never buffer more than the
// file, and stop with nil or a *CorruptionError; Repair must then cut the
// log to exactly the records read.
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "segments", "*.wal"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:segmentHeaderSize])
	}
	f.Add([]byte{})
	f.Add([]byte(strings.Repeat("\x00", 64)))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := vfs.NewMem()
		fsys.MkdirAll(testDir)
		name := filepath.Join(testDir, segmentName(1))
		writeSegment(t, fsys, name, data)
		r, err := NewReader(fsys, testDir)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		var first Pos
		for r.Next() {
			if n == 0 {
				first = r.Pos()
			} else if r.Pos() != first+Pos(n) {
				t.Fatalf("record %d at pos %d after first %d", n, r.Pos(), first)
			}
			if len(r.Record()) > MaxRecordSize {
				t.Fatalf("record of %d bytes", len(r.Record()))
			}
			n++
		}
		if cap(r.buf) > len(data) {
			t.Fatalf("buffered %d bytes of a %d-byte file", cap(r.buf), len(data))
		}
		var ce *CorruptionError
		if r.Err() != nil && (!errors.As(r.Err(), &ce) || !ce.Last) {
			t.Fatalf("error %v, want a last-segment CorruptionError", r.Err())
		}
		r.Close()
		rep, err := Repair(fsys, testDir, false, nil)
		if err != nil {
			t.Fatalf("repair: %v", err)
		}
		if rep.Records < n {
			t.Fatalf("repair kept %d records, the reader read %d", rep.Records, n)
		}
		recs, _, err := readAll(t, fsys, testDir)
		if err != nil {
			t.Fatalf("read after repair: %v", err)
		}
		if int64(len(recs)) != rep.Records {
			t.Fatal(fmt.Sprintf("read %d records after repair, report says %d", len(recs), rep.Records))
		}
	})
}
