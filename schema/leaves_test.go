package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

func box(dt spacesv1.DataType, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{}}}
}

func discrete(dt spacesv1.DataType, n, start int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Dtype: dt, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: n, Start: start}}}
}

func multiDiscrete(dt spacesv1.DataType, shape []int64, nvec ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_MultiDiscrete{MultiDiscrete: &spacesv1.MultiDiscreteSpec{Nvec: nvec}}}
}

func multiBinary(dt spacesv1.DataType, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_MultiBinary{MultiBinary: &spacesv1.MultiBinarySpec{}}}
}

func text() *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{MaxLength: 64}}}
}

func dict(keys []string, spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{Keys: keys, Spaces: spaces}}}
}

func tuple(spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Tuple{Tuple: &spacesv1.TupleSpec{Spaces: spaces}}}
}

const (
	dtBool = spacesv1.DataType_DATA_TYPE_BOOL
	dtU8   = spacesv1.DataType_DATA_TYPE_UINT8
	dtI32  = spacesv1.DataType_DATA_TYPE_INT32
	dtI64  = spacesv1.DataType_DATA_TYPE_INT64
	dtF16  = spacesv1.DataType_DATA_TYPE_FLOAT16
	dtF32  = spacesv1.DataType_DATA_TYPE_FLOAT32
	dtF64  = spacesv1.DataType_DATA_TYPE_FLOAT64
)

