package parquetout

import (
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
)

// The batch: StepsWriter.Write buffers rows here, and writePending hands
// them to parquet-go a column at a time (ColumnWriter.WriteRowValues: in
// parquet-go v0.32.0 a ColumnWriter takes parquet.Values only, and the
// typed column writes of GenericWriter[T] need the row type at compile
// time, which the steps schema, following the spaces, does not have), so
// that a column's values go in as one slice. The rows are held column by column (one array per
// column, not a struct per row): the loops that turn a column into
// parquet.Values then read memory in sequence, about 1.2 ns a value
// against 2.2 reading one field of each 256-byte row struct (a
// benchmark with both in cache). What those loops cost most before is
// below (fixedValues): how the values are stored.
//
// The batches are cut where they always were (batchRows rows, the
// arena's budget, a row written through directly, a flush), and
// parquet-go cuts a page only after a batch: the pages, and so the file's
// bytes, depend on those cuts (TestStepsFileBytes).

// pendingRows holds the rows not yet handed to parquet-go, column by
// column: row i of the batch is element i of every slice. Byte slices
// point into the arena, or at the caller's buffers for a row written
// through directly (nil: null).
type pendingRows struct {
	episodeID, episodeRecordID []string
	obsBlob, actBlob           [][]byte
	episodeIndex, step         []int64
	sessionStep, recordedAt    []int64
	reward                     []float64
	envIndex                   []int32
	isFirst, isLast            []bool
	terminated, truncated      []bool
	// schema version 3
	infos, obsInfos         [][]byte
	rawObsBlob, rawActBlob  [][]byte
	lane                    []int64
	predictMs, stepMs       []float64
	hasLane                 []bool
	hasPredictMs, hasStepMs []bool
	// leaves are the typed columns' leaves (observation then action
	// columns), one slice per column; nil for a null side.
	leaves [][][]byte
}

// room makes room for row i (i <= the rows buffered) of a format with nt
// typed columns. Every column has the same length: it grows them
// together, doubling up to batchRows.
func (b *pendingRows) room(i, nt int) {
	if i < len(b.step) {
		return
	}
	n := min(max(16, 2*len(b.step)), batchRows)
	if n <= i {
		n = i + 1
	}
	b.episodeID, b.episodeRecordID = resized(b.episodeID, n), resized(b.episodeRecordID, n)
	b.obsBlob, b.actBlob = resized(b.obsBlob, n), resized(b.actBlob, n)
	b.episodeIndex, b.step = resized(b.episodeIndex, n), resized(b.step, n)
	b.sessionStep, b.recordedAt = resized(b.sessionStep, n), resized(b.recordedAt, n)
	b.reward, b.envIndex = resized(b.reward, n), resized(b.envIndex, n)
	b.isFirst, b.isLast = resized(b.isFirst, n), resized(b.isLast, n)
	b.terminated, b.truncated = resized(b.terminated, n), resized(b.truncated, n)
	b.infos, b.obsInfos = resized(b.infos, n), resized(b.obsInfos, n)
	b.rawObsBlob, b.rawActBlob = resized(b.rawObsBlob, n), resized(b.rawActBlob, n)
	b.lane, b.predictMs, b.stepMs = resized(b.lane, n), resized(b.predictMs, n), resized(b.stepMs, n)
	b.hasLane, b.hasPredictMs, b.hasStepMs = resized(b.hasLane, n), resized(b.hasPredictMs, n), resized(b.hasStepMs, n)
	b.leaves = resized(b.leaves, nt)
	for k := range b.leaves {
		b.leaves[k] = resized(b.leaves[k], n)
	}
}

// resized returns s with length n, its first elements kept.
func resized[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	t := make([]T, n)
	copy(t, s)
	return t
}

// drop clears the first n rows' references (to the arena and the
// caller's strings and buffers), once the batch is written.
func (b *pendingRows) drop(n int) {
	clear(b.episodeID[:n])
	clear(b.episodeRecordID[:n])
	clear(b.obsBlob[:n])
	clear(b.actBlob[:n])
	clear(b.infos[:n])
	clear(b.obsInfos[:n])
	clear(b.rawObsBlob[:n])
	clear(b.rawActBlob[:n])
	for _, l := range b.leaves {
		clear(l[:n])
	}
}

