package blob

import (
	"fmt"
	"math/bits"
)

// leafTag is the protobuf key of SpaceValue.leaves: field 1, wire type 2
// (length-delimited). Part of the wire format: do not change.
const leafTag = 0x0a

// maxVarintLen is the longest varint a protobuf decoder accepts.
const maxVarintLen = 10

// Size returns the length of the blob of leaves.
func Size(leaves [][]byte) int {
	n := 0
	for _, l := range leaves {
		n += 1 + varintLen(uint64(len(l))) + len(l)
	}
	return n
}

func varintLen(v uint64) int {
	// 1 byte per 7 bits, at least 1.
	return (bits.Len64(v|1) + 6) / 7
}

// Encode returns the blob of leaves: the protobuf encoding of
// SpaceValue{leaves}. It allocates once.
func Encode(leaves [][]byte) []byte { return Append(nil, leaves) }

// Append appends the blob of leaves to dst and returns the extended slice.
// It does not allocate when dst has room for Size(leaves) more bytes, and
// allocates once otherwise.
func Append(dst []byte, leaves [][]byte) []byte {
	if size := Size(leaves); cap(dst)-len(dst) < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}
	for _, l := range leaves {
		dst = append(dst, leafTag)
		v := uint64(len(l))
		for v >= 0x80 {
			dst = append(dst, byte(v)|0x80)
			v >>= 7
		}
		dst = append(dst, byte(v))
		dst = append(dst, l...)
	}
	return dst
}

// Decode returns the leaves of blob b as sub-slices of b. See the package
// documentation for what is accepted. It allocates only the returned slice
// header array (once), never leaf bytes.
func Decode(b []byte) ([][]byte, error) {
	n := 0
	for off := 0; off < len(b); n++ {
		_, next, err := nextLeaf(b, off, n)
		if err != nil {
			return nil, err
		}
		off = next
	}
	if n == 0 {
		return nil, nil
	}
	return DecodeInto(make([][]byte, 0, n), b)
}

// DecodeInto is Decode appending to dst[:0], so a caller that keeps dst
// between calls decodes without allocating. On error it returns dst[:0].
func DecodeInto(dst [][]byte, b []byte) ([][]byte, error) {
	dst = dst[:0]
	for off := 0; off < len(b); {
		leaf, next, err := nextLeaf(b, off, len(dst))
		if err != nil {
			return dst[:0], err
		}
		dst = append(dst, leaf)
		off = next
	}
	return dst, nil
}

// nextLeaf decodes the field starting at off, the index-th leaf, and
// returns its bytes (capacity limited to its length) and the offset after
// it.
func nextLeaf(b []byte, off, index int) ([]byte, int, error) {
	tag, n, err := uvarint(b[off:])
	if err != nil {
		return nil, 0, &DecodeError{Offset: off, Leaf: index, Err: fmt.Errorf("%w reading field tag", err)}
	}
	if tag != leafTag {
		num, wt := tag>>3, tag&7
		if num == 1 {
			return nil, 0, &DecodeError{Offset: off, Leaf: index, Err: fmt.Errorf("%w: wire type %d, want 2 (length-delimited)", ErrWireType, wt)}
		}
		return nil, 0, &DecodeError{Offset: off, Leaf: index, Err: fmt.Errorf("%w: field number %d wire type %d (only field 1, leaves, is written)", ErrUnknownField, num, wt)}
	}
	p := off + n
	length, n, err := uvarint(b[p:])
	if err != nil {
		return nil, 0, &DecodeError{Offset: off, Leaf: index, Err: fmt.Errorf("%w reading leaf length", err)}
	}
	p += n
	if length > uint64(len(b)-p) {
		return nil, 0, &DecodeError{Offset: off, Leaf: index, Err: fmt.Errorf("%w: leaf length %d, %d bytes left", ErrTruncated, length, len(b)-p)}
	}
	end := p + int(length)
	return b[p:end:end], end, nil
}

// uvarint decodes a base-128 varint exactly as protobuf does: up to 10
// bytes, non-minimal encodings allowed, the 10th byte at most 1.
func uvarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < maxVarintLen; i++ {
		if i >= len(b) {
			return 0, 0, ErrTruncated
		}
		c := b[i]
		if i == maxVarintLen-1 && c > 1 {
			return 0, 0, ErrVarintOverflow
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, ErrVarintOverflow
}
