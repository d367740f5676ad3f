package parquetout

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// allKindsSpec has a leaf of every kind and dtype, an image-like leaf above
// the binary threshold, a zero-element leaf and nesting.
func allKindsSpec() *spacesv1.SpaceSpec {
	return sDict([]string{"pos", "cam", "inner", "flags", "cmd"},
		sBox(dtF32, 3),
		sBox(dtU8, 40, 40, 3),
		sTuple(
			sDiscrete(dtI32, 5),
			sBox(dtF16, 4),
			sBox(dtF64),
			sMultiDiscrete(dtU16, 3, 4),
			sBox(dtI8, 2),
			sBox(dtU32, 1),
			sBox(dtU64),
			sBox(dtI16, 2),
			sBox(dtBool, 2),
			sBox(dtU8, 0),
			sDiscrete(dtU8, 3),
			sBox(dtI64),
		),
		sMultiBinary(2, 2),
		sText(),
	)
}

type le []byte

func (b le) u16(x uint16) le { return binary.LittleEndian.AppendUint16(b, x) }
func (b le) u32(x uint32) le { return binary.LittleEndian.AppendUint32(b, x) }
func (b le) u64(x uint64) le { return binary.LittleEndian.AppendUint64(b, x) }

// allKindsLeaves returns the leaves of row i and the values each typed
// column must hold (as a Go value per element).
func allKindsLeaves(i int) ([][]byte, [][]any) {
	x := float32(i)
	cam := bytes.Repeat([]byte{byte(i), 1, 2}, 1600)
	leaves := [][]byte{
		f32s(x, -x, 0.5),
		cam,
		le(nil).u32(uint32(int32(-3 + i))),
		le(nil).u16(0x3C00).u16(0xC000).u16(0x0001).u16(0x7C00), // 1, -2, 2^-24, +Inf
		le(nil).u64(math.Float64bits(math.Pi + float64(i))),
		le(nil).u16(2).u16(65535),
		[]byte{0x80, 0x7F},
		le(nil).u32(0xFFFFFFF0),
		le(nil).u64(math.MaxUint64),
		le(nil).u16(0x8000).u16(7),
		[]byte{1, 0},
		{},
		{250},
		i64le(-1 << 40),
		{1, 0, 0, 1},
		[]byte("go ✓ " + string(rune('a'+i))),
	}
	want := [][]any{
		{x, -x, float32(0.5)},
		{cam},
		{int64(-3 + i)},
		{float32(1), float32(-2), float32(math.Ldexp(1, -24)), float32(math.Inf(1))},
		{math.Pi + float64(i)},
		{int32(2), int32(65535)},
		{int32(-128), int32(127)},
		{int32(-16)}, // uint32 0xFFFFFFF0 keeps its bits in INT32
		{int64(-1)},  // uint64 max keeps its bits in INT64
		{int32(-32768), int32(7)},
		{true, false},
		{}, // empty list
		{int64(250)},
		{int64(-1 << 40)},
		{true, false, false, true},
		{[]byte("go ✓ " + string(rune('a'+i)))},
	}
	return leaves, want
}

func valueOf(v parquet.Value) any {
	switch v.Kind() {
	case parquet.Boolean:
		return v.Boolean()
	case parquet.Int32:
		return v.Int32()
	case parquet.Int64:
		return v.Int64()
	case parquet.Float:
		return v.Float()
	case parquet.Double:
		return v.Double()
	case parquet.ByteArray:
		return v.ByteArray()
	}
	return v.String()
}

func equalValue(a, b any) bool {
	if ab, ok := a.([]byte); ok {
		bb, ok := b.([]byte)
		return ok && bytes.Equal(ab, bb)
	}
	return a == b
}

