package schema

import (
	"errors"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// LeafKind is the kind of a fundamental space. Values are persisted (in
// inspect JSON and file metadata): do not change them.
type LeafKind uint8

const (
	KindBox           LeafKind = 1
	KindDiscrete      LeafKind = 2
	KindMultiBinary   LeafKind = 3
	KindMultiDiscrete LeafKind = 4
	KindText          LeafKind = 5
)

// Leaf is one fundamental leaf of a space, in canonical pre-order.
type Leaf struct {
	// Path joins dict keys and tuple indices with "."; it is "" for a
	// single-leaf space.
	Path  string
	Kind  LeafKind
	DType spacesv1.DataType
	// Shape is the per-lane element shape: the Box or MultiBinary shape,
	// [len(nvec)] for MultiDiscrete, [] for Discrete, nil for Text.
	Shape []int64
	// Numel is the product of Shape (1 for Discrete, 0 for Text).
	Numel int64
	// ElemSize is the byte width of one element (1 for MultiBinary and
	// Text).
	ElemSize int
	// Stride is the fixed byte size of one lane's leaf, or -1 for Text,
	// whose lanes vary in length.
	Stride int64
	// Spec is the leaf's own space spec.
	Spec *spacesv1.SpaceSpec
}

// Layout is a validated space with its leaves walked once, for use on hot
// paths. It is immutable and safe for concurrent use.
type Layout struct {
	Spec   *spacesv1.SpaceSpec
	Leaves []Leaf
}

var errTODO = errors.New("schema: not implemented")

// Compile validates spec and walks its leaves.
func Compile(spec *spacesv1.SpaceSpec) (*Layout, error) { return nil, errTODO }

// Leaves validates spec and returns its fundamental leaves in canonical
// pre-order.
func Leaves(spec *spacesv1.SpaceSpec) ([]Leaf, error) {
	l, err := Compile(spec)
	if err != nil {
		return nil, err
	}
	return l.Leaves, nil
}
