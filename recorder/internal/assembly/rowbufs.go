package assembly

import (
	"sync"
	"unsafe"
)

// Row buffers. An episode's rows and the arena holding their blobs are
// handed, whole, to the writer (Chunk), which writes them and is done
// with them; an episode of 46 cartpole steps grew its rows slice seven
// times and its arena once or twice on the way, every episode anew. The
// writer hands the buffers of a written job back here and the assembler
// starts each episode's rows with a recycled pair. Only pairs of up to
// rowBufsMaxRows rows and rowBufsMaxBytes of arena are kept, and at most
// rowBufsIdle bytes of them: a long or image-heavy episode's buffers are
// left to the garbage collector, and idle buffers stay small next to the
// memory budget.
const (
	rowBufsMaxRows  = 1 << 10
	rowBufsMaxBytes = 64 << 10
	rowBufsIdle     = 4 << 20
	// rowBufsStartRows is the capacity of an episode's rows slice when no
	// pair was idle (actionReceived): a 46-step cartpole episode then
	// grows it once, not seven times.
	rowBufsStartRows = 32
)

type rowBufs struct {
	rows  []stepRow
	arena []byte
}

// rowBufsFree is the process's idle pairs; newest last.
var rowBufsFree struct {
	sync.Mutex
	pairs []rowBufs
	bytes int
}

func (b rowBufs) size() int { return cap(b.rows)*int(unsafe.Sizeof(stepRow{})) + cap(b.arena) }

// takeRowBufs gives an episode without buffers the most recently recycled
// pair, if any.
func takeRowBufs(ep *episode) {
	if cap(ep.rows) != 0 || cap(ep.arena) != 0 {
		return
	}
	f := &rowBufsFree
	f.Lock()
	if n := len(f.pairs); n > 0 {
		b := f.pairs[n-1]
		f.pairs[n-1] = rowBufs{}
		f.pairs = f.pairs[:n-1]
		f.bytes -= b.size()
		ep.rows, ep.arena = b.rows, b.arena
	}
	f.Unlock()
}

// recycleRows hands a written chunk's buffers back and clears them; their
// contents must not be used afterwards.
func recycleRows(rows *[]stepRow, arena *[]byte) {
	b := rowBufs{rows: (*rows)[:0], arena: (*arena)[:0]}
	*rows, *arena = nil, nil
	if cap(b.rows) == 0 || cap(b.rows) > rowBufsMaxRows || cap(b.arena) > rowBufsMaxBytes {
		return
	}
	f := &rowBufsFree
	f.Lock()
	if f.bytes+b.size() <= rowBufsIdle {
		f.pairs = append(f.pairs, b)
		f.bytes += b.size()
	}
	f.Unlock()
}
