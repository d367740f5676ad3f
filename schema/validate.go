package schema

import (
	"strconv"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Limits on the specs Validate accepts.
const (
	// MaxDepth is the deepest Dict/Tuple nesting accepted: the root is at
	// depth 0 and a fundamental space may sit at depth MaxDepth.
	MaxDepth = 32
	// MaxLeafBytes bounds one lane of one leaf: the element count, the
	// byte size (element count times element width) and the product of a
	// shape's non-zero dimensions must each stay at or below it. It is the
	// largest length a protobuf bytes field can carry.
	MaxLeafBytes = 1<<31 - 1
)

// Validate checks that spec describes a space whose values rlrec can carry.
// It returns nil or a *SpecError naming the failing place and wrapping one
// of the sentinel errors of this package.
//
// The rules, where the runtime's contract leaves room:
//   - Every DataType value, on any space, must be in the enum (0..12).
//   - Box needs a dtype; its shape may be empty (a scalar) or contain zero
//     dimensions (zero elements). Bounds are not checked: they do not
//     affect the value bytes.
//   - Discrete needs an integer dtype and no shape (its value is one
//     element). n and start are not checked.
//   - MultiDiscrete needs an integer dtype. A declared shape must have
//     exactly len(nvec) elements (for example [] or [len(nvec)], or [2,2]
//     for four nvec entries); the leaf takes the declared shape, or
//     [len(nvec)] when none is declared. nvec values are not checked.
//   - MultiBinary stores one byte per element whatever its dtype, so its
//     dtype may be unspecified.
//   - Text ignores shape and dtype; its length bounds and charset are not
//     checked.
//   - Dict keys must be non-empty and unique, as the runtime requires;
//     they may hold "." or any other character (a leaf path escapes a
//     key's own "%" and ".", see EscapeKey, so every path still names one
//     leaf). Keys and spaces must pair up. An empty Dict or Tuple is a
//     space with no leaves.
//   - Dimensions must be non-negative and leaves no larger than
//     MaxLeafBytes per lane; nesting no deeper than MaxDepth.
func Validate(spec *spacesv1.SpaceSpec) error {
	return walk(spec, "", 0, nil)
}

// walk validates spec and calls visit (when non-nil) for each fundamental
// leaf in canonical pre-order.
func walk(spec *spacesv1.SpaceSpec, path string, depth int, visit func(Leaf)) error {
	if spec == nil {
		return specErr(path, ErrNilSpec, "")
	}
	if depth > MaxDepth {
		return specErr(path, ErrTooDeep, "more than %d levels", MaxDepth)
	}
	dt := spec.GetDtype()
	if dt < 0 || dt > spacesv1.DataType_DATA_TYPE_FLOAT64 {
		return specErr(path, ErrUnknownDType, "value %d", int32(dt))
	}
	switch s := spec.GetSpec().(type) {
	case *spacesv1.SpaceSpec_Dict:
		keys, spaces := s.Dict.GetKeys(), s.Dict.GetSpaces()
		if len(keys) != len(spaces) {
			return specErr(path, ErrDictKeys, "%d keys, %d spaces", len(keys), len(spaces))
		}
		for i, k := range keys {
			if k == "" {
				return specErr(path, ErrBadKey, "key %d is empty", i)
			}
			for _, prev := range keys[:i] {
				if prev == k {
					return specErr(path, ErrDuplicateKey, "key %q", k)
				}
			}
		}
		for i, child := range spaces {
			if err := walk(child, appendPath(path, keys[i]), depth+1, visit); err != nil {
				return err
			}
		}
		return nil
	case *spacesv1.SpaceSpec_Tuple:
		for i, child := range s.Tuple.GetSpaces() {
			if err := walk(child, appendPath(path, strconv.Itoa(i)), depth+1, visit); err != nil {
				return err
			}
		}
		return nil
	case nil:
		return specErr(path, ErrNoKind, "")
	}
	lf, err := fundamental(spec, path)
	if err != nil {
		return err
	}
	if visit != nil {
		visit(lf)
	}
	return nil
}

// fundamental computes the leaf of a fundamental space.
func fundamental(spec *spacesv1.SpaceSpec, path string) (Leaf, error) {
	lf := Leaf{Path: path, DType: spec.GetDtype(), Spec: spec}
	var shape []int64
	switch s := spec.GetSpec().(type) {
	case *spacesv1.SpaceSpec_Box:
		lf.Kind = KindBox
		shape = spec.GetShape()
		size, ok := DTypeSize(lf.DType)
		if !ok {
			return lf, specErr(path, ErrNoDType, "Box has dtype %s", DTypeName(lf.DType))
		}
		lf.ElemSize = size
	case *spacesv1.SpaceSpec_Discrete:
		lf.Kind = KindDiscrete
		if err := integerDType(lf.DType, "Discrete", path); err != nil {
			return lf, err
		}
		if len(spec.GetShape()) != 0 {
			return lf, specErr(path, ErrShape, "Discrete has shape %v, want none", spec.GetShape())
		}
		lf.ElemSize, _ = DTypeSize(lf.DType)
		shape = []int64{}
	case *spacesv1.SpaceSpec_MultiDiscrete:
		lf.Kind = KindMultiDiscrete
		if err := integerDType(lf.DType, "MultiDiscrete", path); err != nil {
			return lf, err
		}
		lf.ElemSize, _ = DTypeSize(lf.DType)
		n := int64(len(s.MultiDiscrete.GetNvec()))
		shape = spec.GetShape()
		if len(shape) == 0 {
			shape = []int64{n}
		} else if numel, err := shapeNumel(shape, path); err != nil {
			return lf, err
		} else if numel != n {
			return lf, specErr(path, ErrShape, "MultiDiscrete shape %v holds %d elements, nvec has %d", shape, numel, n)
		}
	case *spacesv1.SpaceSpec_MultiBinary:
		lf.Kind = KindMultiBinary
		lf.ElemSize = 1
		shape = spec.GetShape()
	case *spacesv1.SpaceSpec_Text:
		lf.Kind = KindText
		lf.ElemSize = 1
		lf.Stride = -1
		return lf, nil
	default:
		return lf, specErr(path, ErrNoKind, "")
	}
	numel, err := shapeNumel(shape, path)
	if err != nil {
		return lf, err
	}
	if numel > MaxLeafBytes/int64(lf.ElemSize) {
		return lf, specErr(path, ErrTooLarge, "%d elements of %d bytes exceed %d bytes per lane", numel, lf.ElemSize, MaxLeafBytes)
	}
	lf.Shape = append([]int64{}, shape...)
	lf.Numel = numel
	lf.Stride = numel * int64(lf.ElemSize)
	return lf, nil
}

func integerDType(dt spacesv1.DataType, kind, path string) error {
	if _, ok := DTypeSize(dt); !ok {
		return specErr(path, ErrNoDType, "%s has dtype %s", kind, DTypeName(dt))
	}
	if !IsInteger(dt) {
		return specErr(path, ErrDTypeKind, "%s has dtype %s, want an integer type", kind, DTypeName(dt))
	}
	return nil
}

// shapeNumel returns the element count of shape, checking that every
// dimension is non-negative and that the product of the non-zero
// dimensions stays within MaxLeafBytes (so that the product cannot
// overflow, whatever the order of the dimensions, and nested renderings of
// zero-element shapes stay bounded).
func shapeNumel(shape []int64, path string) (int64, error) {
	nominal, zero := int64(1), false
	for _, d := range shape {
		if d < 0 {
			return 0, specErr(path, ErrShape, "negative dimension %d in shape %v", d, shape)
		}
		if d == 0 {
			zero = true
			continue
		}
		if nominal > MaxLeafBytes/d {
			return 0, specErr(path, ErrTooLarge, "shape %v exceeds %d elements", shape, MaxLeafBytes)
		}
		nominal *= d
	}
	if zero {
		return 0, nil
	}
	return nominal, nil
}
