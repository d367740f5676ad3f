package lerobot

import (
	"math"
	"slices"
)

// quantiles are the quantiles LeRobot keeps for every feature, with their
// stats.json keys.
var quantiles = []struct {
	key string
	q   float64
}{{"q01", 0.01}, {"q10", 0.10}, {"q50", 0.50}, {"q90", 0.90}, {"q99", 0.99}}

// statKeys are the keys of one feature's statistics, in the order the
// episodes file's stats/<feature>/<key> columns are written.
var statKeys = []string{"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"}

// numStats gathers one numeric feature's values, element by element, to
// compute exact statistics: min, max, mean, population std and
// quantiles (linear interpolation between the closest ranks, as numpy's
// default). NaN and infinite values are left out (JSON has no spelling
// for them); an element with no finite value gets 0 for every statistic.
type numStats struct {
	n    int64       // frames
	vals [][]float64 // per element, the finite values
}

func newNumStats(width int) *numStats { return &numStats{vals: make([][]float64, width)} }

func (s *numStats) add(v []float64) {
	s.n++
	for i, x := range v {
		if i < len(s.vals) && !math.IsNaN(x) && !math.IsInf(x, 0) {
			s.vals[i] = append(s.vals[i], x)
		}
	}
}

// merge adds o's values to s.
func (s *numStats) merge(o *numStats) {
	s.n += o.n
	for i := range s.vals {
		s.vals[i] = append(s.vals[i], o.vals[i]...)
	}
}

// result computes the statistics, each a slice of one value per element
// (count: the frames).
func (s *numStats) result() map[string]any {
	w := len(s.vals)
	out := map[string][]float64{}
	for _, k := range statKeys {
		if k != "count" {
			out[k] = make([]float64, w)
		}
	}
	for i, v := range s.vals {
		if len(v) == 0 {
			continue
		}
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		var sum float64
		for _, x := range sorted {
			sum += x
		}
		mean := sum / float64(len(sorted))
		var sq float64
		for _, x := range sorted {
			sq += (x - mean) * (x - mean)
		}
		out["min"][i], out["max"][i] = sorted[0], sorted[len(sorted)-1]
		out["mean"][i], out["std"][i] = mean, math.Sqrt(sq/float64(len(sorted)))
		for _, q := range quantiles {
			out[q.key][i] = quantileSorted(sorted, q.q)
		}
	}
	res := map[string]any{"count": []int64{s.n}}
	for k, v := range out {
		res[k] = v
	}
	return res
}

// quantileSorted is the q quantile of sorted values, interpolated
// linearly between the two closest ranks.
func quantileSorted(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (sorted[lo+1]-sorted[lo])*(pos-float64(lo))
}

// imgStats counts an image feature's pixel values per channel; the
// statistics are per channel over all pixels, scaled to [0, 1], each of
// shape [C, 1, 1], as LeRobot computes them for images.
type imgStats struct {
	n    int64
	hist [][256]int64
}

func newImgStats(c int) *imgStats { return &imgStats{hist: make([][256]int64, c)} }

func (s *imgStats) add(pix []byte) {
	s.n++
	c := len(s.hist)
	for i, p := range pix {
		s.hist[i%c][p]++
	}
}

func (s *imgStats) merge(o *imgStats) {
	s.n += o.n
	for c := range s.hist {
		for v := range s.hist[c] {
			s.hist[c][v] += o.hist[c][v]
		}
	}
}

func (s *imgStats) result() map[string]any {
	c := len(s.hist)
	out := map[string][][][]float64{}
	for _, k := range statKeys {
		if k != "count" {
			out[k] = make([][][]float64, c)
		}
	}
	for ch, h := range s.hist {
		var total int64
		var sum, sq float64
		lo, hi := -1, 0
		for v, k := range h {
			if k == 0 {
				continue
			}
			if lo < 0 {
				lo = v
			}
			hi = v
			total += k
			x := float64(v) / 255
			sum += x * float64(k)
		}
		var mean float64
		if total > 0 {
			mean = sum / float64(total)
			for v, k := range h {
				d := float64(v)/255 - mean
				sq += d * d * float64(k)
			}
		}
		set := func(key string, x float64) { out[key][ch] = [][]float64{{x}} }
		if total == 0 {
			for _, k := range statKeys {
				if k != "count" {
					set(k, 0)
				}
			}
			continue
		}
		set("min", float64(lo)/255)
		set("max", float64(hi)/255)
		set("mean", mean)
		set("std", math.Sqrt(sq/float64(total)))
		for _, q := range quantiles {
			pos := q.q * float64(total-1)
			r := int64(math.Floor(pos))
			a, b := rankValue(&h, r), rankValue(&h, r+1)
			if r+1 >= total {
				b = a
			}
			set(q.key, (a+(b-a)*(pos-float64(r)))/255)
		}
	}
	res := map[string]any{"count": []int64{s.n}}
	for k, v := range out {
		res[k] = v
	}
	return res
}

// rankValue is the value of rank r (0-based) in the sorted multiset the
// histogram counts.
func rankValue(h *[256]int64, r int64) float64 {
	var seen int64
	for v, k := range h {
		seen += k
		if r < seen {
			return float64(v)
		}
	}
	return 255
}
