// Package blob implements the leaves-to-blob codec of the rlmesh runtime and
// the splitting of N-lane batch slabs into per-lane values.
package blob

import (
	"errors"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

var errTODO = errors.New("blob: not implemented")

// Encode returns the blob of leaves.
func Encode(leaves [][]byte) []byte { return Append(nil, leaves) }

// Append appends the blob of leaves to dst.
func Append(dst []byte, leaves [][]byte) []byte { return dst }

// Decode returns the leaves of blob b as sub-slices of b.
func Decode(b []byte) ([][]byte, error) { return nil, errTODO }

// SplitLanes splits batch slabs (one per leaf of spec) into n lanes of
// single-value leaves, indexed [lane][leaf].
func SplitLanes(spec *spacesv1.SpaceSpec, slabs [][]byte, n int) ([][][]byte, error) {
	return nil, errTODO
}

// SplitLanesInto is SplitLanes for a compiled layout, reusing dst.
func SplitLanesInto(dst [][][]byte, layout *schema.Layout, slabs [][]byte, n int) ([][][]byte, error) {
	return nil, errTODO
}

// JoinLanes is the inverse of SplitLanes: per-lane leaves to batch slabs.
func JoinLanes(spec *spacesv1.SpaceSpec, lanes [][][]byte) ([][]byte, error) { return nil, errTODO }
