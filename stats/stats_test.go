package stats

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

func TestQuantileIndex(t *testing.T) {
	// The smallest value whose share of values at or below it reaches q:
	// index ceil(q·n) - 1, at least 0, computed here in integers.
	pct := []int64{1, 25, 50, 75, 99}
	for n := int64(1); n <= 1000; n++ {
		for i, q := range Quantiles {
			want := max(1, (pct[i]*n+99)/100) - 1
			if got := QuantileIndex(q, n); got != want {
				t.Fatalf("QuantileIndex(%v, %d) = %d, want %d", q, n, got, want)
			}
		}
	}
}

func TestIndex(t *testing.T) {
	for _, tc := range []struct {
		shape []int64
		i     int
		want  string
	}{
		{nil, 0, "[]"},
		{[]int64{4}, 3, "[3]"},
		{[]int64{2, 3}, 4, "[1,1]"},
		{[]int64{2, 3, 6}, 35, "[1,2,5]"},
	} {
		if got := Index(tc.shape, tc.i); got != tc.want {
			t.Errorf("Index(%v, %d) = %s, want %s", tc.shape, tc.i, got, tc.want)
		}
	}
}

func TestAccumulate(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals []float64
		want Summary
	}{
		{"one", []float64{3}, Summary{Count: 1, Mean: 3, Std: 0, Min: 3, Max: 3, Quantiles: [5]float64{3, 3, 3, 3, 3}}},
		{"four", []float64{4, 1, 3, 2}, Summary{Count: 4, Mean: 2.5, Std: math.Sqrt(1.25), Min: 1, Max: 4, Quantiles: [5]float64{1, 1, 2, 3, 4}}},
		{"NaN is the largest", []float64{math.NaN(), 1, 2, 3}, Summary{Count: 4, Mean: math.NaN(), Std: math.NaN(), Min: 1, Max: math.NaN(),
			Quantiles: [5]float64{1, 1, 2, 3, math.NaN()}}},
		{"infinities", []float64{math.Inf(1), math.Inf(-1), 0}, Summary{Count: 3, Mean: math.NaN(), Std: math.NaN(), Min: math.Inf(-1), Max: math.Inf(1),
			Quantiles: [5]float64{math.Inf(-1), math.Inf(-1), 0, math.Inf(1), math.Inf(1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a acc
			for _, v := range tc.vals {
				a.add(v)
			}
			if got := a.summary(); !sameSummary(got, tc.want, 1e-15) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	var all, a, b, c acc
	for i := range 1000 {
		x := math.Sin(float64(i)) * float64(i%17)
		all.add(x)
		switch i % 3 {
		case 0:
			a.add(x)
		case 1:
			b.add(x)
		default:
			c.add(x)
		}
	}
	var m acc
	m.merge(&a)
	m.merge(&b)
	m.merge(&acc{})
	m.merge(&c)
	if got, want := m.summary(), all.summary(); !sameSummary(got, want, 1e-12) {
		t.Errorf("merged %+v, whole %+v", got, want)
	}
}

func sameSummary(a, b Summary, tol float64) bool {
	close := func(x, y float64) bool {
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && math.IsNaN(y)
		}
		if math.IsInf(x, 0) || math.IsInf(y, 0) {
			return x == y
		}
		return math.Abs(x-y) <= tol*max(1, math.Abs(x), math.Abs(y))
	}
	if a.Count != b.Count || !close(a.Mean, b.Mean) || !close(a.Std, b.Std) || !close(a.Min, b.Min) || !close(a.Max, b.Max) {
		return false
	}
	for i := range a.Quantiles {
		if !close(a.Quantiles[i], b.Quantiles[i]) {
			return false
		}
	}
	return true
}

// flatten turns a blob.DecodeLeaf value into float64 elements.
func flatten(v any) []float64 {
	rv := reflect.ValueOf(v)
	one := func(e reflect.Value) float64 {
		switch e.Kind() {
		case reflect.Bool:
			if e.Bool() {
				return 1
			}
			return 0
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return float64(e.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return float64(e.Uint())
		}
		return e.Float()
	}
	if rv.Kind() == reflect.Slice {
		out := make([]float64, rv.Len())
		for i := range out {
			out[i] = one(rv.Index(i))
		}
		return out
	}
	return []float64{one(rv)}
}

// naive computes a feature's statistics the plain way: the values decoded
// by the dataset package (ObservationValues), two-pass mean and std, a
// sort.
func naive(vals [][]float64) []Summary {
	out := make([]Summary, len(vals))
	for i, vs := range vals {
		s := Summary{Count: int64(len(vs))}
		if len(vs) == 0 {
			out[i] = s
			continue
		}
		sum := 0.0
		for _, v := range vs {
			sum += v
		}
		s.Mean = sum / float64(len(vs))
		ss := 0.0
		for _, v := range vs {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.Std = math.Sqrt(ss / float64(len(vs)))
		sorted := slices.Clone(vs)
		slices.Sort(sorted)
		s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
		for k, q := range Quantiles {
			s.Quantiles[k] = sorted[QuantileIndex(q, int64(len(sorted)))]
		}
		out[i] = s
	}
	return out
}

func TestComputeAgainstNaive(t *testing.T) {
	root := roottest.Record(t, []sim.Config{
		{SessionID: "a", Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 7, TimeLimit: 20, Seed: 1},
		{SessionID: "b", Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 5, MaxEpisodeSteps: 20, Seed: 2},
		{SessionID: "c", Env: "all-leaves", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 9, Seed: 3},
		{SessionID: "d", Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 15, Seed: 4},
	})
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compute(context.Background(), d, d.Recordings())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Recordings) != 4 || len(res.Overall) != 3 {
		t.Fatalf("%d recordings, %d groups; want 4 and 3", len(res.Recordings), len(res.Overall))
	}
	// Per feature name, per recording: every value.
	type key struct {
		rec  dataset.Recording
		name string
	}
	values := map[key][][]float64{}
	for _, rec := range d.Recordings() {
		for _, rid := range d.EpisodeRecordIDs(rec) {
			st, err := d.Steps(rec, rid)
			if err != nil {
				t.Fatal(err)
			}
			for st.Next() {
				k := key{rec, schema.ColReward}
				if values[k] == nil {
					values[k] = make([][]float64, 1)
				}
				values[k][0] = append(values[k][0], st.Step().Reward)
				for _, side := range []struct {
					prefix string
					l      *schema.Layout
					get    func() ([]any, error)
				}{{schema.ColObservation, st.Spaces().Observation, st.ObservationValues}, {schema.ColAction, st.Spaces().Action, st.ActionValues}} {
					vs, err := side.get()
					if err != nil {
						t.Fatal(err)
					}
					for i, v := range vs {
						lf := side.l.Leaves[i]
						if lf.Kind == schema.KindText {
							continue
						}
						k := key{rec, schema.ColumnName(side.prefix, lf.Path)}
						els := flatten(v)
						if values[k] == nil {
							values[k] = make([][]float64, len(els))
						}
						for j, x := range els {
							values[k][j] = append(values[k][j], x)
						}
					}
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			st.Close()
		}
	}
	features := 0
	check := func(what string, feats []Feature, recs []dataset.Recording) {
		names := map[string]bool{}
		for _, f := range feats {
			names[f.Name] = true
			var merged [][]float64
			for _, rec := range recs {
				vs := values[key{rec, f.Name}]
				if merged == nil {
					merged = make([][]float64, len(vs))
				}
				for j := range vs {
					merged[j] = append(merged[j], vs[j]...)
				}
			}
			want := naive(merged)
			if len(want) != len(f.Elements) {
				t.Errorf("%s %s: %d elements, want %d", what, f.Name, len(f.Elements), len(want))
				continue
			}
			for j := range want {
				features++
				if !sameSummary(f.Elements[j], want[j], 1e-12) {
					t.Errorf("%s %s%s:\n got  %+v\n want %+v", what, f.Name, Index(f.Shape, j), f.Elements[j], want[j])
				}
			}
		}
		if !names[schema.ColReward] {
			t.Errorf("%s: no reward feature", what)
		}
		// Every numeric leaf with elements is there, and only those: the
		// image is binary, the text leaves and the empty Box are left out.
		for k, vs := range values {
			if k.rec != recs[0] {
				continue
			}
			want := len(vs) > 0 && k.name != "observation.image" && !strings.Contains(k.name, "empty")
			if names[k.name] != want {
				t.Errorf("%s: feature %s present %v, want %v", what, k.name, names[k.name], want)
			}
		}
	}
	for _, r := range res.Recordings {
		check(r.Recording.String(), r.Features, []dataset.Recording{r.Recording})
	}
	for _, g := range res.Overall {
		check("overall "+g.Spaces, g.Features, g.Recordings)
	}
	if g := res.Overall[0]; len(g.Recordings) != 2 || g.Recordings[0].SessionID != "a" || g.Recordings[1].SessionID != "b" {
		t.Errorf("the cartpole group holds %v", g.Recordings)
	}
	t.Logf("%d elements checked", features)

	// The outputs: Parquet rows read back equal Rows(); JSON parses.
	var buf bytes.Buffer
	if err := res.WriteParquet(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := parquet.Read[Row](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if want := res.Rows(); !reflect.DeepEqual(got, want) {
		t.Errorf("Parquet rows differ from Rows(): %d and %d rows", len(got), len(want))
	}
	var js map[string]any
	if err := json.Unmarshal(res.AppendJSON(nil), &js); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "overall, spaces") {
		t.Errorf("text output has no overall section:\n%s", text.String())
	}
}
