package blob

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

func compile(tb testing.TB, spec *spacesv1.SpaceSpec) *schema.Layout {
	tb.Helper()
	l, err := schema.Compile(spec)
	if err != nil {
		tb.Fatalf("Compile: %v", err)
	}
	return l
}

func boxSpec(dt spacesv1.DataType, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{}}}
}

func textSpec() *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{}}}
}

func tupleSpec(spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Tuple{Tuple: &spacesv1.TupleSpec{Spaces: spaces}}}
}

// textSlab builds a Text batch slab from lane strings.
func textSlab(lanes ...string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(lanes)))
	for _, l := range lanes {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(l)))
	}
	for _, l := range lanes {
		b = append(b, l...)
	}
	return b
}

func TestSplitLanesErrors(t *testing.T) {
	u8x2 := boxSpec(spacesv1.DataType_DATA_TYPE_UINT8, 2)
	tests := []struct {
		name  string
		spec  *spacesv1.SpaceSpec
		slabs [][]byte
		n     int
		want  error
		leaf  int
		lane  int
	}{
		{"zero lanes", u8x2, [][]byte{{}}, 0, ErrLaneCount, -1, -1},
		{"negative lanes", u8x2, [][]byte{{}}, -3, ErrLaneCount, -1, -1},
		{"too many slabs", u8x2, [][]byte{{1, 2}, {3, 4}}, 1, ErrLeafCount, -1, -1},
		{"no slabs", u8x2, nil, 1, ErrLeafCount, -1, -1},
		{"slab one lane short", u8x2, [][]byte{{1, 2, 3}}, 2, ErrSlabSize, 0, -1},
		{"slab one lane long", u8x2, [][]byte{{1, 2, 3, 4, 5, 6}}, 2, ErrSlabSize, 0, -1},
		{"lane count overflows", boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT64, 1<<20), [][]byte{{}}, math.MaxInt / 4, ErrLaneCount, -1, -1},
		{"lanes over MaxLanes", boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 0), [][]byte{{}}, MaxLanes + 1, ErrLaneCount, -1, -1},
		{"huge n with small slab", u8x2, [][]byte{{1, 2}}, MaxLanes, ErrSlabSize, 0, -1},
		{"zero-numel slab not empty", boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 0), [][]byte{{1}}, 2, ErrSlabSize, 0, -1},
		{"text empty slab", textSpec(), [][]byte{{}}, 1, ErrTextHeader, 0, -1},
		{"text lengths missing", textSpec(), [][]byte{textSlab("ab")[:12]}, 1, ErrTextHeader, 0, -1},
		{"text count huge", textSpec(), [][]byte{binary.LittleEndian.AppendUint64(nil, math.MaxUint64)}, 1, ErrTextCount, 0, -1},
		{"text second lane past end", textSpec(), [][]byte{textSlab("a", "bc")[:8+16+2]}, 2, ErrTextLength, 0, 1},
		{"text invalid utf8 in lane 1", textSpec(), [][]byte{textSlab("ok", "\xc3")}, 2, ErrInvalidUTF8, 0, 1},
		{"error in second leaf", tupleSpec(u8x2, textSpec()), [][]byte{{1, 2}, textSlab("a", "b")}, 1, ErrTextCount, 1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layout := compile(t, tc.spec)
			dst := make([][][]byte, 2)
			got, err := SplitLanesInto(dst, layout, tc.slabs, tc.n)
			var se *SlabError
			if !errors.As(err, &se) || !errors.Is(err, tc.want) {
				t.Fatalf("SplitLanesInto error = %v, want *SlabError wrapping %v", err, tc.want)
			}
			if se.Leaf != tc.leaf || se.Lane != tc.lane {
				t.Errorf("error leaf %d lane %d, want leaf %d lane %d (%v)", se.Leaf, se.Lane, tc.leaf, tc.lane, err)
			}
			if len(got) != 0 {
				t.Errorf("%d lanes returned with an error", len(got))
			}
		})
	}
}

