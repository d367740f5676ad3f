package wal

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/rlrec/rlrec/internal/vfs"
)

// literalFirst returns a payload starting with first, then n random bytes
// (which S2 stores as one literal) and a compressible tail.
func literalFirst(first byte, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	b := []byte{first}
	for range n {
		b = append(b, byte(rng.Uint32()))
	}
	for j := range 2000 {
		b = append(b, byte(j%5))
	}
	return b
}

func TestDecoderFirstS2(t *testing.T) {
	// Literal lengths on both sides of each length encoding: in the tag
	// (< 60), then 1, 2 and 3 more bytes.
	for _, n := range []int{0, 1, 58, 59, 60, 61, 255, 256, 257, 65535, 65536, 70000} {
		p := literalFirst(0xA5, n, uint64(n))
		enc := s2.Encode(nil, p)
		var d decoder
		if b, ok := d.first(codecS2, enc); !ok || b != 0xA5 {
			t.Errorf("literal of %d bytes: first = %#x, %v; want 0xa5", n+1, b, ok)
		}
	}
	var d decoder
	for _, tc := range []struct {
		name string
		typ  byte
		body []byte
	}{
		{"empty uncompressed", codecNone, nil},
		{"empty s2", codecS2, nil},
		{"s2 of nothing", codecS2, s2.Encode(nil, nil)},
		{"s2 starting with a copy", codecS2, []byte{10, 0x01, 0x00}},
		{"s2 length past the end", codecS2, []byte{10, 0xF0}},
		{"zstd", codecZstd, []byte{1, 2, 3}},
	} {
		if b, ok := d.first(tc.typ, tc.body); ok {
			t.Errorf("%s: first = %#x, true; want not ok", tc.name, b)
		}
	}
}

func TestReaderFilter(t *testing.T) {
	recs := make([][]byte, 0, 300)
	for i := range 300 {
		first := byte(i % 5)
		switch i % 3 {
		case 0: // compressible from the start
			recs = append(recs, append([]byte{first}, bytes.Repeat([]byte("abcdefg"), 100)...))
		case 1: // a long literal first
			recs = append(recs, literalFirst(first, 100+i, uint64(i)))
		case 2: // short, stored as it is
			recs = append(recs, []byte{first, byte(i)})
		}
	}
	recs = append(recs, []byte{}) // an empty record is never kept
	keep := func(b byte) bool { return b == 2 || b == 4 }
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"s2", Options{MinCompressSize: 64}},
		{"zstd", Options{Compression: CompressionZstd, MinCompressSize: 64}},
		{"none", Options{Compression: CompressionNone}},
		{"small segments", Options{MinCompressSize: 64, SegmentSize: 16 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			l, err := Open(fsys, testDir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if _, err := l.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			rd, err := NewReader(fsys, testDir)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			rd.Filter(keep)
			want := 0
			for i, r := range recs {
				if len(r) == 0 || !keep(r[0]) {
					continue
				}
				if !rd.Next() {
					t.Fatalf("record %d: Next stopped: %v", i, rd.Err())
				}
				if !bytes.Equal(rd.Record(), r) || rd.Pos() != Pos(i+1) {
					t.Fatalf("got pos %d, want record %d at pos %d", rd.Pos(), i, i+1)
				}
				want++
			}
			if rd.Next() {
				t.Fatalf("an extra record at pos %d", rd.Pos())
			}
			if err := rd.Err(); err != nil || want == 0 {
				t.Fatalf("err %v after %d records", err, want)
			}
		})
	}
}

// BenchmarkReaderFilter reads a log of compressible 2 KiB records, all of
// them or (filtered) none, as recovery's marker pass does with events.
func BenchmarkReaderFilter(b *testing.B) {
	fsys := vfs.NewMem()
	l, err := Open(fsys, testDir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 5000
	var size int64
	for i := range n {
		p := literalFirst(1, 32, uint64(i))
		size += int64(len(p))
		if _, err := l.Append(p); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		keep func(byte) bool
	}{
		{"all", nil},
		{"none", func(first byte) bool { return first != 1 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				rd, err := NewReader(fsys, testDir)
				if err != nil {
					b.Fatal(err)
				}
				if bc.keep != nil {
					rd.Filter(bc.keep)
				}
				for rd.Next() {
				}
				if err := rd.Err(); err != nil {
					b.Fatal(err)
				}
				rd.Close()
			}
		})
	}
}