// add buffers r as the next row (w.pending), copying its bytes into the
// arena (keep), which the caller has made room for: its blobs, infos and
// raw blobs, then its observation leaves, then its action leaves (nil for
// a null side).
func (w *StepsWriter) add(r *StepRow, obsLeaves, actLeaves [][]byte) {
	b, i := &w.batch, w.pending
	t := w.f.table
	b.room(i, len(w.f.typed))
	b.episodeRecordID[i], b.episodeID[i] = r.EpisodeRecordID, r.EpisodeID
	b.episodeIndex[i], b.envIndex[i] = r.EpisodeIndex, r.EnvIndex
	b.step[i], b.sessionStep[i] = r.Step, r.SessionStep
	b.obsBlob[i], b.actBlob[i] = w.keepOptional(r.ObservationBlob), w.keepOptional(r.ActionBlob)
	b.reward[i] = r.Reward
	b.isFirst[i], b.isLast[i], b.terminated[i], b.truncated[i] = r.IsFirst, r.IsLast, r.Terminated, r.Truncated
	b.recordedAt[i] = r.RecordedAt.UnixMicro()
	b.lane[i], b.hasLane[i] = r.Lane, r.HasLane
	b.infos[i], b.obsInfos[i] = w.keepOptional(r.Infos), w.keepOptional(r.ObservationInfos)
	b.rawObsBlob[i], b.rawActBlob[i] = w.keepOptional(r.RawObservationBlob), w.keepOptional(r.RawActionBlob)
	b.predictMs[i], b.stepMs[i] = r.PredictMs, r.StepMs
	b.hasPredictMs[i], b.hasStepMs[i] = r.HasPredictMs, r.HasStepMs
	w.keepLeaves(b.leaves[:len(t.Observation)], i, obsLeaves)
	w.keepLeaves(b.leaves[len(t.Observation):], i, actLeaves)
}

// keepLeaves buffers one side's leaves as row i of its columns (nil for
// a null side). Leaves stored by reference (Text, binary) are copied into
// the arena; numeric leaves too, since they are decoded only when the
// batch is written, column by column.
func (w *StepsWriter) keepLeaves(cols [][][]byte, i int, leaves [][]byte) {
	if leaves == nil {
		for _, c := range cols {
			c[i] = nil
		}
		return
	}
	for k, c := range cols {
		c[i] = w.keep(leaves[k])
	}
}

// writePending hands the buffered rows to parquet-go, column by column,
// which copies them into its column buffers, and empties the arena. A
// column's values are stored into a slice sized for the batch (no append
// per value: the loops compile without bounds checks).
func (w *StepsWriter) writePending() error {
	n := w.pending
	if n == 0 {
		return nil
	}
	cols := w.pw.ColumnWriters()
	for c := 0; c < len(cols); c++ {
		var s []parquet.Value
		// The typed columns and a packed file's episode_record_id first,
		// then the fixed columns every steps file has.
		switch {
		case w.f.v3 >= 0 && c >= w.f.v3:
			s = w.batch.v3Values(w.values(n), c-w.f.v3)
		case c >= w.f.fixed:
			s = w.appendTyped(w.scratch[:0], c-w.f.fixed)
		default:
			s = w.batch.fixedValues(w.values(n), c)
		}
		w.scratch = s
		if _, err := cols[c].WriteRowValues(s); err != nil {
			w.err = fmt.Errorf("parquetout: write steps to %s: %w", w.part.TempPath(), err)
			return w.err
		}
	}
	w.batch.drop(n)
	w.pending = 0
	w.arena = w.arena[:0]
	return nil
}

// values returns the scratch slice with length n, for one value per row.
func (w *StepsWriter) values(n int) []parquet.Value {
	if cap(w.scratch) < n {
		w.scratch = make([]parquet.Value, n, max(n, 2*cap(w.scratch)))
	}
	return w.scratch[:n]
}

// The loops below store each parquet.Value straight into the slice, and
// set its definition level there: a Value (24 bytes) built in a local
// first, changed (SetDefinitionLevel, or parquet.BooleanValue's own "if")
// and then copied, is read back by 16-byte loads that overlap the
// smaller stores that built it, which the CPU cannot forward from its
// store buffer: 16-29 ns a value instead of about 2 (benchmarked on the
// fixed columns' loops; a steps row has 25-30 values).

// fixedValues fills s (one value per row of the batch) with fixed column
// c (schema.StepsColX) of every row.
func (b *pendingRows) fixedValues(s []parquet.Value, c int) []parquet.Value {
	switch c {
	case schema.StepsColEpisodeID:
		strValues(s, b.episodeID)
	case schema.StepsColEpisodeRecordID:
		strValues(s, b.episodeRecordID)
	case schema.StepsColEpisodeIndex:
		int64Values(s, b.episodeIndex)
	case schema.StepsColEnvIndex:
		src := b.envIndex[:len(s)]
		for i := range src {
			s[i] = parquet.Int32Value(src[i])
		}
	case schema.StepsColStep:
		int64Values(s, b.step)
	case schema.StepsColSessionStep:
		int64Values(s, b.sessionStep)
	case schema.StepsColObservationBlob:
		optionalBytesValues(s, b.obsBlob)
	case schema.StepsColActionBlob:
		optionalBytesValues(s, b.actBlob)
	case schema.StepsColReward:
		src := b.reward[:len(s)]
		for i := range src {
			s[i] = parquet.DoubleValue(src[i])
		}
	case schema.StepsColIsFirst:
		boolValues(s, b.isFirst)
	case schema.StepsColIsLast:
		boolValues(s, b.isLast)
	case schema.StepsColTerminated:
		boolValues(s, b.terminated)
	case schema.StepsColTruncated:
		boolValues(s, b.truncated)
	case schema.StepsColRecordedAt:
		int64Values(s, b.recordedAt)
	}
	return s
}

