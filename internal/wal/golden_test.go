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

var update = flag.Bool("update", false, "rewrite the golden segments of the current format version under testdata/segments")

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

// goldenDir holds the golden segments of a format version. Those of
// earlier versions were written by earlier builds and are never rewritten.
func goldenDir(version uint32) string {
	return filepath.Join("testdata", "segments", fmt.Sprintf("v%d", version))
}

// goldenFiles lists every golden segment, of every version.
func goldenFiles() []string {
	files, _ := filepath.Glob(filepath.Join("testdata", "segments", "v*", "*.wal"))
	return files
}

// TestGoldenSegments reads segments written by earlier builds, of every
// format version: they must stay readable. The uncompressed one of the
// current version must also be written byte for byte the same (compressed
// bytes may change with the codec library).
func TestGoldenSegments(t *testing.T) {
	for _, version := range []uint32{formatV1, formatV2} {
		for _, g := range goldenCodecs {
			t.Run(fmt.Sprintf("v%d/%s", version, g.file), func(t *testing.T) {
				path := filepath.Join(goldenDir(version), g.file)
				current := version == formatVersion
				if *update && current {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, makeSegment(t, g.c), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create those of the current version)", err)
				}
				if v, _, err := parseSegmentHeader(want); err != nil || v != version {
					t.Fatalf("%s: version %d, %v", path, v, err)
				}
				if current && g.c == CompressionNone {
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
				plain, err := os.ReadFile(filepath.Join(goldenDir(version), "plain.wal"))
				if err != nil {
					t.Fatal(err)
				}
				if g.c != CompressionNone && bytes.Equal(want, plain) {
					t.Fatal("the compressed golden segment holds no compressed record")
				}
				// A log of an earlier version is continued in a new
				// segment of the current one.
				l, err := Open(fsys, testDir, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if pos, err := l.Append([]byte("next")); err != nil || pos != Pos(len(gp)+1) {
					t.Fatalf("append: %d %v", pos, err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if segs, _ := listSegments(fsys, testDir); (len(segs) == 1) != current {
					t.Fatalf("%d segments after an append", len(segs))
				}
				recs, _, err = readAll(t, fsys, testDir)
				if err != nil || len(recs) != len(gp)+1 || string(recs[len(gp)]) != "next" {
					t.Fatalf("after an append: %d records, %v", len(recs), err)
				}
			})
		}
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
// file, and stop with nil or a *CorruptionError; Repair must then cut a
// torn tail to exactly the records read, refuse corruption, and with
// salvage keep at least the records read and leave a log that reads
// cleanly.
func FuzzReader(f *testing.F) {
	for _, name := range goldenFiles() {
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
			} else if r.Pos() <= first+Pos(n-1) {
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
		switch {
		case ce != nil && !ce.Torn:
			var rce *CorruptionError
			if !errors.As(err, &rce) || rce.Offset != ce.Offset || rce.Segment != ce.Segment {
				t.Fatalf("repair of corruption at %d: %v", ce.Offset, err)
			}
			if rep, err = Repair(fsys, testDir, true, nil); err != nil {
				t.Fatalf("salvage: %v", err)
			}
			if rep.Records < n {
				t.Fatalf("salvage kept %d records, the reader read %d", rep.Records, n)
			}
		case err != nil:
			t.Fatalf("repair: %v", err)
		case rep.Records != n:
			t.Fatalf("repair kept %d records, the reader read %d", rep.Records, n)
		}
		recs, _, err := readAll(t, fsys, testDir)
		if err != nil {
			t.Fatalf("read after repair: %v", err)
		}
		if int64(len(recs)) != rep.Records {
			t.Fatalf("read %d records after repair, report says %d", len(recs), rep.Records)
		}
	})
}

// FuzzPayload frames arbitrary bytes as a record with a valid checksum and
// any codec: decoding must fail cleanly or succeed within the size limit.
func FuzzPayload(f *testing.F) {
	for _, name := range goldenFiles() {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		version, _, err := parseSegmentHeader(b)
		if err != nil {
			f.Fatal(err)
		}
		for off := segmentHeaderSize; off < len(b); {
			r, err := parseRecord(b, off, version)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(r.typ>>4, b[r.start:r.end])
			off = r.end
		}
	}
	f.Fuzz(func(t *testing.T, codec byte, body []byte) {
		const limit = 1 << 20
		seg := appendSegmentHeader(nil, 1)
		rec := append(make([]byte, recordHeaderSize), body...)
		finishRecord(rec, (codec%3)<<4, 1, 0)
		seg = append(seg, rec...)
		fsys := vfs.NewMem()
		fsys.MkdirAll(testDir)
		writeSegment(t, fsys, filepath.Join(testDir, segmentName(1)), seg)
		r, err := NewReader(fsys, testDir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.dec.limit = limit
		if r.Next() {
			if len(r.Record()) > limit {
				t.Fatalf("decoded %d bytes, over the %d limit", len(r.Record()), limit)
			}
			if codec%3 == 0 && !bytes.Equal(r.Record(), body) {
				t.Fatal("uncompressed record changed")
			}
		} else if !errors.Is(r.Err(), ErrBadRecord) {
			t.Fatalf("error %v, want ErrBadRecord", r.Err())
		}
		if r.Next() {
			t.Fatal("a second record")
		}
	})
}
