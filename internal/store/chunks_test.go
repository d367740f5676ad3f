package store

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []int
	}{
		{"empty", nil},
		{"one byte", []int{1}},
		{"one block exactly", []int{chunkSize}},
		{"across blocks", []int{chunkSize - 3, 7, 2*chunkSize + 5, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c chunks
			var want []byte
			for i, n := range tc.writes {
				b := bytes.Repeat([]byte{byte(i + 1)}, n)
				c.write(b)
				want = append(want, b...)
			}
			if c.size() != int64(len(want)) {
				t.Fatalf("size %d, want %d", c.size(), len(want))
			}
			got, err := io.ReadAll(io.NewSectionReader(c, 0, c.size()))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(want))
			}
			for _, off := range []int64{0, chunkSize - 1, chunkSize, int64(len(want)) - 1} {
				if off < 0 || off >= int64(len(want)) {
					continue
				}
				p := make([]byte, 10)
				n, err := c.ReadAt(p, off)
				end := min(off+10, int64(len(want)))
				if !bytes.Equal(p[:n], want[off:end]) || (end-off < 10) != errors.Is(err, io.EOF) {
					t.Errorf("ReadAt(10 at %d) = %d, %v", off, n, err)
				}
			}
			if n, err := c.ReadAt(make([]byte, 1), int64(len(want))); n != 0 || err != io.EOF {
				t.Errorf("ReadAt at the end = %d, %v; want 0, EOF", n, err)
			}
			c.free()
		})
	}
}
