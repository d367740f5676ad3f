package logrec

import "testing"

func TestBufPoolGet(t *testing.T) {
	buf := func(c int) *[]byte { b := make([]byte, 0, c); return &b }
	for _, tc := range []struct {
		name    string
		free    []int // capacities freed, oldest first
		size    int
		wantCap int // the capacity get must return; 0: a new buffer
		minCap  int // for a new buffer: at least this
	}{
		{"small event takes the newest buffer", []int{8192, 4096}, 100, 4096, 0},
		{"image event skips small buffers", []int{300 << 10, 4096, 4096}, 169 << 10, 300 << 10, 0},
		{"nothing fits: a new buffer with room", []int{4096}, 1 << 20, 0, 1<<20 + 2048},
		{"only the newest few are looked at", append([]int{1 << 20}, repeatCap(4096, getScan+1)...), 512 << 10, 0, 512<<10 + 2048},
		{"empty pool", nil, 0, 0, minBuf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &BufPool{Max: 64 << 20}
			var freed []*[]byte
			for _, c := range tc.free {
				b := buf(c)
				freed = append(freed, b)
				p.Put(b)
			}
			got := p.Get(tc.size)
			reused := false
			for _, b := range freed {
				reused = reused || b == got
			}
			switch {
			case tc.wantCap != 0 && (!reused || cap(*got) != tc.wantCap):
				t.Fatalf("got a buffer of %d (reused %v), want the freed one of %d", cap(*got), reused, tc.wantCap)
			case tc.wantCap == 0 && (reused || cap(*got) < tc.minCap):
				t.Fatalf("got a buffer of %d (reused %v), want a new one of at least %d", cap(*got), reused, tc.minCap)
			}
			var idle int64
			for _, b := range p.free {
				idle += int64(cap(*b))
			}
			if idle != p.bytes {
				t.Fatalf("pool counts %d idle bytes, holds %d", p.bytes, idle)
			}
		})
	}
}

func repeatCap(c, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = c
	}
	return s
}

func TestBufPoolBound(t *testing.T) {
	p := &BufPool{Max: 10 << 10}
	for range 5 {
		b := make([]byte, 0, 4096)
		p.Put(&b)
	}
	if len(p.free) != 2 || p.bytes != 8192 {
		t.Fatalf("%d idle buffers, %d bytes; want 2 and 8192 under a 10 KiB bound", len(p.free), p.bytes)
	}
}