func TestCompileLeaves(t *testing.T) {
	type want struct {
		path     string
		kind     LeafKind
		shape    []int64
		numel    int64
		elemSize int
		stride   int64
		str      string
	}
	tests := []struct {
		name        string
		spec        *spacesv1.SpaceSpec
		leaves      []want
		hasText     bool
		fixedStride int64
	}{
		{"image box", box(dtU8, 84, 84, 3), []want{{"", KindBox, []int64{84, 84, 3}, 21168, 1, 21168, "Box(84,84,3) uint8"}}, false, 21168},
		{"scalar box", box(dtF64), []want{{"", KindBox, []int64{}, 1, 8, 8, "Box() float64"}}, false, 8},
		{"zero-numel box", box(dtF32, 3, 0), []want{{"", KindBox, []int64{3, 0}, 0, 4, 0, "Box(3,0) float32"}}, false, 0},
		{"float16 box", box(dtF16, 2), []want{{"", KindBox, []int64{2}, 2, 2, 4, "Box(2) float16"}}, false, 4},
		{"discrete", discrete(dtI64, 2, 0), []want{{"", KindDiscrete, []int64{}, 1, 8, 8, "Discrete(2) int64"}}, false, 8},
		{"discrete with start", discrete(dtI32, 5, -2), []want{{"", KindDiscrete, []int64{}, 1, 4, 4, "Discrete(5,start=-2) int32"}}, false, 4},
		{"multibinary float dtype is one byte", multiBinary(dtF64, 3), []want{{"", KindMultiBinary, []int64{3}, 3, 1, 3, "MultiBinary(3)"}}, false, 3},
		{"multibinary unspecified dtype", multiBinary(0, 2, 2), []want{{"", KindMultiBinary, []int64{2, 2}, 4, 1, 4, "MultiBinary(2,2)"}}, false, 4},
		{"multidiscrete no shape", multiDiscrete(dtI64, nil, 4, 4, 2), []want{{"", KindMultiDiscrete, []int64{3}, 3, 8, 24, "MultiDiscrete(4,4,2) int64"}}, false, 24},
		{"multidiscrete 2x2 shape", multiDiscrete(dtU8, []int64{2, 2}, 3, 3, 3, 3), []want{{"", KindMultiDiscrete, []int64{2, 2}, 4, 1, 4, "MultiDiscrete(3,3,3,3) uint8"}}, false, 4},
		{"text", text(), []want{{"", KindText, nil, 0, 1, -1, "Text"}}, true, -1},
		{"empty dict", dict(nil), nil, false, 0},
		{"empty tuple", tuple(), nil, false, 0},
		{
			"dict in declared order with nested tuple",
			dict([]string{"z", "a"}, discrete(dtI32, 1000, 0), tuple(multiDiscrete(dtU8, []int64{2}, 4, 4), text())),
			[]want{
				{"z", KindDiscrete, []int64{}, 1, 4, 4, "Discrete(1000) int32"},
				{"a.0", KindMultiDiscrete, []int64{2}, 2, 1, 2, "MultiDiscrete(4,4) uint8"},
				{"a.1", KindText, nil, 0, 1, -1, "Text"},
			},
			true, -1,
		},
		{
			"tuple of dicts",
			tuple(dict([]string{"pos", "img"}, box(dtF32, 3), box(dtU8, 2, 2)), box(dtBool)),
			[]want{
				{"0.pos", KindBox, []int64{3}, 3, 4, 12, "Box(3) float32"},
				{"0.img", KindBox, []int64{2, 2}, 4, 1, 4, "Box(2,2) uint8"},
				{"1", KindBox, []int64{}, 1, 1, 1, "Box() bool"},
			},
			false, 17,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layout, err := Compile(tc.spec)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if len(layout.Leaves) != len(tc.leaves) {
				t.Fatalf("%d leaves, want %d: %+v", len(layout.Leaves), len(tc.leaves), layout.Leaves)
			}
			for i, w := range tc.leaves {
				got := layout.Leaves[i]
				if got.Path != w.path || got.Kind != w.kind || !slices.Equal(got.Shape, w.shape) ||
					(got.Shape == nil) != (w.shape == nil) || got.Numel != w.numel ||
					got.ElemSize != w.elemSize || got.Stride != w.stride {
					t.Errorf("leaf %d = {%q %v %v numel %d size %d stride %d}, want %+v",
						i, got.Path, got.Kind, got.Shape, got.Numel, got.ElemSize, got.Stride, w)
				}
				if s := got.String(); s != w.str {
					t.Errorf("leaf %d String() = %q, want %q", i, s, w.str)
				}
				if got.Spec == nil {
					t.Errorf("leaf %d has no spec", i)
				}
			}
			if layout.HasText != tc.hasText || layout.FixedStride != tc.fixedStride {
				t.Errorf("HasText %v FixedStride %d, want %v %d", layout.HasText, layout.FixedStride, tc.hasText, tc.fixedStride)
			}
			leaves, err := Leaves(tc.spec)
			if err != nil || len(leaves) != len(tc.leaves) {
				t.Errorf("Leaves = %d leaves, %v", len(leaves), err)
			}
			if err := Validate(tc.spec); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestCompileDoesNotAliasShape checks that a leaf's shape is its own copy.
func TestCompileDoesNotAliasShape(t *testing.T) {
	spec := box(dtU8, 2, 3)
	layout, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	layout.Leaves[0].Shape[0] = 99
	if spec.Shape[0] != 2 {
		t.Fatalf("leaf shape aliases the spec shape")
	}
}

func deep(depth int) *spacesv1.SpaceSpec {
	s := box(dtU8, 1)
	for range depth {
		s = tuple(s)
	}
	return s
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name string
		spec *spacesv1.SpaceSpec
		path string
		want error
	}{
		{"nil", nil, "", ErrNilSpec},
		{"no kind", &spacesv1.SpaceSpec{Shape: []int64{2}, Dtype: dtU8}, "", ErrNoKind},
		{"nil tuple child", tuple(box(dtU8), nil), "1", ErrNilSpec},
		{"box unspecified dtype", box(0, 2), "", ErrNoDType},
		{"box unknown dtype", box(13, 2), "", ErrUnknownDType},
		{"box negative dtype", box(-1, 2), "", ErrUnknownDType},
		{"text unknown dtype", &spacesv1.SpaceSpec{Dtype: 99, Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{}}}, "", ErrUnknownDType},
		{"multibinary unknown dtype", multiBinary(13, 2), "", ErrUnknownDType},
		{"discrete unspecified dtype", discrete(0, 2, 0), "", ErrNoDType},
		{"discrete float dtype", discrete(dtF32, 2, 0), "", ErrDTypeKind},
		{"discrete bool dtype", discrete(dtBool, 2, 0), "", ErrDTypeKind},
		{"discrete with shape", &spacesv1.SpaceSpec{Shape: []int64{1}, Dtype: dtI64, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}}, "", ErrShape},
		{"multidiscrete unspecified dtype", multiDiscrete(0, nil, 2), "", ErrNoDType},
		{"multidiscrete float dtype", multiDiscrete(dtF64, nil, 2), "", ErrDTypeKind},
		{"multidiscrete shape mismatch", multiDiscrete(dtI64, []int64{3}, 4, 4), "", ErrShape},
		{"multidiscrete negative shape", multiDiscrete(dtI64, []int64{-2}, 4, 4), "", ErrShape},
		{"negative dim", box(dtU8, 2, -1), "", ErrShape},
		{"negative dim after zero", box(dtU8, 0, -1), "", ErrShape},
		{"huge dims overflow", box(dtU8, 1<<40, 1<<40), "", ErrTooLarge},
		{"huge dims around a zero", box(dtU8, 1<<40, 0, 1<<40), "", ErrTooLarge},
		{"bytes over limit", box(dtF64, 1<<29), "", ErrTooLarge},
		{"multibinary over limit", multiBinary(dtBool, 1<<31), "", ErrTooLarge},
		{"dict count mismatch", dict([]string{"a", "b"}, box(dtU8)), "", ErrDictKeys},
		{"dict duplicate key", dict([]string{"a", "a"}, box(dtU8), box(dtU8)), "", ErrDuplicateKey},
		{"dict empty key", dict([]string{""}, box(dtU8)), "", ErrBadKey},
		{"nested error path", dict([]string{"obs"}, tuple(box(dtU8), dict([]string{"x"}, box(0)))), "obs.1.x", ErrNoDType},
		{"empty key after a dotted one", dict([]string{"a.b", ""}, box(dtU8), box(dtU8)), "", ErrBadKey},
		{"duplicate dotted key", dict([]string{"a.b", "a.b"}, box(dtU8), box(dtU8)), "", ErrDuplicateKey},
		{"error path escapes keys", dict([]string{"pos.x"}, dict([]string{"50%"}, box(0))), "pos%2Ex.50%25", ErrNoDType},
		{"too deep", deep(MaxDepth + 1), "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0", ErrTooDeep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.spec)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Validate error %T, want *SpecError", err)
			}
			if se.Path != tc.path {
				t.Errorf("error path %q, want %q", se.Path, tc.path)
			}
			if l, err := Compile(tc.spec); l != nil || !errors.Is(err, tc.want) {
				t.Errorf("Compile = %v, %v; want nil, %v", l, err, tc.want)
			}
		})
	}
}

