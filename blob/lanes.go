package blob

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// textCountSize and textLenSize are the widths of the Text slab header
// fields (u64 little-endian). Part of the wire format: do not change.
const (
	textCountSize = 8
	textLenSize   = 8
)

// MaxLanes is the largest lane count SplitLanesInto and JoinLanes accept.
// The runtime's N is num_envs (one to a few hundred); the cap bounds what a
// corrupt lane count can make the splitter allocate, since a space whose
// leaves are all empty would otherwise accept any N.
const MaxLanes = 1 << 16

// emptyLeaf backs the lane leaves of zero-size fixed leaves, so that every
// lane leaf is non-nil. Zero length and capacity: appending to it copies.
var emptyLeaf = []byte{}

// SplitLanes splits batch slabs (one per leaf of spec) into n lanes of
// single-value leaves, indexed [lane][leaf]. It validates spec on every
// call; hot paths compile the spec once and call SplitLanesInto.
func SplitLanes(spec *spacesv1.SpaceSpec, slabs [][]byte, n int) ([][][]byte, error) {
	layout, err := schema.Compile(spec)
	if err != nil {
		return nil, err
	}
	return SplitLanesInto(nil, layout, slabs, n)
}

// SplitLanesInto splits batch slabs (one per leaf of layout) into n lanes of
// single-value leaves, indexed [lane][leaf], reusing dst: it allocates
// nothing when cap(dst) >= n and every reused lane has capacity for
// len(layout.Leaves) leaves, and otherwise grows dst (keeping the old lane
// arrays for reuse). Lane leaves are sub-slices of the slabs with capacity
// limited to their length; no leaf bytes are copied. Every lane leaf is
// non-nil, even when empty.
//
// n is the lane count of the carrying event, 1 to MaxLanes; it is
// never derived from slab lengths. A fixed leaf's slab must be exactly
// n*Stride bytes; a Text slab must be [u64 count = n][u64 length x n]
// [bodies] with nothing after the bodies and every body valid UTF-8. On
// error the returned slice is dst[:0] and the error is a *SlabError.
func SplitLanesInto(dst [][][]byte, layout *schema.Layout, slabs [][]byte, n int) ([][][]byte, error) {
	nl := len(layout.Leaves)
	if n < 1 || n > MaxLanes {
		return dst[:0], slabErr(-1, "", -1, ErrLaneCount, "%d lanes, want 1 to %d", n, MaxLanes)
	}
	if len(slabs) != nl {
		return dst[:0], slabErr(-1, "", -1, ErrLeafCount, "%d slabs for a space of %d leaves", len(slabs), nl)
	}
	// Check every slab's size against n before sizing dst by n.
	for li := range layout.Leaves {
		lf := &layout.Leaves[li]
		if err := checkSlabSize(li, lf, slabs[li], n); err != nil {
			return dst[:0], err
		}
	}
	dst = growLanes(dst, n, nl)
	for li := range layout.Leaves {
		lf := &layout.Leaves[li]
		slab := slabs[li]
		if lf.Kind == schema.KindText {
			if err := splitText(dst, li, lf, slab, n); err != nil {
				return dst[:0], err
			}
			continue
		}
		if lf.Stride == 0 {
			for i := range n {
				dst[i][li] = emptyLeaf
			}
			continue
		}
		stride := int(lf.Stride)
		for i := range n {
			lo := i * stride
			dst[i][li] = slab[lo : lo+stride : lo+stride]
		}
	}
	return dst, nil
}

// checkSlabSize checks that slab has room for n lanes of lf: exactly
// n*Stride bytes for a fixed leaf, a count of n and n lengths for Text.
func checkSlabSize(li int, lf *schema.Leaf, slab []byte, n int) error {
	if lf.Kind == schema.KindText {
		if len(slab) < textCountSize {
			return slabErr(li, lf.Path, -1, ErrTextHeader, "slab has %d bytes, no room for the u64 count", len(slab))
		}
		if count := binary.LittleEndian.Uint64(slab); count != uint64(n) {
			return slabErr(li, lf.Path, -1, ErrTextCount, "header count %d, %d lanes", count, n)
		}
		if uint64(len(slab)-textCountSize)/textLenSize < uint64(n) {
			return slabErr(li, lf.Path, -1, ErrTextHeader, "slab has %d bytes, %d lengths need %d", len(slab), n, textCountSize+textLenSize*uint64(n))
		}
		return nil
	}
	// Stride <= schema.MaxLeafBytes and n <= MaxLanes: the product fits.
	if want := int64(n) * lf.Stride; int64(len(slab)) != want {
		return slabErr(li, lf.Path, -1, ErrSlabSize, "slab has %d bytes, %d lanes x %d bytes is %d", len(slab), n, lf.Stride, want)
	}
	return nil
}

