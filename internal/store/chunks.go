package store

import (
	"io"
	"sync"
)

// chunkSize is the size of the blocks a part held in memory is kept in:
// a part grows by whole blocks, never copied to grow, and the blocks are
// reused by the next parts.
const chunkSize = 1 << 20

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// chunks is a byte sequence in blocks of chunkSize (the last one partly
// filled). Its ReadAt is safe for concurrent use once it is no longer
// written.
type chunks [][]byte

// write appends b.
func (c *chunks) write(b []byte) {
	for len(b) > 0 {
		n := len(*c)
		if n == 0 || len((*c)[n-1]) == chunkSize {
			*c = append(*c, chunkPool.Get().(*[chunkSize]byte)[:0])
			n++
		}
		last := &(*c)[n-1]
		k := min(len(b), chunkSize-len(*last))
		*last = append(*last, b[:k]...)
		b = b[k:]
	}
}

// free returns the blocks to the pool.
func (c chunks) free() {
	for _, b := range c {
		chunkPool.Put((*[chunkSize]byte)(b[:chunkSize]))
	}
}

func (c chunks) size() int64 {
	if len(c) == 0 {
		return 0
	}
	return int64(len(c)-1)*chunkSize + int64(len(c[len(c)-1]))
}

// ReadAt implements io.ReaderAt.
func (c chunks) ReadAt(p []byte, off int64) (int, error) {
	size := c.size()
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off < size {
		b := c[off/chunkSize][off%chunkSize:]
		k := copy(p[n:], b)
		n += k
		off += int64(k)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
