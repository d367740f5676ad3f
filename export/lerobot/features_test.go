package lerobot

import (
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

func box(dt spacesv1.DataType, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_Box{
		Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
}

func discrete(dt spacesv1.DataType, n, start int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Dtype: dt, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: n, Start: start}}}
}

func text() *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{MinLength: 0, MaxLength: 8}}}
}

func dict(keys []string, spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{Keys: keys, Spaces: spaces}}}
}

func compile(t *testing.T, s *spacesv1.SpaceSpec) *schema.Layout {
	t.Helper()
	l, err := schema.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

const (
	u8  = spacesv1.DataType_DATA_TYPE_UINT8
	i32 = spacesv1.DataType_DATA_TYPE_INT32
	i64 = spacesv1.DataType_DATA_TYPE_INT64
	u64 = spacesv1.DataType_DATA_TYPE_UINT64
	f32 = spacesv1.DataType_DATA_TYPE_FLOAT32
	f64 = spacesv1.DataType_DATA_TYPE_FLOAT64
)

// TestFeatures checks the mapping of spaces to features: the declared
// shape and the column agree as LeRobot reads them (shape [1] is a scalar
// column), Box(0) leaves give nothing, float leaves and small integers are
// concatenated, wide integers kept exact.
func TestFeatures(t *testing.T) {
	type want struct {
		name, dtype string
		shape       []int64
		list        bool
		names       []string
	}
	for _, tc := range []struct {
		name     string
		obs, act *spacesv1.SpaceSpec
		want     []want
		task     int
	}{
		{"one-element box is a scalar", box(f32, 1), discrete(i64, 2, 0), []want{
			{"observation.state", "float32", []int64{1}, false, []string{"state"}},
			{"action", "int64", []int64{1}, false, []string{"action"}},
		}, -1},
		{"scalar box", box(f64), box(f32, 3), []want{
			{"observation.state", "float32", []int64{1}, false, []string{"state"}},
			{"action", "float32", []int64{3}, true, []string{"action.0", "action.1", "action.2"}},
		}, -1},
		{"empty box gives no feature", dict([]string{"e", "x"}, box(f32, 0), box(f32, 2)), box(f32, 0), []want{
			{"observation.state", "float32", []int64{2}, true, []string{"x.0", "x.1"}},
		}, -1},
		{"image, instruction, concatenated state", dict([]string{"cam", "q", "grip", "say"}, box(u8, 4, 5, 3), box(f32, 2), discrete(i64, 3, 0), text()), box(f32, 2), []want{
			{"observation.images.cam", "image", []int64{4, 5, 3}, false, nil},
			{"observation.state", "float32", []int64{3}, true, []string{"q.0", "q.1", "grip"}},
			{"action", "float32", []int64{2}, true, []string{"action.0", "action.1"}},
		}, 3},
		{"wide integers kept exact", dict([]string{"a", "b", "c"}, box(f32, 2), box(i64, 2), box(u64)), box(i32, 1), []want{
			{"observation.state", "float32", []int64{2}, true, []string{"a.0", "a.1"}},
			{"observation.b", "int64", []int64{2}, true, []string{"b.0", "b.1"}},
			{"observation.c", "uint64", []int64{1}, false, []string{"c"}},
			{"action", "int64", []int64{1}, false, []string{"action"}},
		}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, task, err := features(compile(t, tc.obs), compile(t, tc.act))
			if err != nil {
				t.Fatal(err)
			}
			if task != tc.task {
				t.Errorf("task leaf %d, want %d", task, tc.task)
			}
			var got []want
			for _, f := range fs {
				n := f.node()
				list := !n.Leaf() && f.kind != kindImage
				var names []string
				if ns, ok := f.infoNames().([]string); ok && f.kind != kindImage {
					names = ns
				}
				got = append(got, want{f.name, f.dtype, f.shape(), list, names})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("features %+v, want %+v", got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.name != w.name || g.dtype != w.dtype || !slices.Equal(g.shape, w.shape) || g.list != w.list || !slices.Equal(g.names, w.names) {
					t.Errorf("feature %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestInexactRefused checks that an integer a float32 cannot hold is
// refused, never rounded: a Discrete value outside its space in a
// float32 vector, and a uint64 above 2^63-1.
func TestInexactRefused(t *testing.T) {
	obs := compile(t, dict([]string{"d", "x"}, discrete(i64, 3, 0), box(f32, 1)))
	fs, _, err := features(obs, compile(t, box(f32, 1)))
	if err != nil {
		t.Fatal(err)
	}
	vec := fs[0]
	x := binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.5))
	for _, tc := range []struct {
		name string
		d    int64
		ok   bool
	}{
		{"in range", 2, true},
		{"2^24 is exact", 1 << 24, true},
		{"2^24+1 is not", 1<<24 + 1, false},
		{"-2^24-1 is not", -(1 << 24) - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := vec.vectorValue(obs, [][]byte{binary.LittleEndian.AppendUint64(nil, uint64(tc.d)), x}, nil, nil, nil)
			var ie *InexactError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.ok:
				if got := v.([]float32); got[0] != float32(tc.d) || got[1] != 0.5 {
					t.Errorf("value %v", got)
				}
			case !errors.As(err, &ie) || ie.Leaf != "d" || ie.Feature != "observation.state":
				t.Errorf("error %v, want an InexactError naming leaf d", err)
			}
		})
	}
}

// TestFPSFromIntervals: the median interval rounded to whole frames per
// second; no usable interval, below 1 fps, above MaxDerivedFPS or too
// irregular a rhythm is ErrTimesUnknown, with a message that says which.
func TestFPSFromIntervals(t *testing.T) {
	burst := []float64{}
	for range 10 { // frames stamped in bursts: 3 close together, then a gap
		burst = append(burst, 0.001, 0.001, 0.1)
	}
	dropped := []float64{}
	for i := range 20 { // 30 fps dropping every 5th frame
		if i%5 == 4 {
			dropped = append(dropped, 2.0/30)
		} else {
			dropped = append(dropped, 1.0/30)
		}
	}
	twoRates := []float64{}
	for i := range 20 { // 10 fps and 50 fps, half and half
		if i%2 == 0 {
			twoRates = append(twoRates, 0.1)
		} else {
			twoRates = append(twoRates, 0.02)
		}
	}
	for _, tc := range []struct {
		name string
		iv   []float64
		fps  int
		want string // for a refusal, what its message says
	}{
		{"30 fps with jitter", []float64{0.033, 0.034, 0.0333, 0.05, 0.0331}, 30, ""},
		{"29.97 rounds to 30", []float64{1 / 29.97, 1 / 29.97}, 30, ""},
		{"zero intervals ignored", []float64{0, 0, 0.01, 0.01}, 100, ""},
		{"cartpole 50 fps", []float64{0.0201, 0.0199, 0.0200, 0.0202}, 50, ""},
		{"30 fps dropping every 5th frame", dropped, 30, ""},
		{"1000 fps is the bound", []float64{0.001, 0.001, 0.001}, 1000, ""},
		{"all equal times", []float64{0, 0}, 0, "no two consecutive frames"},
		{"none", nil, 0, "no two consecutive frames"},
		{"below 1 fps", []float64{3, 3}, 0, "below 1 frame per second"},
		{"2786 fps: a loop's speed", []float64{1 / 2786.0, 1 / 2786.0, 1 / 2700.0}, 0, "above the 1000"},
		{"500000 fps", []float64{2e-6, 2e-6}, 0, "above the 1000"},
		{"bursts", burst, 0, "too irregular"},
		{"two rates mixed", twoRates, 0, "too irregular"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fps, err := fpsFromIntervals(tc.iv)
			if tc.fps == 0 {
				if !errors.Is(err, ErrTimesUnknown) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("fps %d, err %v; want ErrTimesUnknown saying %q", fps, err, tc.want)
				}
				return
			}
			if err != nil || fps != tc.fps {
				t.Errorf("fps %d, err %v; want %d", fps, err, tc.fps)
			}
		})
	}
}

// TestClock reads the sessions table's clock column and refuses to take
// the frame rate from times the recorder stamped.
func TestClock(t *testing.T) {
	type row struct {
		Clock *string `parquet:"clock,optional"`
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name  string
		rows  []row
		clock string
		ok    bool
	}{
		{"event", []row{{s("event")}}, ClockEvent, true},
		{"recorder", []row{{s("recorder")}}, ClockRecorder, false},
		{"mixed", []row{{s("mixed")}}, ClockMixed, false},
		{"rows disagree", []row{{s("event")}, {s("recorder")}}, ClockMixed, false},
		{"null", []row{{nil}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "part-00000.parquet")
			if err := parquet.WriteFile(path, tc.rows); err != nil {
				t.Fatal(err)
			}
			clock, err := fileClock(path)
			if err != nil || clock != tc.clock {
				t.Fatalf("clock %q, err %v; want %q", clock, err, tc.clock)
			}
			err = checkClock(dataset.Recording{SessionID: "s", EnvID: "e"}, clock)
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrTimesUnknown)) {
				t.Errorf("checkClock(%q): %v", clock, err)
			}
		})
	}
	// A sessions file without the column (recorded before it existed).
	path := filepath.Join(t.TempDir(), "part-00000.parquet")
	if err := parquet.WriteFile(path, []struct{ Status string }{{"ended"}}); err != nil {
		t.Fatal(err)
	}
	if clock, err := fileClock(path); err != nil || clock != "" {
		t.Errorf("no column: clock %q, err %v", clock, err)
	}
}