// growLanes returns dst resized to n lanes of nl leaves each, reusing what
// capacity it has.
func growLanes(dst [][][]byte, n, nl int) [][][]byte {
	if cap(dst) < n {
		grown := make([][][]byte, n)
		copy(grown, dst[:cap(dst)])
		dst = grown
	} else {
		dst = dst[:n]
	}
	var flat [][]byte
	for i := range dst {
		if cap(dst[i]) >= nl {
			dst[i] = dst[i][:nl]
			continue
		}
		if len(flat) < nl {
			flat = make([][]byte, (n-i)*nl)
		}
		dst[i] = flat[:nl:nl]
		flat = flat[nl:]
	}
	return dst
}

// splitText splits a Text slab [u64 count][u64 len x count][bodies] whose
// header checkSlabSize has checked.
func splitText(dst [][][]byte, li int, lf *schema.Leaf, slab []byte, n int) error {
	body := textCountSize + textLenSize*n
	off := body
	for i := range n {
		l := binary.LittleEndian.Uint64(slab[textCountSize+textLenSize*i:])
		if l > uint64(len(slab)-off) {
			return slabErr(li, lf.Path, i, ErrTextLength, "length %d at body offset %d, %d bytes left", l, off-body, len(slab)-off)
		}
		end := off + int(l)
		s := slab[off:end:end]
		if !utf8.Valid(s) {
			return slabErr(li, lf.Path, i, ErrInvalidUTF8, "%d bytes", len(s))
		}
		dst[i][li] = s
		off = end
	}
	if off != len(slab) {
		return slabErr(li, lf.Path, -1, ErrTextTrailing, "%d bytes after the last body", len(slab)-off)
	}
	return nil
}

// JoinLanes is the inverse of SplitLanes: per-lane leaves, indexed
// [lane][leaf], to batch slabs, one per leaf of spec.
func JoinLanes(spec *spacesv1.SpaceSpec, lanes [][][]byte) ([][]byte, error) {
	layout, err := schema.Compile(spec)
	if err != nil {
		return nil, err
	}
	return JoinLanesLayout(layout, lanes)
}

// JoinLanesLayout is JoinLanes for a compiled layout. It checks every lane
// leaf (fixed leaves at their stride, Text leaves valid UTF-8) and builds
// the Text headers. The slabs share one newly allocated buffer; the input
// is not retained.
func JoinLanesLayout(layout *schema.Layout, lanes [][][]byte) ([][]byte, error) {
	n, nl := len(lanes), len(layout.Leaves)
	if n < 1 || n > MaxLanes {
		return nil, slabErr(-1, "", -1, ErrLaneCount, "%d lanes, want 1 to %d", n, MaxLanes)
	}
	total := 0
	for i, lane := range lanes {
		if len(lane) != nl {
			return nil, slabErr(-1, "", i, ErrLeafCount, "%d leaves in the lane, %d in the space", len(lane), nl)
		}
	}
	for li := range layout.Leaves {
		lf := &layout.Leaves[li]
		if lf.Kind == schema.KindText {
			total += textCountSize + textLenSize*n
		}
		for i, lane := range lanes {
			l := lane[li]
			if lf.Kind == schema.KindText {
				if !utf8.Valid(l) {
					return nil, slabErr(li, lf.Path, i, ErrInvalidUTF8, "%d bytes", len(l))
				}
			} else if int64(len(l)) != lf.Stride {
				return nil, slabErr(li, lf.Path, i, ErrSlabSize, "lane leaf has %d bytes, want %d", len(l), lf.Stride)
			}
			total += len(l)
		}
	}
	buf := make([]byte, 0, total)
	slabs := make([][]byte, nl)
	for li := range layout.Leaves {
		start := len(buf)
		if layout.Leaves[li].Kind == schema.KindText {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(n))
			for _, lane := range lanes {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(len(lane[li])))
			}
		}
		for _, lane := range lanes {
			buf = append(buf, lane[li]...)
		}
		slabs[li] = buf[start:len(buf):len(buf)]
	}
	return slabs, nil
}
