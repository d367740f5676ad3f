package lerobot

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/internal/frame"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// featureKind says how a feature's column is built.
type featureKind int

const (
	kindImage  featureKind = iota + 1 // one image leaf: PNG struct or video frame
	kindVector                        // leaves concatenated: float32 or int64 elements
	kindExact                         // one integer leaf kept exact: int64 or uint64
	kindString                        // one Text leaf
)

// part is one leaf's elements within a concatenated feature.
type part struct {
	leaf  int
	numel int
}

// feature is one entry of info.json's features and, unless it is a video,
// one column of the data files.
type feature struct {
	name  string
	act   bool // built from action leaves
	kind  featureKind
	dtype string // "image", "video", "float32", "int64", "uint64", "string"
	// width is the number of elements of a vector or exact feature; the
	// declared shape is [width], and the column is a scalar when width is 1
	// (LeRobot maps shape [1] to a scalar datasets.Value) and a list
	// otherwise (a datasets.Sequence of that length).
	width int
	parts []part // kindVector: the leaves concatenated, in leaf order
	leaf  int    // kindImage, kindExact, kindString: the leaf
	h, w  int    // kindImage: height and width
	c     int    // kindImage: channels (3 or 1)
	names []string
}

func (f *feature) shape() []int64 {
	if f.kind == kindImage {
		return []int64{int64(f.h), int64(f.w), int64(f.c)}
	}
	return []int64{int64(max(f.width, 1))}
}

// infoNames is the names entry of the feature in info.json.
func (f *feature) infoNames() any {
	if f.kind == kindImage {
		return []string{"height", "width", "channels"}
	}
	if f.names == nil {
		return nil
	}
	return f.names
}

// maxExact is the largest integer magnitude below which every integer is
// a float32 (2^24).
const maxExact = 1 << 24

// fitsFloat32 reports whether every value the leaf's space allows is an
// integer float32 holds exactly: bool, 8- and 16-bit Boxes, MultiBinary,
// and Discrete or MultiDiscrete spaces whose values stay within ±2^24.
// Values a recording holds outside its space are checked one by one as
// they are written.
func fitsFloat32(l *schema.Leaf) bool {
	switch l.Kind {
	case schema.KindMultiBinary:
		return true
	case schema.KindDiscrete:
		if d := l.Spec.GetDiscrete(); d != nil {
			lo, hi := d.Start, d.Start+d.N-1
			return d.N > 0 && lo >= -maxExact && hi <= maxExact && hi >= lo
		}
		return false
	case schema.KindMultiDiscrete:
		if md := l.Spec.GetMultiDiscrete(); md != nil {
			for _, n := range md.Nvec {
				if n > maxExact || n < 0 {
					return false
				}
			}
			return true
		}
		return false
	case schema.KindBox:
		switch l.DType {
		case spacesv1.DataType_DATA_TYPE_BOOL, spacesv1.DataType_DATA_TYPE_INT8, spacesv1.DataType_DATA_TYPE_UINT8,
			spacesv1.DataType_DATA_TYPE_INT16, spacesv1.DataType_DATA_TYPE_UINT16:
			return true
		}
	}
	return false
}

// leafLabel names a leaf in element names and feature names: its path,
// or short for a single-leaf space.
func leafLabel(l *schema.Leaf, short string) (string, error) {
	if l.Path == "" {
		return short, nil
	}
	segs, err := schema.SplitPath(l.Path)
	if err != nil {
		return "", err
	}
	return strings.Join(segs, "."), nil
}

// elementNames names each element of a leaf: the label alone for a
// one-element leaf, else label.i with i the flat (C-order) index.
func elementNames(dst []string, label string, numel int) []string {
	if numel == 1 {
		return append(dst, label)
	}
	for i := range numel {
		dst = append(dst, label+"."+strconv.Itoa(i))
	}
	return dst
}

