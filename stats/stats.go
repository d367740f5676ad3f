package stats

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/parquet-go/parquet-go"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Quantiles are the fractions of the quantile statistics, in the order of
// Summary.Quantiles.
var Quantiles = [...]float64{0.01, 0.25, 0.5, 0.75, 0.99}

// QuantileNames name Quantiles: "p01", "p25", "p50", "p75", "p99".
var QuantileNames = [...]string{"p01", "p25", "p50", "p75", "p99"}

// Summary is the statistics of one element. With Count 0 the others are
// meaningless (null in the outputs).
type Summary struct {
	Count     int64
	Mean      float64
	Std       float64
	Min, Max  float64
	Quantiles [len(Quantiles)]float64
}

// Feature is the statistics of one feature, element by element.
type Feature struct {
	// Name is the steps column: "reward", "observation", "action",
	// "observation.<path>" or "action.<path>".
	Name string
	// Leaf describes the leaf ("Box(4) float32", "Discrete(2) int64");
	// "float64" for reward.
	Leaf string
	// Shape is the leaf's element shape ([] for scalars).
	Shape    []int64
	Elements []Summary
}

// Recording is the statistics of one recording.
type Recording struct {
	dataset.Recording
	// Spaces names the recording's pair of spaces (see SpacesKey); "" when
	// its files carry none.
	Spaces string
	// Steps counts the steps rows read.
	Steps    int64
	Features []Feature
}

// Group is the overall statistics of the recordings that share a pair of
// spaces.
type Group struct {
	Spaces     string
	Recordings []dataset.Recording
	Steps      int64
	Features   []Feature
}

// Result is what Compute returns.
type Result struct {
	Recordings []Recording
	Overall    []Group
}

