package blob

import (
	"errors"
	"fmt"
)

// Sentinel errors. Decode failures come wrapped in a *DecodeError, slab
// failures in a *SlabError; match the sentinels with errors.Is.
var (
	// ErrTruncated is returned when a tag, a length varint or a leaf's
	// bytes run past the end of the blob.
	ErrTruncated = errors.New("blob: truncated")
	// ErrVarintOverflow is returned for a varint longer than 10 bytes or
	// whose value exceeds 64 bits.
	ErrVarintOverflow = errors.New("blob: varint overflows 64 bits")
	// ErrWireType is returned for field 1 (leaves) with a wire type other
	// than 2 (length-delimited).
	ErrWireType = errors.New("blob: wrong wire type for leaves field")
	// ErrUnknownField is returned for any field number other than 1; the
	// runtime writes only field 1, so anything else is corruption.
	ErrUnknownField = errors.New("blob: unknown field")

	// ErrLaneCount is returned for a lane count below 1, or one too large
	// for a slab to hold.
	ErrLaneCount = errors.New("blob: bad lane count")
	// ErrLeafCount is returned when the number of slabs (or of a lane's
	// leaves) differs from the number of leaves of the space.
	ErrLeafCount = errors.New("blob: leaf count does not match the space")
	// ErrSlabSize is returned for a fixed-stride slab whose length is not
	// N times the leaf's stride, and for a lane leaf of the wrong length.
	ErrSlabSize = errors.New("blob: slab size does not fit the lane count")
	// ErrTextHeader is returned for a Text slab too short for its
	// [u64 count][u64 length x count] header.
	ErrTextHeader = errors.New("blob: text slab header truncated")
	// ErrTextCount is returned for a Text slab whose count is not N.
	ErrTextCount = errors.New("blob: text slab count is not the lane count")
	// ErrTextLength is returned for a Text slab whose declared lengths run
	// past its end.
	ErrTextLength = errors.New("blob: text lengths run past the slab")
	// ErrTextTrailing is returned for bytes after the last Text body.
	ErrTextTrailing = errors.New("blob: trailing bytes after text bodies")
	// ErrInvalidUTF8 is returned for a Text leaf that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("blob: text is not valid UTF-8")
	// ErrLeafSize is returned by DecodeLeaf and the Append* element
	// decoders for leaf bytes whose length does not fit the leaf.
	ErrLeafSize = errors.New("blob: leaf size does not fit its space")
	// ErrDType is returned by the element decoders for a dtype they
	// cannot decode (unspecified or outside the enum).
	ErrDType = errors.New("blob: cannot decode data type")
)

// DecodeError is a malformed blob.
type DecodeError struct {
	// Offset is the byte offset in the blob of the field (tag) being
	// decoded when decoding failed.
	Offset int
	// Leaf is the index of the leaf being decoded (the number of leaves
	// decoded before the failure).
	Leaf int
	// Err wraps one of ErrTruncated, ErrVarintOverflow, ErrWireType,
	// ErrUnknownField.
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%v (leaf %d at offset %d)", e.Err, e.Leaf, e.Offset)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// SlabError is a batch slab (or a lane leaf) that does not fit its space.
type SlabError struct {
	// Leaf is the leaf index, or -1 when the error concerns the leaf count.
	Leaf int
	// Path is the leaf's path ("" for a single-leaf space or Leaf == -1).
	Path string
	// Lane is the lane index when one lane is at fault, else -1.
	Lane int
	// Err wraps one of the slab sentinels (ErrLaneCount, ErrLeafCount,
	// ErrSlabSize, ErrText*, ErrInvalidUTF8).
	Err error
}

func (e *SlabError) Error() string {
	switch {
	case e.Leaf < 0 && e.Lane < 0:
		return e.Err.Error()
	case e.Leaf < 0:
		return fmt.Sprintf("%v (lane %d)", e.Err, e.Lane)
	case e.Lane >= 0:
		return fmt.Sprintf("%v (leaf %d %q, lane %d)", e.Err, e.Leaf, e.Path, e.Lane)
	}
	return fmt.Sprintf("%v (leaf %d %q)", e.Err, e.Leaf, e.Path)
}

func (e *SlabError) Unwrap() error { return e.Err }

func slabErr(leaf int, path string, lane int, sentinel error, format string, args ...any) error {
	return &SlabError{Leaf: leaf, Path: path, Lane: lane,
		Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
