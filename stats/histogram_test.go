package stats

import (
	"math"
	"slices"
	"testing"
)

func TestHistogram(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	bins := func(kv map[int]int64) []int64 {
		c := make([]int64, HistogramBins)
		for k, v := range kv {
			c[k] = v
		}
		return c
	}
	tests := []struct {
		name string
		vals []float64
		want Histogram
	}{
		{"empty", nil, Histogram{}},
		{"one value", []float64{3}, Histogram{Lo: 3, Hi: 3, Counts: []int64{1}}},
		{"all equal", []float64{2, 2, 2}, Histogram{Lo: 2, Hi: 2, Counts: []int64{3}}},
		{"ends", []float64{0, 32}, Histogram{Lo: 0, Hi: 32, Counts: bins(map[int]int64{0: 1, 31: 1})}},
		{"edges go up", []float64{0, 1, 1, 2, 31.5, 32}, Histogram{Lo: 0, Hi: 32, Counts: bins(map[int]int64{0: 1, 1: 2, 2: 1, 31: 2})}},
		{"non-finite apart", []float64{-inf, 0, 1, inf, nan, nan}, Histogram{Lo: 0, Hi: 1, Counts: bins(map[int]int64{0: 1, 31: 1}), NegInf: 1, PosInf: 1, NaN: 2}},
		{"only non-finite", []float64{inf, nan}, Histogram{PosInf: 1, NaN: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a acc
			for _, v := range tc.vals {
				a.add(v)
			}
			got := a.summary().Histogram
			if got.Lo != tc.want.Lo || got.Hi != tc.want.Hi || !slices.Equal(got.Counts, tc.want.Counts) ||
				got.NegInf != tc.want.NegInf || got.PosInf != tc.want.PosInf || got.NaN != tc.want.NaN {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestHistogramCountsEveryValue: bins and the non-finite counts add up to
// Count, whatever the values.
func TestHistogramCountsEveryValue(t *testing.T) {
	var a acc
	for i := range 10000 {
		a.add(math.Sin(float64(i)) * float64(i%97))
	}
	s := a.summary()
	var n int64
	for _, c := range s.Histogram.Counts {
		n += c
	}
	if n != s.Count || len(s.Histogram.Counts) != HistogramBins {
		t.Fatalf("bins hold %d of %d values in %d bins", n, s.Count, len(s.Histogram.Counts))
	}
}

func TestHistogramOf(t *testing.T) {
	vals := []float64{3, math.NaN(), 1, 2}
	h := HistogramOf(vals)
	if h.Lo != 1 || h.Hi != 3 || h.NaN != 1 || h.Counts[0] != 1 || h.Counts[HistogramBins-1] != 1 {
		t.Fatalf("got %+v", h)
	}
	if vals[0] != 3 || vals[2] != 1 {
		t.Fatalf("HistogramOf changed its input: %v", vals)
	}
}
