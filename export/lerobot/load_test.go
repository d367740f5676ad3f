package lerobot_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/export/lerobot"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/sim"
)

// hfFeature is what LeRobot's feature mapping (get_hf_features_from_features)
// makes of an info.json feature: a datasets.Image for dtype "image",
// nothing for "video" (not a data column), a scalar datasets.Value for
// shape [1], a datasets.Sequence of that length for any other
// one-dimensional shape. Higher ranks become ArrayND, which the export
// never declares.
type hfFeature struct {
	kind   string // "image", "value", "sequence"
	dtype  string
	length int64
}

func hfMapping(dtype string, shape []int64) (hfFeature, error) {
	switch {
	case dtype == "video":
		return hfFeature{}, nil
	case dtype == "image":
		return hfFeature{kind: "image"}, nil
	case slices.Equal(shape, []int64{1}):
		return hfFeature{kind: "value", dtype: dtype}, nil
	case len(shape) == 1:
		return hfFeature{kind: "sequence", dtype: dtype, length: shape[0]}, nil
	}
	return hfFeature{}, fmt.Errorf("shape %v: the export declares no ArrayND", shape)
}

// castsTo reports whether a Parquet leaf reads as the Arrow type of a
// datasets.Value of dtype without a lossy cast.
func castsTo(n parquet.Node, dtype string) bool {
	t := n.Type()
	var it *format.IntType
	var str *format.StringType
	if lt := t.LogicalType(); lt != nil {
		it, _ = lt.Value.(*format.IntType)
		str, _ = lt.Value.(*format.StringType)
	}
	switch dtype {
	case "float32":
		return t.Kind() == parquet.Float
	case "int64":
		return t.Kind() == parquet.Int64 && (it == nil || it.IsSigned)
	case "uint64":
		return t.Kind() == parquet.Int64 && it != nil && !it.IsSigned
	case "bool":
		return t.Kind() == parquet.Boolean
	case "string":
		return t.Kind() == parquet.ByteArray && str != nil
	}
	return false
}

// listElement returns the element node of a Parquet LIST column, or nil.
func listElement(n parquet.Node) parquet.Node {
	if n.Leaf() || n.Type().LogicalType() == nil {
		return nil
	}
	if _, ok := n.Type().LogicalType().Value.(*format.ListType); !ok {
		return nil
	}
	list := n.Fields()[0]
	if list.Leaf() {
		return list
	}
	return list.Fields()[0]
}