// features maps the spaces to LeRobot features (see the package doc);
// task is the index of the observation leaf that is the frame's task, or
// -1.
func features(obs, act *schema.Layout) (fs []*feature, task int, err error) {
	task = -1
	side := func(l *schema.Layout, isAct bool) error {
		if l == nil {
			return nil
		}
		prefix, short := "observation", "state"
		if isAct {
			prefix, short = "action", "action"
		}
		vec := &feature{name: prefix, act: isAct, kind: kindVector, dtype: "int64"}
		if !isAct {
			vec.name = "observation.state"
		}
		var exact []*feature
		for i := range l.Leaves {
			lf := &l.Leaves[i]
			label, err := leafLabel(lf, short)
			if err != nil {
				return err
			}
			switch {
			case lf.Kind == schema.KindText:
				if !isAct && task < 0 {
					task = i
					continue
				}
				name := "text." + prefix
				if lf.Path != "" {
					name += "." + label
				}
				fs = append(fs, &feature{name: name, act: isAct, kind: kindString, dtype: "string", leaf: i, width: 1})
			case !isAct && frame.IsImage(lf):
				if lf.Path == "" {
					label = "image"
				}
				fs = append(fs, &feature{name: "observation.images." + label, kind: kindImage, dtype: "image", leaf: i,
					h: int(lf.Shape[0]), w: int(lf.Shape[1]), c: int(lf.Shape[2])})
			case lf.Numel == 0:
				// A Box with no elements has nothing to store.
			case lf.Kind == schema.KindBox && schema.IsFloat(lf.DType) || fitsFloat32(lf):
				if schema.IsFloat(lf.DType) && lf.Kind == schema.KindBox {
					vec.dtype = "float32"
				}
				vec.parts = append(vec.parts, part{leaf: i, numel: int(lf.Numel)})
				vec.width += int(lf.Numel)
				vec.names = elementNames(vec.names, label, int(lf.Numel))
			default:
				f := &feature{name: prefix + "." + label, act: isAct, kind: kindExact, dtype: "int64", leaf: i, width: int(lf.Numel)}
				if lf.DType == spacesv1.DataType_DATA_TYPE_UINT64 {
					f.dtype = "uint64"
				}
				f.names = elementNames(nil, label, int(lf.Numel))
				exact = append(exact, f)
			}
		}
		if vec.width == 0 && len(exact) == 1 {
			// The space's one numeric leaf takes the conventional name.
			exact[0].name = vec.name
		}
		if vec.width > 0 {
			fs = append(fs, vec)
		}
		fs = append(fs, exact...)
		return nil
	}
	if err := side(obs, false); err != nil {
		return nil, -1, err
	}
	if err := side(act, true); err != nil {
		return nil, -1, err
	}
	seen := map[string]bool{}
	for _, ff := range fixedFeatures {
		seen[ff.name] = true
	}
	for _, f := range fs {
		if seen[f.name] {
			return nil, -1, fmt.Errorf("%w: two parts of the spaces map to the feature name %q", ErrSpaces, f.name)
		}
		seen[f.name] = true
	}
	return fs, task, nil
}

// fixed features, in info.json order after the leaf features.
var fixedFeatures = []struct {
	name, dtype string
}{
	{"timestamp", "float32"},
	{"frame_index", "int64"},
	{"episode_index", "int64"},
	{"index", "int64"},
	{"task_index", "int64"},
	{"next.reward", "float32"},
	{"next.done", "bool"},
}

// node is the feature's column in the data files: what LeRobot's
// feature mapping casts it to.
func (f *feature) node() parquet.Node {
	var elem parquet.Node
	switch f.kind {
	case kindImage:
		return parquet.Group{
			"bytes": parquet.Optional(parquet.Leaf(parquet.ByteArrayType)),
			"path":  parquet.Optional(parquet.String()),
		}
	case kindString:
		return parquet.String()
	}
	switch f.dtype {
	case "float32":
		elem = parquet.Leaf(parquet.FloatType)
	case "uint64":
		elem = parquet.Uint(64)
	default:
		elem = parquet.Int(64)
	}
	if f.width == 1 {
		return elem
	}
	return parquet.List(elem)
}

