package recorder

import "sync"

// bufPool recycles the buffers hooks encode their events into. Unlike a
// sync.Pool, it holds at most max bytes of idle buffers, so the memory of
// buffers in existence stays within the queue's budget plus max: a
// sync.Pool keeps whatever was put into it until two garbage collections
// later, which with image events doubled the queue's footprint.
type bufPool struct {
	mu    sync.Mutex
	free  []*[]byte
	bytes int64
	max   int64
}

// minBuf is the capacity of a new buffer.
const minBuf = 4096

func (p *bufPool) get() *[]byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		bp := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.bytes -= int64(cap(*bp))
		p.mu.Unlock()
		return bp
	}
	p.mu.Unlock()
	b := make([]byte, 0, minBuf)
	return &b
}

// put returns a buffer, or drops it when the idle buffers would exceed
// the bound.
func (p *bufPool) put(bp *[]byte) {
	c := int64(cap(*bp))
	p.mu.Lock()
	if p.bytes+c <= p.max {
		p.free = append(p.free, bp)
		p.bytes += c
	}
	p.mu.Unlock()
}