func TestStepsTypedColumns(t *testing.T) {
	fsys, root := osFS(t)
	obs := mustCompile(t, allKindsSpec())
	act := mustCompile(t, sMultiDiscrete(dtI64, 3, 3))
	f, err := NewStepsFormat(obs, act, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Table().Observation); n != 16 {
		t.Fatalf("%d observation columns, want 16", n)
	}
	w, err := createSteps(f, fsys, root, Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	const rows = 5
	for i := 0; i < rows; i++ {
		leaves, _ := allKindsLeaves(i)
		r := StepRow{EpisodeID: "e", Step: int64(i), ObservationLeaves: leaves,
			ActionLeaves: [][]byte{le(nil).u64(uint64(i)).u64(2)}}
		if i == 2 {
			r.ObservationLeaves = nil
		}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	path, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	pf := openParquet(t, path)
	got := readRows(t, pf)
	for i, row := range got {
		_, want := allKindsLeaves(i)
		for k, c := range f.Table().Observation {
			vals := row[c.Index]
			if i == 2 {
				if len(vals) != 1 || !vals[0].IsNull() || vals[0].DefinitionLevel() != 0 {
					t.Errorf("row 2 %s = %v, want null", c.Name, vals)
				}
				continue
			}
			if len(want[k]) == 0 {
				if len(vals) != 1 || !vals[0].IsNull() || vals[0].DefinitionLevel() != 1 {
					t.Errorf("row %d %s = %v, want an empty list", i, c.Name, vals)
				}
				continue
			}
			if len(vals) != len(want[k]) {
				t.Errorf("row %d %s has %d values, want %d", i, c.Name, len(vals), len(want[k]))
				continue
			}
			for j, v := range vals {
				if !equalValue(valueOf(v), want[k][j]) {
					t.Errorf("row %d %s[%d] = %v, want %v", i, c.Name, j, valueOf(v), want[k][j])
				}
			}
		}
		a := row[f.Table().Action[0].Index]
		if len(a) != 2 || a[0].Int64() != int64(i) || a[1].Int64() != 2 {
			t.Errorf("row %d action %v", i, a)
		}
	}
	// The image leaf became a binary column; it and the blobs carry no
	// min/max bounds, while ordinary columns do.
	cam, ok := pf.Schema().Lookup("observation.cam")
	if !ok || cam.Node.Type().Kind() != parquet.ByteArray {
		t.Fatalf("observation.cam: %v %v", ok, cam.Node)
	}
	chunks := pf.Metadata().RowGroups[0].Columns
	for _, idx := range []int{cam.ColumnIndex, schema.StepsColObservationBlob, schema.StepsColActionBlob} {
		st := chunks[idx].MetaData.Statistics
		if len(st.MinValue) != 0 || len(st.MaxValue) != 0 {
			t.Errorf("column %v has bounds of %d and %d bytes", chunks[idx].MetaData.PathInSchema, len(st.MinValue), len(st.MaxValue))
		}
	}
	if st := chunks[schema.StepsColStep].MetaData.Statistics; len(st.MinValue) == 0 {
		t.Errorf("step column has no bounds")
	}
}

func TestStepsRejectsBadLeaves(t *testing.T) {
	fsys, root := osFS(t)
	f, err := NewStepsFormat(mustCompile(t, sTuple(sBox(dtF32, 2), sText())), mustCompile(t, sDiscrete(dtI64, 2)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := createSteps(f, fsys, root, Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	good := StepRow{EpisodeID: "e", ObservationLeaves: [][]byte{f32s(1, 2), []byte("ok")}, ActionLeaves: [][]byte{i64le(1)}}
	tests := []struct {
		name string
		obs  [][]byte
		act  [][]byte
		err  error
	}{
		{"too few leaves", [][]byte{f32s(1, 2)}, good.ActionLeaves, ErrLeafCount},
		{"too many leaves", good.ObservationLeaves, [][]byte{i64le(1), i64le(2)}, ErrLeafCount},
		{"short leaf", [][]byte{f32s(1), []byte("ok")}, good.ActionLeaves, ErrLeafSize},
		{"long leaf", good.ObservationLeaves, [][]byte{append(i64le(1), 0)}, ErrLeafSize},
		{"bad utf-8", [][]byte{f32s(1, 2), {0xff, 0xfe}}, good.ActionLeaves, ErrLeafText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := w.Write(&good); err != nil {
				t.Fatal(err)
			}
			bad := good
			bad.ObservationLeaves, bad.ActionLeaves = tt.obs, tt.act
			if err := w.Write(&bad); !errors.Is(err, tt.err) {
				t.Fatalf("Write = %v, want %v", err, tt.err)
			}
		})
	}
	path, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	pf := openParquet(t, path)
	if pf.NumRows() != int64(len(tests)) {
		t.Fatalf("%d rows, want %d (rejected rows must leave no trace)", pf.NumRows(), len(tests))
	}
	for i, row := range readRows(t, pf) {
		if got := string(row[schema.NumFixedStepsColumns+1][0].ByteArray()); got != "ok" {
			t.Errorf("row %d text %q", i, got)
		}
	}
}

func TestHalfToFloat32(t *testing.T) {
	tests := []struct {
		name string
		h    uint16
		want float32
	}{
		{"zero", 0x0000, 0},
		{"one", 0x3C00, 1},
		{"minus two", 0xC000, -2},
		{"max", 0x7BFF, 65504},
		{"min normal", 0x0400, float32(math.Ldexp(1, -14))},
		{"min subnormal", 0x0001, float32(math.Ldexp(1, -24))},
		{"max subnormal", 0x03FF, float32(math.Ldexp(1023, -24))},
		{"inf", 0x7C00, float32(math.Inf(1))},
		{"minus inf", 0xFC00, float32(math.Inf(-1))},
		{"third", 0x3555, 0.333251953125},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := halfToFloat32(tt.h); got != tt.want {
				t.Fatalf("halfToFloat32(%#04x) = %v, want %v", tt.h, got, tt.want)
			}
		})
	}
	if got := halfToFloat32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("negative zero lost its sign: %v", got)
	}
	if got := halfToFloat32(0x7E00); !math.IsNaN(float64(got)) {
		t.Errorf("NaN became %v", got)
	}
}