// v3Values fills s (one value per row of the batch) with version 3
// column k (schema.V3StepsX) of every row.
func (b *pendingRows) v3Values(s []parquet.Value, k int) []parquet.Value {
	switch k {
	case schema.V3StepsLane:
		src, set := b.lane[:len(s)], b.hasLane[:len(s)]
		for i := range src {
			if !set[i] {
				s[i] = parquet.Value{}
				continue
			}
			s[i] = parquet.Int64Value(src[i])
			s[i].SetDefinitionLevel(1)
		}
	case schema.V3StepsInfos:
		optionalBytesValues(s, b.infos)
	case schema.V3StepsRawObservationBlob:
		optionalBytesValues(s, b.rawObsBlob)
	case schema.V3StepsRawActionBlob:
		optionalBytesValues(s, b.rawActBlob)
	case schema.V3StepsPredictMs:
		optionalDoubleValues(s, b.predictMs, b.hasPredictMs)
	case schema.V3StepsStepMs:
		optionalDoubleValues(s, b.stepMs, b.hasStepMs)
	case schema.V3StepsObservationInfos:
		optionalBytesValues(s, b.obsInfos)
	}
	return s
}

func strValues(s []parquet.Value, src []string) {
	src = src[:len(s)]
	for i := range src {
		s[i] = parquet.ByteArrayValue(stringBytes(src[i]))
	}
}

func int64Values(s []parquet.Value, src []int64) {
	src = src[:len(s)]
	for i := range src {
		s[i] = parquet.Int64Value(src[i])
	}
}

// boolValues copies one of two values made before the loop: building
// parquet.BooleanValue(x) in the loop costs a store forwarding stall.
func boolValues(s []parquet.Value, src []bool) {
	vals := [2]parquet.Value{parquet.BooleanValue(false), parquet.BooleanValue(true)}
	src = src[:len(s)]
	for i := range src {
		s[i] = vals[b2i(src[i])]
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// optionalBytesValues fills s with the values of an optional top-level
// byte array column: null where src is nil.
func optionalBytesValues(s []parquet.Value, src [][]byte) {
	src = src[:len(s)]
	for i := range src {
		if src[i] == nil {
			s[i] = parquet.Value{}
			continue
		}
		s[i] = parquet.ByteArrayValue(src[i])
		s[i].SetDefinitionLevel(1)
	}
}

// optionalDoubleValues fills s with the values of an optional top-level
// double column: null where set is false.
func optionalDoubleValues(s []parquet.Value, src []float64, set []bool) {
	src, set = src[:len(s)], set[:len(s)]
	for i := range src {
		if !set[i] {
			s[i] = parquet.Value{}
			continue
		}
		s[i] = parquet.DoubleValue(src[i])
		s[i].SetDefinitionLevel(1)
	}
}

// appendTyped decodes typed column k (0-based over observation then action
// columns) of every pending row into s.
func (w *StepsWriter) appendTyped(s []parquet.Value, k int) []parquet.Value {
	c := w.f.typed[k]
	leaves := w.batch.leaves[k][:w.pending]
	var out []parquet.Value
	switch {
	case c.Form == schema.FormString || c.Form == schema.FormBinary:
		s, out = extend(s, len(leaves))
		optionalBytesValues(out, leaves)
	case c.Form == schema.FormScalar && c.Leaf.Kind == schema.KindDiscrete:
		s, out = extend(s, len(leaves))
		for i, b := range leaves {
			if b == nil {
				out[i] = parquet.Value{}
				continue
			}
			out[i] = parquet.Int64Value(decodeInt64(c.Leaf.DType, b))
			out[i].SetDefinitionLevel(1)
		}
	case c.Form == schema.FormList && c.Leaf.Numel == 0:
		// An empty list: defined (level 1) but with no element.
		s, out = extend(s, len(leaves))
		for i, b := range leaves {
			out[i] = parquet.Value{}
			if b != nil {
				out[i].SetDefinitionLevel(1)
			}
		}
	default:
		// Elements: a list's (rep 1, def 2) or a scalar's that is not
		// Discrete (rep 0, def 1).
		rep, def := 1, 2
		if c.Form == schema.FormScalar {
			rep, def = 0, 1
		}
		for _, b := range leaves {
			if b == nil {
				s = append(s, parquet.Value{})
				continue
			}
			s = appendElems(s, c, b, rep, def)
		}
	}
	return s
}

// extend returns s extended by n values, and those n.
func extend(s []parquet.Value, n int) (all, added []parquet.Value) {
	s = slices.Grow(s, n)
	s = s[:len(s)+n]
	return s, s[len(s)-n:]
}