func TestMaxDepthAccepted(t *testing.T) {
	leaves, err := Leaves(deep(MaxDepth))
	if err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	if len(leaves) != 1 {
		t.Fatalf("%d leaves, want 1", len(leaves))
	}
}

func TestDTypes(t *testing.T) {
	tests := []struct {
		dt   spacesv1.DataType
		name string
		size int
		ok   bool
	}{
		{0, "unspecified", 0, false},
		{spacesv1.DataType_DATA_TYPE_BOOL, "bool", 1, true},
		{spacesv1.DataType_DATA_TYPE_UINT8, "uint8", 1, true},
		{spacesv1.DataType_DATA_TYPE_UINT16, "uint16", 2, true},
		{spacesv1.DataType_DATA_TYPE_UINT32, "uint32", 4, true},
		{spacesv1.DataType_DATA_TYPE_UINT64, "uint64", 8, true},
		{spacesv1.DataType_DATA_TYPE_INT8, "int8", 1, true},
		{spacesv1.DataType_DATA_TYPE_INT16, "int16", 2, true},
		{spacesv1.DataType_DATA_TYPE_INT32, "int32", 4, true},
		{spacesv1.DataType_DATA_TYPE_INT64, "int64", 8, true},
		{spacesv1.DataType_DATA_TYPE_FLOAT16, "float16", 2, true},
		{spacesv1.DataType_DATA_TYPE_FLOAT32, "float32", 4, true},
		{spacesv1.DataType_DATA_TYPE_FLOAT64, "float64", 8, true},
		{13, "DataType(13)", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DTypeName(tc.dt); got != tc.name {
				t.Errorf("DTypeName = %q", got)
			}
			size, ok := DTypeSize(tc.dt)
			if size != tc.size || ok != tc.ok {
				t.Errorf("DTypeSize = %d, %v; want %d, %v", size, ok, tc.size, tc.ok)
			}
		})
	}
}