// vectorValue builds a vector feature's value from the frame's leaves:
// float32 or int64 elements, a scalar when the width is 1. Integers a
// float32 cannot hold exactly are refused (ErrInexact).
func (f *feature) vectorValue(l *schema.Layout, leaves [][]byte, f32 []float32, i64 []int64, vals []float64) (any, []float64, error) {
	vals = vals[:0]
	for _, p := range f.parts {
		lf := &l.Leaves[p.leaf]
		b := leaves[p.leaf]
		start := len(vals)
		var err error
		if schema.IsFloat(lf.DType) {
			vals, err = blob.AppendElems(vals, lf.DType, b)
		} else {
			var iv []int64
			if lf.DType == spacesv1.DataType_DATA_TYPE_UINT64 {
				var uv []uint64
				uv, err = blob.AppendElems(uv, lf.DType, b)
				for j, u := range uv {
					if u > math.MaxInt64 || (f.dtype == "float32" && u > maxExact) {
						return nil, vals, &InexactError{Feature: f.name, Leaf: lf.Path, Element: j, Value: strconv.FormatUint(u, 10), DType: f.dtype}
					}
					iv = append(iv, int64(u))
				}
			} else {
				iv, err = blob.AppendElems(iv, lf.DType, b)
			}
			for j, v := range iv {
				if f.dtype == "float32" && (v > maxExact || v < -maxExact) {
					return nil, vals, &InexactError{Feature: f.name, Leaf: lf.Path, Element: j, Value: strconv.FormatInt(v, 10), DType: f.dtype}
				}
				vals = append(vals, float64(v))
			}
		}
		if err != nil {
			return nil, vals, fmt.Errorf("leaf %q: %w", lf.Path, err)
		}
		if len(vals)-start != p.numel {
			return nil, vals, fmt.Errorf("leaf %q has %d elements, want %d", lf.Path, len(vals)-start, p.numel)
		}
	}
	if f.dtype == "float32" {
		f32 = f32[:0]
		for _, v := range vals {
			f32 = append(f32, float32(v))
		}
		for i, v := range f32 {
			vals[i] = float64(v)
		}
		if f.width == 1 {
			return f32[0], vals, nil
		}
		return f32, vals, nil
	}
	i64 = i64[:0]
	for _, v := range vals {
		i64 = append(i64, int64(v))
	}
	if f.width == 1 {
		return i64[0], vals, nil
	}
	return i64, vals, nil
}

// exactValue builds an exact integer feature's value: int64 elements, or
// uint64 for a uint64 leaf; vals gets them as float64 for the statistics.
func (f *feature) exactValue(lf *schema.Leaf, b []byte, vals []float64) (any, []float64, error) {
	vals = vals[:0]
	if f.dtype == "uint64" {
		uv, err := blob.AppendElems([]uint64(nil), lf.DType, b)
		if err != nil {
			return nil, vals, fmt.Errorf("leaf %q: %w", lf.Path, err)
		}
		for _, u := range uv {
			vals = append(vals, float64(u))
		}
		if f.width == 1 {
			return uv[0], vals, nil
		}
		return uv, vals, nil
	}
	iv, err := blob.AppendElems([]int64(nil), lf.DType, b)
	if err != nil {
		return nil, vals, fmt.Errorf("leaf %q: %w", lf.Path, err)
	}
	for _, v := range iv {
		vals = append(vals, float64(v))
	}
	if len(iv) != f.width {
		return nil, vals, fmt.Errorf("leaf %q has %d elements, want %d", lf.Path, len(iv), f.width)
	}
	if f.width == 1 {
		return iv[0], vals, nil
	}
	return iv, vals, nil
}
