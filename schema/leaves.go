package schema

import (
	"strconv"
	"strings"

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

// String returns the kind's name as the runtime spells the space class:
// "Box", "Discrete", "MultiBinary", "MultiDiscrete", "Text".
func (k LeafKind) String() string {
	switch k {
	case KindBox:
		return "Box"
	case KindDiscrete:
		return "Discrete"
	case KindMultiBinary:
		return "MultiBinary"
	case KindMultiDiscrete:
		return "MultiDiscrete"
	case KindText:
		return "Text"
	}
	return "LeafKind(" + strconv.Itoa(int(k)) + ")"
}

// Leaf is one fundamental leaf of a space, in canonical pre-order.
type Leaf struct {
	// Path joins the dict keys and tuple indices on the way to the leaf
	// with ".", each key escaped by EscapeKey ("%" as "%25", "." as
	// "%2E"); it is "" for a single-leaf space. SplitPath gives the keys
	// back.
	Path  string
	Kind  LeafKind
	DType spacesv1.DataType
	// Shape is the per-lane element shape: the Box or MultiBinary shape,
	// the declared shape (or [len(nvec)] when none is declared) for
	// MultiDiscrete, [] for Discrete, nil for Text.
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

// Fixed reports whether every lane of the leaf has the same byte size
// (every kind but Text).
func (l *Leaf) Fixed() bool { return l.Stride >= 0 }

// String renders the leaf on one line, for listings: "Box(84,84,3) uint8",
// "Box() float32" (a scalar box), "Discrete(2) int64",
// "Discrete(5,start=-2) int64", "MultiBinary(3)", "MultiDiscrete(4,4) int64",
// "Text". The path is not included.
func (l Leaf) String() string {
	var b strings.Builder
	b.WriteString(l.Kind.String())
	switch l.Kind {
	case KindText:
		return b.String()
	case KindBox, KindMultiBinary:
		writeDims(&b, l.Shape)
	case KindDiscrete:
		d := l.Spec.GetDiscrete()
		b.WriteByte('(')
		b.WriteString(strconv.FormatInt(d.GetN(), 10))
		if d.GetStart() != 0 {
			b.WriteString(",start=")
			b.WriteString(strconv.FormatInt(d.GetStart(), 10))
		}
		b.WriteByte(')')
	case KindMultiDiscrete:
		writeDims(&b, l.Spec.GetMultiDiscrete().GetNvec())
	}
	if l.Kind != KindMultiBinary {
		b.WriteByte(' ')
		b.WriteString(DTypeName(l.DType))
	}
	return b.String()
}

func writeDims(b *strings.Builder, dims []int64) {
	b.WriteByte('(')
	for i, d := range dims {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(')')
}

// Layout is a validated space with its leaves walked once, for use on hot
// paths. It is immutable and safe for concurrent use; the spec it was
// compiled from must not be modified afterwards (Layout.Spec and Leaf.Spec
// point into it).
type Layout struct {
	Spec   *spacesv1.SpaceSpec
	Leaves []Leaf
	// HasText reports whether any leaf is Text (variable length).
	HasText bool
	// FixedStride is the sum of all leaves' strides when no leaf is Text,
	// and -1 otherwise.
	FixedStride int64
}

// Compile validates spec and walks its leaves.
func Compile(spec *spacesv1.SpaceSpec) (*Layout, error) {
	l := &Layout{Spec: spec}
	err := walk(spec, "", 0, func(lf Leaf) { l.Leaves = append(l.Leaves, lf) })
	if err != nil {
		return nil, err
	}
	for i := range l.Leaves {
		if l.Leaves[i].Kind == KindText {
			l.HasText = true
		}
		l.FixedStride += l.Leaves[i].Stride
	}
	if l.HasText {
		l.FixedStride = -1
	}
	return l, nil
}

// Leaves validates spec and returns its fundamental leaves in canonical
// pre-order.
func Leaves(spec *spacesv1.SpaceSpec) ([]Leaf, error) {
	l, err := Compile(spec)
	if err != nil {
		return nil, err
	}
	return l.Leaves, nil
}

// DTypeSize returns the byte width of one element of dt, and false for
// DATA_TYPE_UNSPECIFIED and values outside the enum.
func DTypeSize(dt spacesv1.DataType) (int, bool) {
	switch dt {
	case spacesv1.DataType_DATA_TYPE_BOOL, spacesv1.DataType_DATA_TYPE_UINT8, spacesv1.DataType_DATA_TYPE_INT8:
		return 1, true
	case spacesv1.DataType_DATA_TYPE_UINT16, spacesv1.DataType_DATA_TYPE_INT16, spacesv1.DataType_DATA_TYPE_FLOAT16:
		return 2, true
	case spacesv1.DataType_DATA_TYPE_UINT32, spacesv1.DataType_DATA_TYPE_INT32, spacesv1.DataType_DATA_TYPE_FLOAT32:
		return 4, true
	case spacesv1.DataType_DATA_TYPE_UINT64, spacesv1.DataType_DATA_TYPE_INT64, spacesv1.DataType_DATA_TYPE_FLOAT64:
		return 8, true
	}
	return 0, false
}

// DTypeName returns the numpy-style name of dt: "bool", "uint8", ...,
// "float16", "float32", "float64"; "unspecified" for
// DATA_TYPE_UNSPECIFIED and "DataType(N)" for a value outside the enum.
func DTypeName(dt spacesv1.DataType) string {
	switch dt {
	case spacesv1.DataType_DATA_TYPE_UNSPECIFIED:
		return "unspecified"
	case spacesv1.DataType_DATA_TYPE_BOOL:
		return "bool"
	case spacesv1.DataType_DATA_TYPE_UINT8:
		return "uint8"
	case spacesv1.DataType_DATA_TYPE_UINT16:
		return "uint16"
	case spacesv1.DataType_DATA_TYPE_UINT32:
		return "uint32"
	case spacesv1.DataType_DATA_TYPE_UINT64:
		return "uint64"
	case spacesv1.DataType_DATA_TYPE_INT8:
		return "int8"
	case spacesv1.DataType_DATA_TYPE_INT16:
		return "int16"
	case spacesv1.DataType_DATA_TYPE_INT32:
		return "int32"
	case spacesv1.DataType_DATA_TYPE_INT64:
		return "int64"
	case spacesv1.DataType_DATA_TYPE_FLOAT16:
		return "float16"
	case spacesv1.DataType_DATA_TYPE_FLOAT32:
		return "float32"
	case spacesv1.DataType_DATA_TYPE_FLOAT64:
		return "float64"
	}
	return "DataType(" + strconv.Itoa(int(dt)) + ")"
}

// IsInteger reports whether dt is one of the signed or unsigned integer
// types (not bool).
func IsInteger(dt spacesv1.DataType) bool {
	return dt >= spacesv1.DataType_DATA_TYPE_UINT8 && dt <= spacesv1.DataType_DATA_TYPE_INT64
}

// IsSigned reports whether dt is a signed integer or a float type.
func IsSigned(dt spacesv1.DataType) bool {
	return dt >= spacesv1.DataType_DATA_TYPE_INT8 && dt <= spacesv1.DataType_DATA_TYPE_FLOAT64
}
