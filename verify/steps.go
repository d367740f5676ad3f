package verify

import (
	"bytes"
	"errors"
	"io"
	"math"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/schema"
)

// stepsSum is what the cross-file checks need of one steps file.
type stepsSum struct {
	rel string
	// ok is true when every row was read.
	ok                  bool
	rows                int64
	firstStep, lastStep int64
	isFirst, isLast     int
	// Flags of the last row.
	lastIsLast, lastTerminated, lastTruncated bool
	rewardSum                                 float64
	episodeID                                 string
	episodeIndex                              int64
	envIndex                                  int32
	obsSpace, actSpace                        string
}

// typedCol is a typed column with what reading it needs.
type typedCol struct {
	schema.TypedColumn
	leafIndex int
	maxDef    int
	unsigned  bool
}

// side is the observation or the action side of a steps file.
type side struct {
	name    string // "observation" or "action"
	layout  *schema.Layout
	cols    []typedCol
	blobCol int
}

func (c *fileCheck) checkSteps(pf *parquet.File) {
	obs, obsJS := c.space(pf, schema.MetaObservationSpace)
	act, actJS := c.space(pf, schema.MetaActionSpace)
	if (obsJS != "" && obs == nil) || (actJS != "" && act == nil) {
		return // reported; the columns cannot be checked without the spaces
	}
	table, err := stepsTable(pf, obs, act)
	if err != nil {
		c.add(CheckSchema, -1, fixForeign, "the stored spaces give no steps schema: %v", err)
		return
	}
	if !parquet.EqualNodes(pf.Schema(), table.Schema) {
		c.add(CheckSchema, -1, fixForeign, "the columns are not those of the steps table for the stored spaces")
		return
	}
	sides := [2]side{
		{name: "observation", layout: obs, cols: typedCols(pf, table.Observation), blobCol: schema.StepsColObservationBlob},
		{name: "action", layout: act, cols: typedCols(pf, table.Action), blobCol: schema.StepsColActionBlob},
	}
	sum := &stepsSum{rel: c.f.rel, obsSpace: obsJS, actSpace: actJS}
	numCols := len(pf.Schema().Columns())
	cols := make([][]parquet.Value, numCols)
	buf := make([]parquet.Row, 128)
	total := pf.NumRows()
	var row int64
	var leaves [2][][]byte
	var want, got []uint64
	for g, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				clear(cols)
				r.Range(func(ci int, vals []parquet.Value) bool {
					if ci < numCols {
						cols[ci] = vals
					}
					return true
				})
				c.stepRow(sum, row, total, cols)
				for s := range sides {
					leaves[s], want, got = c.stepSide(&sides[s], row, cols, leaves[s], want, got)
				}
				row++
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				c.add(CheckFile, row, fixDamaged, "cannot read row group %d: %v", g, err)
				c.rows += row
				return
			}
			if n == 0 {
				break
			}
		}
		rows.Close()
	}
	c.rows += row
	sum.rows = row
	sum.ok = row == total
	if !sum.ok {
		c.add(CheckFile, -1, fixDamaged, "read %d rows, the footer says %d", row, total)
	}
	c.steps = sum
}

// stepRow checks the fixed columns of one row.
func (c *fileCheck) stepRow(sum *stepsSum, row, total int64, cols [][]parquet.Value) {
	step := one(cols[schema.StepsColStep]).Int64()
	id := string(one(cols[schema.StepsColEpisodeID]).ByteArray())
	index := one(cols[schema.StepsColEpisodeIndex]).Int64()
	env := one(cols[schema.StepsColEnvIndex]).Int32()
	isFirst := one(cols[schema.StepsColIsFirst]).Boolean()
	isLast := one(cols[schema.StepsColIsLast]).Boolean()
	if row == 0 {
		sum.firstStep = step
		sum.episodeID, sum.episodeIndex, sum.envIndex = id, index, env
	} else {
		if step != sum.lastStep+1 {
			c.add(CheckSteps, row, fixDamaged, "step %d follows step %d: steps must be consecutive", step, sum.lastStep)
		}
		if id != sum.episodeID || index != sum.episodeIndex || env != sum.envIndex {
			c.add(CheckSteps, row, fixDamaged, "episode_id/episode_index/env_index %q/%d/%d differ from the first row's %q/%d/%d",
				id, index, env, sum.episodeID, sum.episodeIndex, sum.envIndex)
		}
	}
	sum.lastStep = step
	if isFirst {
		sum.isFirst++
		if step != 0 {
			c.add(CheckSteps, row, fixDamaged, "is_first is set on step %d; only step 0 is first", step)
		}
	} else if step == 0 {
		c.add(CheckSteps, row, fixDamaged, "step 0 does not have is_first set")
	}
	if isLast {
		sum.isLast++
		if row != total-1 {
			c.add(CheckSteps, row, fixDamaged, "is_last is set on a row that is not the file's last")
		}
	}
	sum.lastIsLast = isLast
	sum.lastTerminated = one(cols[schema.StepsColTerminated]).Boolean()
	sum.lastTruncated = one(cols[schema.StepsColTruncated]).Boolean()
	sum.rewardSum += one(cols[schema.StepsColReward]).Double()
}