// TestVectorLeafPaths checks the leaf walk against every spec of the
// shared wire vectors.
func TestVectorLeafPaths(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "wire-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Specs []struct {
			Name      string          `json:"name"`
			Spec      json.RawMessage `json:"spec"`
			LeafPaths []string        `json:"leaf_paths"`
		} `json:"specs"`
		BadSlabs []struct {
			Name string          `json:"name"`
			Spec json.RawMessage `json:"spec"`
		} `json:"bad_slabs"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Specs) == 0 {
		t.Fatal("no specs in wire vectors")
	}
	for _, tc := range v.Specs {
		t.Run(tc.Name, func(t *testing.T) {
			spec, err := ParseSpecJSON(tc.Spec)
			if err != nil {
				t.Fatalf("ParseSpecJSON: %v", err)
			}
			leaves, err := Leaves(spec)
			if err != nil {
				t.Fatalf("Leaves: %v", err)
			}
			var paths []string
			for _, l := range leaves {
				paths = append(paths, l.Path)
			}
			if !slices.Equal(paths, tc.LeafPaths) {
				t.Fatalf("paths %q, want %q", paths, tc.LeafPaths)
			}
			// SpecJSON round-trips through ParseSpecJSON.
			out, err := SpecJSON(spec)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseSpecJSON(out)
			if err != nil {
				t.Fatalf("ParseSpecJSON(SpecJSON) %s: %v", out, err)
			}
			if !proto.Equal(back, spec) {
				t.Fatalf("round trip %s changed the spec", out)
			}
		})
	}
	for _, tc := range v.BadSlabs {
		if _, err := ParseSpecJSON(tc.Spec); err != nil {
			t.Errorf("bad slab %s: spec should parse: %v", tc.Name, err)
		}
	}
}

// FuzzCompile feeds binary SpaceSpecs to Compile: it must never panic, and
// every accepted spec must have consistent leaves.
func FuzzCompile(f *testing.F) {
	for _, s := range []*spacesv1.SpaceSpec{
		box(dtU8, 84, 84, 3), discrete(dtI64, 2, 0), multiBinary(dtBool, 3),
		multiDiscrete(dtI64, nil, 4, 4), text(), deep(3),
		dict([]string{"z", "a"}, discrete(dtI32, 1000, 0), tuple(multiDiscrete(dtU8, []int64{2}, 4, 4), text())),
	} {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		spec := &spacesv1.SpaceSpec{}
		if err := proto.Unmarshal(b, spec); err != nil {
			return
		}
		layout, err := Compile(spec)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Compile error %T, want *SpecError", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, l := range layout.Leaves {
			if seen[l.Path] {
				t.Fatalf("two leaves with path %q", l.Path)
			}
			seen[l.Path] = true
			if l.Kind != KindText && l.Stride != l.Numel*int64(l.ElemSize) {
				t.Fatalf("leaf %q: stride %d != %d x %d", l.Path, l.Stride, l.Numel, l.ElemSize)
			}
		}
	})
}

// updateGolden is the package's one -update flag: every golden test in
// package schema should use it rather than define another.
var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestLeavesGolden pins the one-line rendering of the leaves of every wire
// vector spec (the listing `rlrec inspect` shows). Run with -update to
// rewrite testdata/leaves.golden after a deliberate change.
func TestLeavesGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "wire-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Specs []struct {
			Name string          `json:"name"`
			Spec json.RawMessage `json:"spec"`
		} `json:"specs"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, s := range v.Specs {
		spec, err := ParseSpecJSON(s.Spec)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		layout, err := Compile(spec)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		fmt.Fprintf(&out, "%s\n", s.Name)
		for _, l := range layout.Leaves {
			fmt.Fprintf(&out, "\t%q\t%s\tstride=%d\n", l.Path, l, l.Stride)
		}
	}
	golden := filepath.Join("testdata", "leaves.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("leaf listing differs from %s (run with -update after a deliberate change):\n%s", golden, out.Bytes())
	}
}
