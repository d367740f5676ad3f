package parquetout

import (
	"bufio"
	"io"
	"sync"
)

// Every file gets a parquet-go writer of its own, built for it and dropped
// after it: parquet-go v0.32.0's Writer.Reset and GenericWriter.Reset
// clear the column paths the writer shares with the footers it wrote, so
// every file written after a reset has an empty path_in_schema in every
// column chunk (parquet-go issue #602; see the package doc). The write
// buffer in front of a file is rlrec's own, so that it outlives the
// writer: parquet-go's own buffering is turned off in
// Config.writerOptions.

// writeBuffers recycles the write buffers of files, one pool per size.
var writeBuffers sync.Map // int -> *sync.Pool of *bufio.Writer

// getWriteBuffer returns a write buffer of size bytes in front of w.
func getWriteBuffer(w io.Writer, size int) *bufio.Writer {
	p, _ := writeBuffers.LoadOrStore(size, new(sync.Pool))
	if b, ok := p.(*sync.Pool).Get().(*bufio.Writer); ok {
		b.Reset(w)
		return b
	}
	return bufio.NewWriterSize(w, size)
}

// putWriteBuffer hands back a buffer of getWriteBuffer once its file is
// written; what it still holds is discarded.
func putWriteBuffer(b *bufio.Writer) {
	if b == nil {
		return
	}
	b.Reset(nil)
	if p, ok := writeBuffers.Load(b.Size()); ok {
		p.(*sync.Pool).Put(b)
	}
}
