package logrec

import (
	"sync"

	"github.com/rlrec/rlrec/events"
)

// BufPool recycles the buffers event records are encoded into (by the
// recorder's hooks). Unlike a sync.Pool, it holds at most Max bytes of
// idle buffers, so the memory of buffers in existence stays within the
// queue's budget plus Max: a sync.Pool keeps whatever was put into it
// until two garbage collections later, which with image events doubled
// the queue's footprint. Its zero value keeps no idle buffer; it is safe
// for concurrent use.
type BufPool struct {
	mu    sync.Mutex
	free  []*[]byte
	bytes int64
	// Max bounds the idle buffers' bytes; set it before any Put.
	Max int64
}

// minBuf is the capacity of a new buffer.
const minBuf = 4096

// getScan is how many of the most recently freed buffers Get looks at for
// one large enough.
const getScan = 8

// Get returns a buffer for an event whose payload is size bytes: the most
// recently freed one that holds it (warm in the cache), or a new one.
// Small and large events share the pool, so taking the newest buffer
// regardless of size handed image events the small buffers that small
// events had just freed, and every image was copied into a fresh
// allocation.
func (p *BufPool) Get(size int) *[]byte {
	// Beyond its payload a record holds ids, a spec and its envelope,
	// usually well under 2 KiB; AppendMarshal grows a buffer that is
	// still too small, once.
	want := size + 2048
	p.mu.Lock()
	for i := len(p.free) - 1; i >= 0 && i >= len(p.free)-getScan; i-- {
		if bp := p.free[i]; cap(*bp) >= want {
			last := len(p.free) - 1
			p.free[i] = p.free[last]
			p.free[last] = nil
			p.free = p.free[:last]
			p.bytes -= int64(cap(*bp))
			p.mu.Unlock()
			return bp
		}
	}
	p.mu.Unlock()
	// A quarter more, so that slightly larger events of the same kind
	// (text, more ids) fit the buffer when it comes back.
	b := make([]byte, 0, max(minBuf, want+want/4))
	return &b
}

// Put returns a buffer, or drops it when the idle buffers would exceed
// the bound.
func (p *BufPool) Put(bp *[]byte) {
	c := int64(cap(*bp))
	p.mu.Lock()
	if p.bytes+c <= p.Max {
		p.free = append(p.free, bp)
		p.bytes += c
	}
	p.mu.Unlock()
}

// PayloadBytes is the size of ev's payload slabs, which is most of the size
// of its record.
func PayloadBytes(ev events.Event) int {
	var slabs [][]byte
	switch e := ev.(type) {
	case *events.ObservationEmitted:
		slabs = e.Observation
	case *events.ActionReceived:
		slabs = e.Action
	}
	n := 0
	for _, s := range slabs {
		n += len(s)
	}
	return n
}
