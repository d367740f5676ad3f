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

// stepsSum is what the cross-file checks need of one episode's rows in
// one steps file: the whole file in layout "episode", one run of rows with
// the same episode_record_id in layout "session".
type stepsSum struct {
	rel string
	// erid is the episode record id: the file's (its metadata's) in
	// layout "episode", the rows' in layout "session".
	erid string
	// row0 is the file row the episode's rows start at.
	row0                int64
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

// stepsColumns is where a steps file holds the table's columns.
type stepsColumns struct {
	// leaf maps each leaf column of the steps table (schema.StepsColStep,
	// ..., TypedColumn.Index) to the file's leaf column.
	leaf []int
	// erid is the file's leaf column of episode_record_id (layout
	// "session"), or -1.
	erid int
}

// matchSteps matches a file's columns to the steps table's: the same
// columns in the same order and, when session is set, one more string
// column episode_record_id, the layout "session" one, anywhere among them.
func matchSteps(file, table parquet.Node, session bool) (stepsColumns, bool) {
	m := stepsColumns{erid: -1}
	want := table.Fields()
	j, leaf := 0, 0
	for _, f := range file.Fields() {
		if session && m.erid < 0 && f.Name() == schema.ColEpisodeRecordID {
			if !f.Leaf() || f.Repeated() || f.Type().Kind() != parquet.ByteArray {
				return m, false
			}
			m.erid = leaf
			leaf++
			continue
		}
		if j >= len(want) || f.Name() != want[j].Name() || !parquet.EqualNodes(f, want[j]) {
			return m, false
		}
		for range numLeaves(f) {
			m.leaf = append(m.leaf, leaf)
			leaf++
		}
		j++
	}
	return m, j == len(want) && (!session || m.erid >= 0)
}

func numLeaves(n parquet.Node) int {
	if n.Leaf() {
		return 1
	}
	k := 0
	for _, f := range n.Fields() {
		k += numLeaves(f)
	}
	return k
}

// stepsFile is the state of reading one steps file.
type stepsFile struct {
	c    *fileCheck
	m    stepsColumns
	cols [][]parquet.Value // the current row, by file leaf column
	// runs are the episodes' rows in file order; seen names their
	// episode record ids (layout "session").
	runs     []*stepsSum
	seen     map[string]bool
	obs, act string
}

// get returns the value of the table's fixed column i in the current row.
func (s *stepsFile) get(i int) parquet.Value { return one(s.cols[s.m.leaf[i]]) }

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
	session := !c.f.Episode
	m, ok := matchSteps(pf.Schema(), table.Schema, session)
	if !ok {
		if session {
			c.add(CheckSchema, -1, fixForeign, "the columns are not those of the steps table for the stored spaces with the %s column of layout %q", schema.ColEpisodeRecordID, "session")
		} else {
			c.add(CheckSchema, -1, fixForeign, "the columns are not those of the steps table for the stored spaces")
		}
		return
	}
	sides := [2]side{
		{name: "observation", layout: obs, cols: typedCols(pf, table.Observation, m), blobCol: m.leaf[schema.StepsColObservationBlob]},
		{name: "action", layout: act, cols: typedCols(pf, table.Action, m), blobCol: m.leaf[schema.StepsColActionBlob]},
	}
	numCols := len(pf.Schema().Columns())
	sf := &stepsFile{c: c, m: m, cols: make([][]parquet.Value, numCols), obs: obsJS, act: actJS}
	if session {
		sf.seen = map[string]bool{}
	}
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
				clear(sf.cols)
				r.Range(func(ci int, vals []parquet.Value) bool {
					if ci < numCols {
						sf.cols[ci] = vals
					}
					return true
				})
				sf.row(row)
				for s := range sides {
					leaves[s], want, got = c.stepSide(&sides[s], row, sf.cols, leaves[s], want, got)
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
	if row != total {
		c.add(CheckFile, -1, fixDamaged, "read %d rows, the footer says %d", row, total)
		return
	}
	c.sum.steps, c.sum.read = sf.runs, true
}

// row checks the fixed columns of one row and adds it to its episode's
// run.
func (s *stepsFile) row(row int64) {
	c := s.c
	erid := c.sum.meta.EpisodeRecordID
	if s.m.erid >= 0 {
		v := one(s.cols[s.m.erid])
		if v.IsNull() {
			c.add(CheckSteps, row, fixDamaged, "%s is null: every row names its episode", schema.ColEpisodeRecordID)
		}
		erid = string(v.ByteArray())
	}
	sum := s.current()
	if sum == nil || sum.erid != erid {
		if s.seen != nil {
			if s.seen[erid] {
				c.add(CheckSteps, row, fixDamaged, "the rows of %s %s are not contiguous: an episode's rows are contiguous in one file", schema.ColEpisodeRecordID, quote(erid))
			}
			s.seen[erid] = true
		}
		sum = &stepsSum{rel: c.f.Rel, erid: erid, row0: row, obsSpace: s.obs, actSpace: s.act}
		s.runs = append(s.runs, sum)
	}
	step := s.get(schema.StepsColStep).Int64()
	id := string(s.get(schema.StepsColEpisodeID).ByteArray())
	index := s.get(schema.StepsColEpisodeIndex).Int64()
	env := s.get(schema.StepsColEnvIndex).Int32()
	isFirst := s.get(schema.StepsColIsFirst).Boolean()
	isLast := s.get(schema.StepsColIsLast).Boolean()
	if sum.rows == 0 {
		sum.firstStep = step
		sum.episodeID, sum.episodeIndex, sum.envIndex = id, index, env
	} else {
		if step != sum.lastStep+1 {
			c.add(CheckSteps, row, fixDamaged, "step %d follows step %d: steps must be consecutive", step, sum.lastStep)
		}
		if id != sum.episodeID || index != sum.episodeIndex || env != sum.envIndex {
			c.add(CheckSteps, row, fixDamaged, "episode_id/episode_index/env_index %q/%d/%d differ from the episode's first row's %q/%d/%d",
				id, index, env, sum.episodeID, sum.episodeIndex, sum.envIndex)
		}
		if sum.lastIsLast {
			c.add(CheckSteps, row-1, fixDamaged, "is_last is set on a row that is not the episode's last")
		}
	}
	sum.rows++
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
	}
	sum.lastIsLast = isLast
	sum.lastTerminated = s.get(schema.StepsColTerminated).Boolean()
	sum.lastTruncated = s.get(schema.StepsColTruncated).Boolean()
	sum.rewardSum += s.get(schema.StepsColReward).Double()
}

// current is the run the last row went to, or nil.
func (s *stepsFile) current() *stepsSum {
	if len(s.runs) == 0 {
		return nil
	}
	return s.runs[len(s.runs)-1]
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
	version, _ := pf.Lookup(schema.MetaSchemaVersion)
	packed := false // packed files are told apart by their episode_record_id column where it matters
	t, err := schema.StepsSchemaOf(version, obs, act, math.MaxInt32, packed)
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
	return schema.StepsSchemaOf(version, obs, act, int(max(minBin-1, 1)), packed)
}

// typedCols returns the typed columns of one side, with their leaf
// column in the file (m).
func typedCols(pf *parquet.File, cols []schema.TypedColumn, m stepsColumns) []typedCol {
	out := make([]typedCol, len(cols))
	for i, col := range cols {
		tc := typedCol{TypedColumn: col, leafIndex: i, maxDef: 1, unsigned: !schema.IsSigned(col.Leaf.DType)}
		tc.Index = m.leaf[col.Index]
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