// stepSide checks one side's blob and typed columns in one row.
func (c *fileCheck) stepSide(s *side, row int64, cols [][]parquet.Value, leaves [][]byte, want, got []uint64) ([][]byte, []uint64, []uint64) {
	bv := one(cols[s.blobCol])
	if bv.IsNull() {
		if s.blobCol == schema.StepsColActionBlob {
			c.add(CheckBlob, row, fixDamaged, "no action blob: every step has an action")
		}
		for i := range s.cols {
			if !isNull(cols[s.cols[i].Index]) {
				c.add(CheckTyped, row, fixDamaged, "column %s has a value but the %s blob is null", s.cols[i].Name, s.name)
			}
		}
		return leaves, want, got
	}
	if s.layout == nil {
		c.add(CheckMetadata, row, fixForeign, "the row has an %s blob but the file stores no %s space", s.name, s.name)
		return leaves, want, got
	}
	leaves, err := blob.DecodeInto(leaves[:0], bv.ByteArray())
	if err != nil {
		c.add(CheckBlob, row, fixDamaged, "%s blob does not decode: %v", s.name, err)
		return leaves, want, got
	}
	if !c.checkLeaves(row, s.name, s.layout, leaves) {
		return leaves, want, got
	}
	for i := range s.cols {
		tc := &s.cols[i]
		vals := cols[tc.Index]
		if isNull(vals) {
			c.add(CheckTyped, row, fixDamaged, "column %s is null but the %s blob holds its leaf", tc.Name, s.name)
			continue
		}
		lb := leaves[tc.leafIndex]
		switch tc.Form {
		case schema.FormBinary, schema.FormString:
			if len(vals) != 1 || !bytes.Equal(vals[0].ByteArray(), lb) {
				c.add(CheckTyped, row, fixDamaged, "column %s differs from the %s blob's leaf bytes", tc.Name, s.name)
			}
			continue
		}
		v, err := blob.DecodeLeaf(&tc.Leaf, lb)
		if err != nil {
			c.add(CheckBlob, row, fixDamaged, "%s blob leaf %s does not decode: %v", s.name, leafName(&tc.Leaf), err)
			continue
		}
		want = words(want[:0], v)
		got = got[:0]
		for _, x := range vals {
			if x.DefinitionLevel() == tc.maxDef {
				got = append(got, valueWord(x, tc.unsigned))
			}
		}
		if len(got) != len(want) {
			c.add(CheckTyped, row, fixDamaged, "column %s holds %d elements, the %s blob's leaf %d", tc.Name, len(got), s.name, len(want))
			continue
		}
		for k := range want {
			if got[k] != want[k] {
				c.add(CheckTyped, row, fixDamaged, "column %s element %d is %s, the %s blob says %s",
					tc.Name, k, formatWord(got[k], tc), s.name, formatWord(want[k], tc))
				break
			}
		}
	}
	return leaves, want, got
}

// stepsTable rebuilds the steps schema of a file from its spaces and the
// binary threshold it was written with, inferred from which fixed leaves
// the file stores as binary: the threshold lies between the largest
// stride stored typed and the smallest stored binary.
func stepsTable(pf *parquet.File, obs, act *schema.Layout) (*schema.StepsTable, error) {
	t, err := schema.StepsSchema(obs, act, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	minBin := int64(math.MaxInt64)
	for _, cols := range [][]schema.TypedColumn{t.Observation, t.Action} {
		for _, col := range cols {
			if !col.Leaf.Fixed() {
				continue
			}
			lc, ok := pf.Schema().Lookup(col.Name)
			if ok && lc.Node.Leaf() && lc.Node.Type().Kind() == parquet.ByteArray {
				minBin = min(minBin, col.Leaf.Stride)
			}
		}
	}
	if minBin == math.MaxInt64 {
		return t, nil
	}
	return schema.StepsSchema(obs, act, int(max(minBin-1, 1)))
}

func typedCols(pf *parquet.File, cols []schema.TypedColumn) []typedCol {
	out := make([]typedCol, len(cols))
	for i, col := range cols {
		tc := typedCol{TypedColumn: col, leafIndex: i, maxDef: 1, unsigned: !schema.IsSigned(col.Leaf.DType)}
		if col.Form == schema.FormList {
			if lc, ok := pf.Schema().Lookup(col.Name, "list", "element"); ok {
				tc.maxDef = lc.MaxDefinitionLevel
			}
		}
		out[i] = tc
	}
	return out
}

// one returns the single value of a required or optional scalar column
// (a null value when the column is missing from the row).
func one(vals []parquet.Value) parquet.Value {
	if len(vals) == 0 {
		return parquet.Value{}
	}
	return vals[0]
}

func isNull(vals []parquet.Value) bool {
	return len(vals) == 0 || (len(vals) == 1 && vals[0].DefinitionLevel() == 0)
}
