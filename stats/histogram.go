package stats

import (
	"math"
	"slices"
	"sort"
)

// HistogramBins is the number of bins of a Histogram whose finite values
// are not all equal.
const HistogramBins = 32

// Histogram counts an element's values for a distribution plot: the
// finite values in equal-width bins from the smallest (Lo) to the largest
// (Hi), and the others apart. Bin k holds the values in [Lo + k·w,
// Lo + (k+1)·w) with w = (Hi − Lo)/HistogramBins; the last bin holds Hi
// too. When every finite value is equal (Lo == Hi) there is one bin.
// Counts is empty when there is no finite value.
//
// Histograms are derived from the exact values while the quantiles are
// computed (the values are sorted then, so a histogram costs a binary
// search per bin). They are not part of the JSON or Parquet outputs of
// 'rlrec stats': 'rlrec report' draws them.
type Histogram struct {
	Lo, Hi              float64
	Counts              []int64
	NegInf, PosInf, NaN int64
}

// HistogramOf returns the histogram of values (left unchanged), as
// Summary.Histogram is of an element's values.
func HistogramOf(values []float64) Histogram {
	sorted := slices.Clone(values)
	slices.SortFunc(sorted, compare)
	return histogram(sorted)
}

// histogram bins sorted values (ordered by less: -Inf first, NaN last).
func histogram(sorted []float64) Histogram {
	var h Histogram
	lo, hi := 0, len(sorted)
	for hi > lo && math.IsNaN(sorted[hi-1]) {
		hi--
		h.NaN++
	}
	for hi > lo && math.IsInf(sorted[hi-1], 1) {
		hi--
		h.PosInf++
	}
	for lo < hi && math.IsInf(sorted[lo], -1) {
		lo++
		h.NegInf++
	}
	finite := sorted[lo:hi]
	if len(finite) == 0 {
		return h
	}
	h.Lo, h.Hi = finite[0], finite[len(finite)-1]
	if h.Lo == h.Hi {
		h.Counts = []int64{int64(len(finite))}
		return h
	}
	h.Counts = make([]int64, HistogramBins)
	width := (h.Hi - h.Lo) / HistogramBins
	start := 0
	for k := range HistogramBins - 1 {
		edge := h.Lo + float64(k+1)*width
		end := sort.SearchFloat64s(finite, edge) // first value >= edge
		h.Counts[k] = int64(end - start)
		start = end
	}
	h.Counts[HistogramBins-1] = int64(len(finite) - start)
	return h
}
