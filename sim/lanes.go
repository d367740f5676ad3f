package sim

import (
	"encoding/binary"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// textLeaves returns, for each leaf of spec in canonical pre-order,
// whether it is Text (a variable-length slab); nil when spec does not
// compile (the built-in envs' specs always do).
func textLeaves(spec *spacesv1.SpaceSpec) []bool {
	l, err := schema.Compile(spec)
	if err != nil {
		return nil
	}
	text := make([]bool, len(l.Leaves))
	for i, lf := range l.Leaves {
		text[i] = lf.Kind == schema.KindText
	}
	return text
}

// laneSlabs returns lane's part of the n-lane slabs as one-lane slabs,
// reusing dst: a fixed-size leaf's part is a sub-slice of its slab (no
// copy), a Text leaf's is a one-lane Text slab ([u64 1][u64 len][body])
// built in dst's buffer. isText marks the Text leaves.
func laneSlabs(dst, slabs [][]byte, isText []bool, lane, n int) [][]byte {
	if len(dst) != len(slabs) {
		dst = make([][]byte, len(slabs))
	}
	for li, slab := range slabs {
		if li < len(isText) && isText[li] {
			count := int(binary.LittleEndian.Uint64(slab))
			off := 8 + 8*count
			for j := range lane {
				off += int(binary.LittleEndian.Uint64(slab[8+8*j:]))
			}
			size := int(binary.LittleEndian.Uint64(slab[8+8*lane:]))
			b := dst[li]
			if cap(b) < 16+size {
				b = make([]byte, 0, 16+size)
			}
			b = binary.LittleEndian.AppendUint64(b[:0], 1)
			b = binary.LittleEndian.AppendUint64(b, uint64(size))
			dst[li] = append(b, slab[off:off+size]...)
			continue
		}
		w := len(slab) / n
		dst[li] = slab[lane*w : (lane+1)*w : (lane+1)*w]
	}
	return dst
}

// copySlabs copies src into dst's buffers and returns dst.
func copySlabs(dst, src [][]byte) [][]byte {
	if len(dst) != len(src) {
		dst = make([][]byte, len(src))
	}
	for i, s := range src {
		dst[i] = append(dst[i][:0], s...)
	}
	return dst
}

// sameSlabs reports whether a and b hold the same bytes.
func sameSlabs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}