// checkLoadable applies LeRobot's loading rules to an export: the
// feature-to-datasets mapping and the cast of every data file to it
// (column names exactly the non-video features, each column of the type
// and, for sequences, the length the feature says), episode index ranges
// (every episode's frames contiguous, in the data file its row names, at
// the global indices it says), timestamps within tolerance of
// frame_index / fps, and stats of the shapes LeRobot checks.
func checkLoadable(t *testing.T, dir string) {
	t.Helper()
	var in struct {
		FPS           json.Number `json:"fps"`
		TotalEpisodes int64       `json:"total_episodes"`
		TotalFrames   int64       `json:"total_frames"`
		Features      map[string]struct {
			DType string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		} `json:"features"`
	}
	readJSON(t, filepath.Join(dir, lerobot.InfoPath), &in)
	fps, err := in.FPS.Int64()
	if err != nil || fps <= 0 {
		t.Fatalf("fps %q is not a positive integer (DatasetInfo.fps is an int)", in.FPS)
	}
	want := map[string]hfFeature{}
	for name, f := range in.Features {
		hf, err := hfMapping(f.DType, f.Shape)
		if err != nil {
			t.Fatalf("feature %s: %v", name, err)
		}
		if hf.kind != "" {
			want[name] = hf
		}
	}

	eps, err := parquet.ReadFile[episodeRow](filepath.Join(dir, lerobot.EpisodesPath))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(eps)) != in.TotalEpisodes {
		t.Fatalf("%d episode rows, info says %d", len(eps), in.TotalEpisodes)
	}
	type span struct{ lo, hi, n int64 }
	seen := map[int64]*span{} // episode_index -> indices seen
	fileOf := map[int64]string{}
	var frames int64
	for _, path := range dataFiles(t, dir) {
		rel, _ := filepath.Rel(dir, path)
		pf, closeFile := openPF(t, path)
		var cols []string
		for _, f := range pf.Schema().Fields() {
			cols = append(cols, f.Name())
			hf, ok := want[f.Name()]
			switch {
			case !ok:
				t.Errorf("%s: column %q is not a feature: the cast to the features fails", rel, f.Name())
			case hf.kind == "image":
				if f.Leaf() || len(f.Fields()) != 2 || f.Fields()[0].Name() != "bytes" || f.Fields()[1].Name() != "path" {
					t.Errorf("%s: image column %q is not {bytes, path}", rel, f.Name())
				}
			case hf.kind == "value":
				if !f.Leaf() || !castsTo(f, hf.dtype) {
					t.Errorf("%s: column %q does not cast to Value(%s) (shape [1] is a scalar)", rel, f.Name(), hf.dtype)
				}
			case hf.kind == "sequence":
				if el := listElement(f); el == nil || !castsTo(el, hf.dtype) {
					t.Errorf("%s: column %q is not a list of %s", rel, f.Name(), hf.dtype)
				}
			}
		}
		var names []string
		for n := range want {
			names = append(names, n)
		}
		sort.Strings(names)
		sort.Strings(cols)
		if !slices.Equal(names, cols) {
			t.Errorf("%s: columns %v, features %v", rel, cols, names)
		}

		// Per row: sequence lengths, indices, timestamps.
		leafOf := map[string]int{}
		for i, p := range pf.Schema().Columns() {
			leafOf[p[0]] = i
		}
		r := parquet.NewReader(pf)
		buf := make([]parquet.Row, 64)
		for {
			n, err := r.ReadRows(buf)
			for _, row := range buf[:n] {
				lens := map[int]int64{}
				scalar := map[int]parquet.Value{}
				for _, v := range row {
					c := v.Column()
					if !v.IsNull() {
						lens[c]++
					}
					scalar[c] = v
				}
				for name, hf := range want {
					if hf.kind == "sequence" && lens[leafOf[name]] != hf.length {
						t.Fatalf("%s: a row's %s has %d elements, Sequence(length=%d) fails the cast", rel, name, lens[leafOf[name]], hf.length)
					}
				}
				ep := scalar[leafOf["episode_index"]].Int64()
				idx := scalar[leafOf["index"]].Int64()
				fi := scalar[leafOf["frame_index"]].Int64()
				ts := float64(scalar[leafOf["timestamp"]].Float())
				if d := math.Abs(ts - float64(fi)/float64(fps)); d > lerobot.TimestampTolerance {
					t.Fatalf("%s: episode %d frame %d: timestamp %v is %v from frame_index / fps", rel, ep, fi, ts, d)
				}
				s := seen[ep]
				if s == nil {
					s = &span{lo: idx, hi: idx - 1}
					seen[ep] = s
					fileOf[ep] = filepath.ToSlash(rel)
				}
				if idx != s.hi+1 || fileOf[ep] != filepath.ToSlash(rel) || fi != s.n {
					t.Fatalf("%s: episode %d: index %d frame %d after %d in %s", rel, ep, idx, fi, s.hi, fileOf[ep])
				}
				s.hi, s.n = idx, s.n+1
				frames++
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
		}
		r.Close()
		closeFile()
	}
	if frames != in.TotalFrames {
		t.Errorf("%d frames, info says %d", frames, in.TotalFrames)
	}
	for _, e := range eps {
		s := seen[e.EpisodeIndex]
		if s == nil || s.lo != e.DatasetFromIndex || s.hi+1 != e.DatasetToIndex || s.n != e.Length ||
			fileOf[e.EpisodeIndex] != lerobot.DataFile(int(e.DataChunkIndex), int(e.DataFileIndex)) {
			t.Errorf("episode %d: row %+v, frames %+v in %s", e.EpisodeIndex, e, s, fileOf[e.EpisodeIndex])
		}
	}

	// stats.json: every statistic of every non-string feature, shaped
	// as LeRobot checks them.
	var st map[string]map[string]json.RawMessage
	readJSON(t, filepath.Join(dir, lerobot.StatsPath), &st)
	for name, f := range in.Features {
		if f.DType == "string" {
			continue
		}
		s, ok := st[name]
		if !ok {
			t.Errorf("stats.json has no %s", name)
			continue
		}
		for _, k := range []string{"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"} {
			var v any
			if err := json.Unmarshal(s[k], &v); err != nil {
				t.Errorf("stats %s/%s: %v", name, k, err)
				continue
			}
			got := shapeOf(v)
			wantShape := []int64{f.Shape[0]}
			switch {
			case k == "count":
				wantShape = []int64{1}
			case f.DType == "image" || f.DType == "video":
				wantShape = []int64{f.Shape[2], 1, 1}
			}
			if !slices.Equal(got, wantShape) {
				t.Errorf("stats %s/%s has shape %v, want %v", name, k, got, wantShape)
			}
		}
	}
}

// shapeOf is the shape of a nested JSON array.
func shapeOf(v any) []int64 {
	var out []int64
	for {
		a, ok := v.([]any)
		if !ok {
			return out
		}
		out = append(out, int64(len(a)))
		if len(a) == 0 {
			return out
		}
		v = a[0]
	}
}

func openPF(t *testing.T, path string) (*parquet.File, func()) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf, func() { f.Close() }
}

// TestLoadableByLeRobot exports a recording of every built-in env and
// applies LeRobot's loading rules to the files.
func TestLoadableByLeRobot(t *testing.T) {
	for _, env := range sim.Envs() {
		t.Run(env, func(t *testing.T) {
			root := roottest.Record(t, []sim.Config{{Env: env, NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, Seed: 11, SessionID: "s-" + env}})
			dir, sum, _ := export(t, root, lerobot.WithIncomplete(true))
			if sum.FPS <= 0 {
				t.Errorf("fps %d", sum.FPS)
			}
			checkLoadable(t, dir)
		})
	}
}