func TestSplitLanesMixed(t *testing.T) {
	spec := tupleSpec(boxSpec(spacesv1.DataType_DATA_TYPE_INT16, 2), textSpec(), boxSpec(spacesv1.DataType_DATA_TYPE_UINT8, 0))
	layout := compile(t, spec)
	slabs := [][]byte{{1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}, textSlab("", "é", "xyz"), {}}
	lanes, err := SplitLanesInto(nil, layout, slabs, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][][]byte{
		{{1, 0, 2, 0}, {}, {}},
		{{3, 0, 4, 0}, []byte("é"), {}},
		{{5, 0, 6, 0}, []byte("xyz"), {}},
	}
	for i := range want {
		if !equalLeaves(lanes[i], want[i]) {
			t.Errorf("lane %d = %x, want %x", i, lanes[i], want[i])
		}
		for li, l := range lanes[i] {
			if l == nil {
				t.Errorf("lane %d leaf %d nil", i, li)
			}
			if cap(l) != len(l) {
				t.Errorf("lane %d leaf %d cap %d > len %d", i, li, cap(l), len(l))
			}
		}
	}
	if &lanes[1][0][0] != &slabs[0][4] {
		t.Errorf("fixed lane leaf is a copy, want a sub-slice")
	}
	joined, err := JoinLanesLayout(layout, lanes)
	if err != nil {
		t.Fatal(err)
	}
	if !equalLeaves(joined, slabs) {
		t.Fatalf("JoinLanesLayout = %x, want %x", joined, slabs)
	}
}

func TestSplitLanesIntoReuse(t *testing.T) {
	layout := compile(t, tupleSpec(boxSpec(spacesv1.DataType_DATA_TYPE_UINT8, 2), textSpec()))
	slabs4 := [][]byte{{1, 2, 3, 4, 5, 6, 7, 8}, textSlab("a", "b", "c", "d")}
	slabs2 := [][]byte{{9, 9, 8, 8}, textSlab("x", "y")}
	dst, err := SplitLanesInto(nil, layout, slabs4, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Shrinking and growing back within capacity reuses everything.
	allocs := testing.AllocsPerRun(50, func() {
		var err error
		if dst, err = SplitLanesInto(dst, layout, slabs2, 2); err != nil || len(dst) != 2 {
			t.Fatalf("split 2: %d lanes, %v", len(dst), err)
		}
		if dst, err = SplitLanesInto(dst, layout, slabs4, 4); err != nil || len(dst) != 4 {
			t.Fatalf("split 4: %d lanes, %v", len(dst), err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations with capacity, want 0", allocs)
	}
	if !bytes.Equal(dst[3][0], []byte{7, 8}) || string(dst[3][1]) != "d" {
		t.Fatalf("lane 3 = %x", dst[3])
	}
	// Growing past capacity keeps earlier lanes right.
	slabs6 := [][]byte{{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, textSlab("0", "1", "2", "3", "4", "5")}
	dst, err = SplitLanesInto(dst, layout, slabs6, 6)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if dst[i][0][0] != byte(i) || dst[i][1][0] != byte('0'+i) {
			t.Fatalf("lane %d = %x", i, dst[i])
		}
	}
}

func TestJoinLanesErrors(t *testing.T) {
	layout := compile(t, tupleSpec(boxSpec(spacesv1.DataType_DATA_TYPE_UINT8, 2), textSpec()))
	tests := []struct {
		name  string
		lanes [][][]byte
		want  error
		leaf  int
		lane  int
	}{
		{"no lanes", nil, ErrLaneCount, -1, -1},
		{"lane missing a leaf", [][][]byte{{{1, 2}, {}}, {{1, 2}}}, ErrLeafCount, -1, 1},
		{"fixed leaf short", [][][]byte{{{1, 2}, {}}, {{1}, {}}}, ErrSlabSize, 0, 1},
		{"text not utf8", [][][]byte{{{1, 2}, []byte{0xff}}}, ErrInvalidUTF8, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slabs, err := JoinLanesLayout(layout, tc.lanes)
			var se *SlabError
			if !errors.As(err, &se) || !errors.Is(err, tc.want) || slabs != nil {
				t.Fatalf("JoinLanesLayout = %x, %v; want *SlabError wrapping %v", slabs, err, tc.want)
			}
			if se.Leaf != tc.leaf || se.Lane != tc.lane {
				t.Errorf("error leaf %d lane %d, want %d %d", se.Leaf, se.Lane, tc.leaf, tc.lane)
			}
		})
	}
}

func TestSplitLanesBadSpec(t *testing.T) {
	_, err := SplitLanes(boxSpec(0, 2), [][]byte{{1, 2}}, 1)
	if !errors.Is(err, schema.ErrNoDType) {
		t.Fatalf("SplitLanes with a bad spec: %v, want schema.ErrNoDType", err)
	}
	_, err = JoinLanes(boxSpec(0, 2), [][][]byte{{{1, 2}}})
	if !errors.Is(err, schema.ErrNoDType) {
		t.Fatalf("JoinLanes with a bad spec: %v, want schema.ErrNoDType", err)
	}
}