// SpacesKey names a pair of spaces: the first 16 hex digits of the
// SHA-256 of the deterministic protobuf encoding of the observation spec
// and of the action spec, each preceded by its length (8 bytes,
// big-endian; a missing spec is empty). Recordings with equal keys have
// equal spaces.
func SpacesKey(sp dataset.Spaces) (string, error) {
	if sp.Observation == nil && sp.Action == nil {
		return "", nil
	}
	h := sha256.New()
	for _, l := range []*schema.Layout{sp.Observation, sp.Action} {
		var b []byte
		if l != nil {
			var err error
			if b, err = (proto.MarshalOptions{Deterministic: true}).Marshal(l.Spec); err != nil {
				return "", err
			}
		}
		var n [8]byte
		for i := range 8 {
			n[i] = byte(uint64(len(b)) >> (56 - 8*i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// acc accumulates the values of one element.
type acc struct {
	n        int64
	min, max float64
	vals     []float64
}

func (a *acc) add(x float64) {
	a.n++
	if a.n == 1 {
		a.min, a.max = x, x
	} else {
		if less(x, a.min) {
			a.min = x
		}
		if less(a.max, x) {
			a.max = x
		}
	}
	a.vals = append(a.vals, x)
}

// merge adds b's values into a.
func (a *acc) merge(b *acc) {
	if b.n == 0 {
		return
	}
	if a.n == 0 {
		a.min, a.max = b.min, b.max
	} else {
		if less(b.min, a.min) {
			a.min = b.min
		}
		if less(a.max, b.max) {
			a.max = b.max
		}
	}
	a.n += b.n
	a.vals = append(a.vals, b.vals...)
}

// neumaier is a compensated sum.
type neumaier struct{ sum, c, plain float64 }

func (s *neumaier) add(x float64) {
	t := s.sum + x
	if math.Abs(s.sum) >= math.Abs(x) {
		s.c += (s.sum - t) + x
	} else {
		s.c += (x - t) + s.sum
	}
	s.sum = t
	s.plain += x
}

func (s *neumaier) value() float64 {
	if math.IsInf(s.plain, 0) || math.IsNaN(s.plain) {
		return s.plain
	}
	return s.sum + s.c
}

// meanStd returns the mean and the population standard deviation of vals
// by the corrected two-pass algorithm with compensated sums.
func meanStd(vals []float64) (float64, float64) {
	var sum neumaier
	for _, x := range vals {
		sum.add(x)
	}
	n := float64(len(vals))
	mean := sum.value() / n
	if math.IsInf(mean, 0) || math.IsNaN(mean) {
		return mean, math.NaN()
	}
	var d, d2 neumaier
	for _, x := range vals {
		d.add(x - mean)
		d2.add((x - mean) * (x - mean))
	}
	v := (d2.value() - d.value()*d.value()/n) / n
	return mean, math.Sqrt(max(v, 0))
}

// less orders floats as DuckDB does: NaN above every other value.
func less(a, b float64) bool {
	if math.IsNaN(a) {
		return false
	}
	return math.IsNaN(b) || a < b
}

// QuantileIndex is the 0-based index of the q-quantile among n sorted
// values, as DuckDB's quantile_disc computes it: max(1, n - floor(n - q·n)) - 1.
func QuantileIndex(q float64, n int64) int64 {
	fn := float64(n)
	return max(1, n-int64(math.Floor(fn-q*fn))) - 1
}

// summary sorts a's values and returns its statistics.
func (a *acc) summary() Summary {
	s := Summary{Count: a.n}
	if a.n == 0 {
		return s
	}
	s.Min, s.Max = a.min, a.max
	s.Mean, s.Std = meanStd(a.vals)
	slices.SortFunc(a.vals, func(x, y float64) int {
		switch {
		case less(x, y):
			return -1
		case less(y, x):
			return 1
		}
		return 0
	})
	for i, q := range Quantiles {
		s.Quantiles[i] = a.vals[QuantileIndex(q, a.n)]
	}
	return s
}

// featureAcc accumulates one feature.
type featureAcc struct {
	name  string
	leaf  string
	shape []int64
	// index is the leaf index.
	index  int
	kind   schema.LeafKind
	stride int64
	dtype  spacesv1.DataType
	elems  []acc
}

// recordingAcc accumulates one recording.
type recordingAcc struct {
	rec      dataset.Recording
	spaces   string
	steps    int64
	features []*featureAcc
	byName   map[string]*featureAcc
}

// Compute reads the steps files of the recordings and returns their
// statistics and the overall statistics of each group of recordings with
// equal spaces, in the order of recs (groups in the order of their first
// recording).
func Compute(ctx context.Context, d *dataset.Dataset, recs []dataset.Recording) (*Result, error) {
	var accs []*recordingAcc
	for _, rec := range recs {
		ra, err := computeRecording(ctx, d, rec)
		if err != nil {
			return nil, err
		}
		accs = append(accs, ra)
	}
	res := &Result{}
	// The groups first: merging copies the values, summary sorts them.
	var order []string
	groups := map[string][]*recordingAcc{}
	for _, ra := range accs {
		if _, ok := groups[ra.spaces]; !ok {
			order = append(order, ra.spaces)
		}
		groups[ra.spaces] = append(groups[ra.spaces], ra)
	}
	for _, key := range order {
		members := groups[key]
		g := Group{Spaces: key}
		merged := map[string]*featureAcc{}
		var names []*featureAcc
		for _, ra := range members {
			g.Recordings = append(g.Recordings, ra.rec)
			g.Steps += ra.steps
			for _, fa := range ra.features {
				m := merged[fa.name]
				if m == nil {
					m = &featureAcc{name: fa.name, leaf: fa.leaf, shape: fa.shape, elems: make([]acc, len(fa.elems))}
					merged[fa.name] = m
					names = append(names, m)
				}
				for i := range fa.elems {
					if i < len(m.elems) {
						m.elems[i].merge(&fa.elems[i])
					}
				}
			}
		}
		for _, m := range names {
			g.Features = append(g.Features, m.result())
		}
		res.Overall = append(res.Overall, g)
	}
	for _, ra := range accs {
		r := Recording{Recording: ra.rec, Spaces: ra.spaces, Steps: ra.steps}
		for _, fa := range ra.features {
			r.Features = append(r.Features, fa.result())
		}
		res.Recordings = append(res.Recordings, r)
	}
	return res, nil
}

func (fa *featureAcc) result() Feature {
	f := Feature{Name: fa.name, Leaf: fa.leaf, Shape: fa.shape, Elements: make([]Summary, len(fa.elems))}
	for i := range fa.elems {
		f.Elements[i] = fa.elems[i].summary()
		fa.elems[i].vals = nil
	}
	return f
}

// computeRecording reads every steps file of a recording.
func computeRecording(ctx context.Context, d *dataset.Dataset, rec dataset.Recording) (*recordingAcc, error) {
	sp, err := d.SessionSpaces(rec)
	if err != nil {
		return nil, err
	}
	key, err := SpacesKey(sp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rec, err)
	}
	ra := &recordingAcc{rec: rec, spaces: key, byName: map[string]*featureAcc{}}
	reward := &featureAcc{name: schema.ColReward, leaf: "float64", shape: []int64{}, elems: make([]acc, 1)}
	ra.features = append(ra.features, reward)
	var files []dataset.File
	for _, f := range d.Files(schema.TableSteps) {
		if f.Recording == rec {
			files = append(files, f)
		}
	}
	var obs, act []*featureAcc
	if len(files) > 0 {
		binary, err := binaryColumns(files[0].Path)
		if err != nil {
			return nil, err
		}
		obs = leafFeatures(schema.ColObservation, sp.Observation, binary)
		act = leafFeatures(schema.ColAction, sp.Action, binary)
		ra.features = append(ra.features, obs...)
		ra.features = append(ra.features, act...)
	}
	var buf []float64
	for _, f := range files {
		st, err := dataset.OpenStepsFile(f.Path)
		if err != nil {
			return nil, err
		}
		for st.Next() {
			if ra.steps%4096 == 0 {
				if err := ctx.Err(); err != nil {
					st.Close()
					return nil, err
				}
			}
			ra.steps++
			reward.elems[0].add(st.Step().Reward)
			for _, side := range []struct {
				feats  []*featureAcc
				leaves func() ([][]byte, error)
			}{{obs, st.ObservationLeaves}, {act, st.ActionLeaves}} {
				if len(side.feats) == 0 {
					continue
				}
				leaves, err := side.leaves()
				if err != nil {
					st.Close()
					return nil, err
				}
				if leaves == nil {
					continue
				}
				for _, fa := range side.feats {
					if fa.index >= len(leaves) || int64(len(leaves[fa.index])) != fa.stride {
						st.Close()
						return nil, fmt.Errorf("%s row %d: leaf %s does not fit the recording's space; run 'rlrec verify' on the ROOT", st.Path(), st.Row(), fa.name)
					}
					if buf, err = fa.values(buf[:0], leaves[fa.index]); err != nil {
						st.Close()
						return nil, fmt.Errorf("%s row %d: %s: %w", st.Path(), st.Row(), fa.name, err)
					}
					for i, v := range buf {
						fa.elems[i].add(v)
					}
				}
			}
		}
		err = st.Err()
		st.Close()
		if err != nil {
			return nil, err
		}
	}
	return ra, nil
}

// values appends the elements of one leaf's bytes as float64.
func (fa *featureAcc) values(dst []float64, b []byte) ([]float64, error) {
	if fa.kind == schema.KindMultiBinary {
		for _, c := range b {
			v := 0.0
			if c != 0 {
				v = 1
			}
			dst = append(dst, v)
		}
		return dst, nil
	}
	return blob.AppendElems(dst, fa.dtype, b)
}

// leafFeatures lists the numeric features of one side.
func leafFeatures(prefix string, l *schema.Layout, binary map[string]bool) []*featureAcc {
	if l == nil {
		return nil
	}
	var out []*featureAcc
	for i := range l.Leaves {
		lf := &l.Leaves[i]
		name := schema.ColumnName(prefix, lf.Path)
		if lf.Kind == schema.KindText || binary[name] || lf.Numel == 0 {
			continue
		}
		shape := append([]int64{}, lf.Shape...)
		out = append(out, &featureAcc{name: name, leaf: lf.String(), shape: shape, index: i, kind: lf.Kind,
			stride: lf.Stride, dtype: lf.DType, elems: make([]acc, lf.Numel)})
	}
	return out
}

// binaryColumns lists the typed columns of a steps file stored as binary
// (leaves above the typed-column threshold).
func binaryColumns(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file (%w); run 'rlrec verify' on the ROOT", path, err)
	}
	out := map[string]bool{}
	for _, fld := range pf.Schema().Fields() {
		if fld.Leaf() && fld.Type().Kind() == parquet.ByteArray && fld.Type().LogicalType() == nil {
			out[fld.Name()] = true
		}
	}
	return out, nil
}

// Index renders element i of a shape as its row-major index: "[]" for a
// scalar, "[2]", "[1,0,2]".
func Index(shape []int64, i int) string {
	if len(shape) == 0 {
		return "[]"
	}
	idx := make([]int64, len(shape))
	r := int64(i)
	for k := len(shape) - 1; k >= 0; k-- {
		if shape[k] > 0 {
			idx[k] = r % shape[k]
			r /= shape[k]
		}
	}
	b := []byte{'['}
	for k, v := range idx {
		if k > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", v)
	}
	return string(append(b, ']'))
}
