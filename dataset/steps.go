package dataset

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/schema"
)

// Step is one row of the steps table (its fixed columns). Slices and the
// struct itself are valid until the iterator's next Next or Close.
type Step struct {
	// EpisodeRecordID is the episode's record id: from the file's column
	// in a packed file (layout "session"), else from its partition.
	EpisodeRecordID string
	EpisodeID       string
	EpisodeIndex    int64
	EnvIndex        int32
	Step            int64
	SessionStep     int64
	// ObservationBlob is nil when the column is null (no observation was
	// seen before the action); a value with zero leaves is non-nil and
	// empty. ActionBlob likewise.
	ObservationBlob []byte
	ActionBlob      []byte
	Reward          float64
	IsFirst         bool
	IsLast          bool
	Terminated      bool
	Truncated       bool
	RecordedAt      time.Time

	// The columns of schema version 3 (null, that is nil or unset, in a
	// version 2 file): the route lane, the step's infos (JSON text), the
	// raw payloads (nil where equal to the transformed ones), and the
	// step's predict and env times.
	Lane                    int64
	HasLane                 bool
	Infos                   []byte
	RawObservationBlob      []byte
	RawActionBlob           []byte
	PredictMs, StepMs       float64
	HasPredictMs, HasStepMs bool
	// ObservationInfos: the infos of the row's observation (JSON text),
	// an episode's reset infos on its first row.
	ObservationInfos []byte
}

// fixed columns of the steps table, in file order, then the columns of
// schema version 3 (optional: a version 2 file has none of them).
var fixedColumns = append(schema.FixedStepsColumns(), schema.V3StepsColumns()...)

// numReadColumns is the number of columns a Steps reads: the fixed ones,
// then version 3's (from column index schema.NumFixedStepsColumns on).
const numReadColumns = schema.NumFixedStepsColumns + schema.NumV3StepsColumns

// Steps iterates steps rows in step order, scanner style:
//
//	for st.Next() { s := st.Step() ... }
//	if err := st.Err(); err != nil { ... }
//
// It reads the fixed columns of one row group at a time.
type Steps struct {
	paths []string
	next  int // index in paths of the next file to open

	f      *parquetFile
	cols   [numReadColumns]int // column index of each column read in f (-1: a version 3 column a version 2 file lacks)
	spaces Spaces
	rg     int // next row group of f
	// rows of the current row group, column by column
	vals [numReadColumns][]parquet.Value
	n, i int   // rows in the group, next row
	base int64 // file row of the group's first row
	row  int64 // file row of the current step
	step Step

	err error

	// only, when filter is set, keeps the rows of one episode of a
	// packed file, read from the Dataset's decoded row groups (groups):
	// rows [i, n) of the current group g are the episode's, and more says
	// that they reach the group's end, so the next group may hold more.
	// ridCol is the file's episode_record_id column (-1: none) and rids
	// its values in the current row group.
	only      string
	filter    bool
	groups    *groupCache
	inEpisode bool
	more      bool
	ridCol    int
	rids      []parquet.Value
	partRID   string // the episode of an episode partition

	obsLeaves, actLeaves [][]byte
}

// Steps returns an iterator over an episode's steps: across the part files
// of its partition (layout "episode"), or its rows of the packed file its
// episodes row names (layout "session"). An episode with no steps file is
// ErrNotFound.
func (d *Dataset) Steps(rec Recording, episodeRecordID string) (*Steps, error) {
	files := d.EpisodeFiles(rec, episodeRecordID)
	if len(files) == 0 {
		path, err := d.packedFileOf(rec, episodeRecordID)
		if err != nil {
			return nil, err
		}
		if path == "" {
			return nil, fmt.Errorf("%s episode %q: %w: no steps file in %s (an episode that recorded no step has none)",
				rec, episodeRecordID, ErrNotFound, d.root)
		}
		s := &Steps{paths: []string{path}, only: episodeRecordID, filter: true, groups: &d.groups}
		if err := s.openNext(); err != nil {
			return nil, err
		}
		return s, nil
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	if len(paths) > 1 {
		if err := sortByFirstStep(paths); err != nil {
			return nil, err
		}
	}
	s := &Steps{paths: paths, partRID: episodeRecordID}
	if err := s.openNext(); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenStepsFile returns an iterator over the rows of one steps file,
// decodable on its own: the spaces come from its metadata.
func OpenStepsFile(path string) (*Steps, error) {
	s := &Steps{paths: []string{path}}
	if err := s.openNext(); err != nil {
		return nil, err
	}
	return s, nil
}

// sortByFirstStep orders an episode's part files by the minimum of their
// step column (from the row group statistics; part order when absent).
func sortByFirstStep(paths []string) error {
	first := make(map[string]int64, len(paths))
	for _, p := range paths {
		f, err := openFile(p)
		if err != nil {
			return err
		}
		min := int64(-1)
		if leaf, ok := f.pf.Schema().Lookup(schema.ColStep); ok {
			for _, rg := range f.pf.Metadata().RowGroups {
				st := rg.Columns[leaf.ColumnIndex].MetaData.Statistics
				if len(st.MinValue) == 8 {
					v := int64(binary.LittleEndian.Uint64(st.MinValue))
					if min < 0 || v < min {
						min = v
					}
				}
			}
		}
		f.Close()
		first[p] = min
	}
	sort.SliceStable(paths, func(i, j int) bool { return first[paths[i]] < first[paths[j]] })
	return nil
}

// openNext closes the current file and opens the next one.
func (s *Steps) openNext() error {
	if s.f != nil {
		s.closeFile(s.f)
		s.f = nil
	}
	if s.next >= len(s.paths) {
		return io.EOF
	}
	path := s.paths[s.next]
	s.next++
	var f *parquetFile
	var err error
	if s.groups != nil {
		f, err = s.groups.open(path)
	} else {
		f, err = openFile(path)
	}
	if err != nil {
		return err
	}
	sch := f.pf.Schema()
	for i, c := range fixedColumns {
		kind := c.Node.Type().Kind()
		leaf, ok := sch.Lookup(c.Name)
		// A version 2 file has no version 3 column; a version 3 file
		// written before observation_infos joined the version lacks that
		// one (read as null).
		if !ok && i >= schema.NumFixedStepsColumns && (f.version == schema.SchemaVersion2 || i == schema.NumFixedStepsColumns+schema.V3StepsObservationInfos) {
			s.cols[i] = -1
			continue
		}
		if !ok || leaf.Node.Type().Kind() != kind {
			s.closeFile(f)
			return fileErr(path, -1, fmt.Errorf("%w: %s (want %v); not a steps file of this schema version", ErrColumn, c.Name, kind))
		}
		s.cols[i] = leaf.ColumnIndex
	}
	s.ridCol = -1
	if leaf, ok := sch.Lookup(schema.ColEpisodeRecordID); ok && leaf.Node.Type().Kind() == parquet.ByteArray {
		s.ridCol = leaf.ColumnIndex
	} else if s.filter {
		s.closeFile(f)
		return fileErr(path, -1, fmt.Errorf("%w: %s; an episodes row names this file as a packed steps file, which must have it", ErrColumn, schema.ColEpisodeRecordID))
	}
	if s.partRID == "" && s.ridCol < 0 {
		s.partRID, _ = f.pf.Lookup(schema.MetaEpisodeRecordID)
	}
	sp, err := f.spaces()
	if err != nil {
		s.closeFile(f)
		return err
	}
	s.f, s.spaces, s.rg, s.n, s.i, s.base = f, sp, 0, 0, 0, 0
	return nil
}

// Next advances to the next step. It returns false at the end or on an
// error (see Err).
func (s *Steps) Next() bool {
	if s.err != nil {
		return false
	}
	if s.filter {
		return s.nextInEpisode()
	}
	for s.i >= s.n {
		if s.f == nil {
			return false
		}
		if s.rg >= len(s.f.pf.RowGroups()) {
			if err := s.openNext(); err != nil {
				if err != io.EOF {
					s.err = err
				}
				return false
			}
			continue
		}
		if err := s.readGroup(); err != nil {
			s.err = err
			return false
		}
	}
	s.fill(s.i)
	s.row = s.base + int64(s.i)
	s.i++
	return true
}

// nextInEpisode is Next for one episode of a packed file: it moves
// through the row groups whose statistics may hold the episode, taking
// each from the Dataset's decoded groups, and ends after the episode's
// last row (an episode's rows are contiguous: rows of another episode
// after them end it).
func (s *Steps) nextInEpisode() bool {
	for s.i >= s.n {
		if s.f == nil {
			return false
		}
		if (s.inEpisode && !s.more) || s.rg >= len(s.f.pf.RowGroups()) {
			return s.endEpisode()
		}
		rg := s.rg
		s.rg++
		s.i, s.n, s.more = 0, 0, false
		if !s.mayHold(rg, s.only) {
			if s.inEpisode {
				return s.endEpisode()
			}
			continue
		}
		g, err := s.groups.get(s.f, rg, &s.cols, s.ridCol)
		if err != nil {
			s.err = err
			return false
		}
		sp, ok := g.spans[s.only]
		if !ok {
			if s.inEpisode {
				return s.endEpisode()
			}
			continue
		}
		s.vals, s.rids, s.base = g.vals, g.rids, g.base
		s.i, s.n, s.more = sp.start, sp.end, sp.end == g.rows
		s.inEpisode = true
	}
	s.fill(s.i)
	s.row = s.base + int64(s.i)
	s.i++
	return true
}

// endEpisode hands the file back at the end of the episode's rows, as
// the end of the last file does for an unfiltered iterator; it returns
// false, for Next.
func (s *Steps) endEpisode() bool {
	if err := s.closeFile(s.f); err != nil && s.err == nil {
		s.err = err
	}
	s.f = nil
	s.i, s.n = 0, 0
	return false
}

// readGroup reads the fixed columns of the next row group.
func (s *Steps) readGroup() error {
	groups := s.f.pf.RowGroups()
	rg := groups[s.rg]
	s.base += int64(s.n)
	s.rg++
	n := int(rg.NumRows())
	chunks := rg.ColumnChunks()
	if s.ridCol >= 0 {
		vals, err := readColumn(chunks[s.ridCol], s.rids[:0])
		if err != nil || len(vals) != n {
			return fileErr(s.f.path, s.base, fmt.Errorf("%w: column %s of row group %d: %v", ErrColumn, schema.ColEpisodeRecordID, s.rg-1, err))
		}
		s.rids = vals
	}
	for c := range numReadColumns {
		if s.cols[c] < 0 {
			s.vals[c] = s.vals[c][:0]
			continue
		}
		vals, err := readColumn(chunks[s.cols[c]], s.vals[c][:0])
		if err != nil {
			return fileErr(s.f.path, s.base, fmt.Errorf("read column %s of row group %d: %w", fixedColumns[c].Name, s.rg-1, err))
		}
		if len(vals) != n {
			return fileErr(s.f.path, s.base, fmt.Errorf("%w: column %s of row group %d has %d values for %d rows", ErrColumn, fixedColumns[c].Name, s.rg-1, len(vals), n))
		}
		s.vals[c] = vals
	}
	s.n, s.i = n, 0
	return nil
}

// readColumn appends the values of a flat column chunk to dst. Byte array
// values are copied out of the pages (one buffer per page), so they stay
// valid after the page is released.
func readColumn(cc parquet.ColumnChunk, dst []parquet.Value) ([]parquet.Value, error) {
	pages := cc.Pages()
	defer pages.Close()
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		start := len(dst)
		want := int(p.NumValues())
		dst = growValues(dst, want)
		r := p.Values()
		got := 0
		for got < want {
			k, err := r.ReadValues(dst[start+got : start+want])
			got += k
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return dst, err
			}
			if k == 0 {
				break
			}
		}
		dst = dst[:start+got]
		if p.Type().Kind() == parquet.ByteArray {
			copyByteArrays(dst[start:])
		}
		parquet.Release(p)
	}
}

func growValues(dst []parquet.Value, n int) []parquet.Value {
	if cap(dst)-len(dst) < n {
		grown := make([]parquet.Value, len(dst), len(dst)+n+len(dst)/2)
		copy(grown, dst)
		dst = grown
	}
	return dst[:len(dst)+n]
}

// copyByteArrays moves the bytes of vals into one new buffer.
func copyByteArrays(vals []parquet.Value) {
	total := 0
	for i := range vals {
		total += len(vals[i].ByteArray())
	}
	buf := make([]byte, 0, total)
	for i := range vals {
		v := &vals[i]
		if v.IsNull() {
			continue
		}
		b := v.ByteArray()
		off := len(buf)
		buf = append(buf, b...)
		nv := parquet.ByteArrayValue(buf[off:len(buf):len(buf)])
		*v = nv.Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
	}
}

var emptyBlob = []byte{}

func (s *Steps) fill(i int) {
	st := &s.step
	if s.ridCol >= 0 {
		if id := s.rids[i].ByteArray(); string(id) != st.EpisodeRecordID {
			st.EpisodeRecordID = string(id)
		}
	} else {
		st.EpisodeRecordID = s.partRID
	}
	if id := s.vals[schema.StepsColEpisodeID][i].ByteArray(); string(id) != st.EpisodeID {
		st.EpisodeID = string(id)
	}
	st.EpisodeIndex = s.vals[schema.StepsColEpisodeIndex][i].Int64()
	st.EnvIndex = s.vals[schema.StepsColEnvIndex][i].Int32()
	st.Step = s.vals[schema.StepsColStep][i].Int64()
	st.SessionStep = s.vals[schema.StepsColSessionStep][i].Int64()
	st.ObservationBlob = blobOf(s.vals[schema.StepsColObservationBlob][i])
	st.ActionBlob = blobOf(s.vals[schema.StepsColActionBlob][i])
	st.Reward = s.vals[schema.StepsColReward][i].Double()
	st.IsFirst = s.vals[schema.StepsColIsFirst][i].Boolean()
	st.IsLast = s.vals[schema.StepsColIsLast][i].Boolean()
	st.Terminated = s.vals[schema.StepsColTerminated][i].Boolean()
	st.Truncated = s.vals[schema.StepsColTruncated][i].Boolean()
	st.RecordedAt = time.UnixMicro(s.vals[schema.StepsColRecordedAt][i].Int64()).UTC()
	v3 := func(k int) parquet.Value {
		if col := s.vals[schema.NumFixedStepsColumns+k]; i < len(col) {
			return col[i]
		}
		return parquet.NullValue()
	}
	lane := v3(schema.V3StepsLane)
	st.Lane, st.HasLane = lane.Int64(), !lane.IsNull()
	st.Infos = blobOf(v3(schema.V3StepsInfos))
	st.RawObservationBlob = blobOf(v3(schema.V3StepsRawObservationBlob))
	st.RawActionBlob = blobOf(v3(schema.V3StepsRawActionBlob))
	p, m := v3(schema.V3StepsPredictMs), v3(schema.V3StepsStepMs)
	st.PredictMs, st.HasPredictMs = p.Double(), !p.IsNull()
	st.StepMs, st.HasStepMs = m.Double(), !m.IsNull()
	st.ObservationInfos = blobOf(v3(schema.V3StepsObservationInfos))
}

func blobOf(v parquet.Value) []byte {
	if v.IsNull() {
		return nil
	}
	if b := v.ByteArray(); b != nil {
		return b
	}
	return emptyBlob
}

// Step returns the current step; it is valid until the next Next or Close.
func (s *Steps) Step() *Step { return &s.step }

// Err returns the error that stopped Next, nil at a clean end.
func (s *Steps) Err() error { return s.err }

// Close releases the open file. It is safe to call more than once.
func (s *Steps) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.closeFile(s.f)
	s.f = nil
	s.next = len(s.paths)
	s.n, s.i = 0, 0
	return err
}

// closeFile closes f, or hands it back to the Dataset that shares it.
func (s *Steps) closeFile(f *parquetFile) error {
	if s.groups != nil {
		return s.groups.release(f)
	}
	return f.Close()
}

// Path returns the file the current step was read from, and Row its
// 0-based row in that file.
func (s *Steps) Path() string {
	if s.f == nil {
		if s.next > 0 && s.next <= len(s.paths) {
			return s.paths[s.next-1]
		}
		return ""
	}
	return s.f.path
}

// Row returns the 0-based row of the current step in its file.
func (s *Steps) Row() int64 { return s.row }

// Spaces returns the spaces of the current file (before the first Next,
// of the first file).
func (s *Steps) Spaces() Spaces { return s.spaces }

// Metadata returns a key-value metadata entry of the current file.
func (s *Steps) Metadata(key string) (string, bool) {
	if s.f == nil {
		return "", false
	}
	return s.f.pf.Lookup(key)
}

// ObservationLeaves decodes the current step's observation blob into its
// leaves (sub-slices of the blob, valid until the next Next); nil when the
// observation is null. The leaf count is checked against the space.
func (s *Steps) ObservationLeaves() ([][]byte, error) {
	var err error
	s.obsLeaves, err = s.leaves(s.obsLeaves, s.step.ObservationBlob, s.spaces.Observation, "observation")
	return s.obsLeaves, err
}

// ActionLeaves is ObservationLeaves for the action.
func (s *Steps) ActionLeaves() ([][]byte, error) {
	var err error
	s.actLeaves, err = s.leaves(s.actLeaves, s.step.ActionBlob, s.spaces.Action, "action")
	return s.actLeaves, err
}

func (s *Steps) leaves(dst [][]byte, b []byte, l *schema.Layout, side string) ([][]byte, error) {
	if b == nil {
		return nil, nil
	}
	leaves, err := blob.DecodeInto(dst[:0], b)
	if err != nil {
		return nil, s.rowErr(fmt.Errorf("%w: %s blob: %w", ErrSpace, side, err))
	}
	if l != nil && len(leaves) != len(l.Leaves) {
		return nil, s.rowErr(fmt.Errorf("%w: %s blob has %d leaves, its space %d", ErrSpace, side, len(leaves), len(l.Leaves)))
	}
	return leaves, nil
}

func (s *Steps) rowErr(err error) error { return fileErr(s.Path(), s.row, err) }

// AppendObservationJSON appends the current observation as JSON (see
// blob.AppendJSON), or null when it is null.
func (s *Steps) AppendObservationJSON(dst []byte) ([]byte, error) {
	leaves, err := s.ObservationLeaves()
	if err != nil {
		return dst, err
	}
	return s.appendJSON(dst, leaves, s.step.ObservationBlob == nil, s.spaces.Observation, "observation")
}

// AppendActionJSON appends the current action as JSON, or null.
func (s *Steps) AppendActionJSON(dst []byte) ([]byte, error) {
	leaves, err := s.ActionLeaves()
	if err != nil {
		return dst, err
	}
	return s.appendJSON(dst, leaves, s.step.ActionBlob == nil, s.spaces.Action, "action")
}

func (s *Steps) appendJSON(dst []byte, leaves [][]byte, null bool, l *schema.Layout, side string) ([]byte, error) {
	if null {
		return append(dst, "null"...), nil
	}
	if l == nil {
		return dst, s.rowErr(fmt.Errorf("%w for the %s", ErrNoSpace, side))
	}
	out, err := blob.AppendJSON(dst, l, leaves)
	if err != nil {
		return dst, s.rowErr(fmt.Errorf("%w: %s: %w", ErrSpace, side, err))
	}
	return out, nil
}

// ObservationValues decodes the current observation into one Go value per
// leaf, in the layout's leaf order (see blob.DecodeLeaf); nil when null.
func (s *Steps) ObservationValues() ([]any, error) {
	leaves, err := s.ObservationLeaves()
	if err != nil || leaves == nil {
		return nil, err
	}
	return s.values(leaves, s.spaces.Observation, "observation")
}

// ActionValues is ObservationValues for the action.
func (s *Steps) ActionValues() ([]any, error) {
	leaves, err := s.ActionLeaves()
	if err != nil || leaves == nil {
		return nil, err
	}
	return s.values(leaves, s.spaces.Action, "action")
}

func (s *Steps) values(leaves [][]byte, l *schema.Layout, side string) ([]any, error) {
	if l == nil {
		return nil, s.rowErr(fmt.Errorf("%w for the %s", ErrNoSpace, side))
	}
	out := make([]any, len(leaves))
	for i := range leaves {
		v, err := blob.DecodeLeaf(&l.Leaves[i], leaves[i])
		if err != nil {
			return nil, s.rowErr(fmt.Errorf("%w: %s leaf %q: %w", ErrSpace, side, l.Leaves[i].Path, err))
		}
		out[i] = v
	}
	return out, nil
}

// mayHold reports whether row group rg's episode_record_id column may
// hold rid, by its statistics in the footer (true when it has none).
func (s *Steps) mayHold(rg int, rid string) bool {
	groups := s.f.pf.Metadata().RowGroups
	if rg >= len(groups) || s.ridCol >= len(groups[rg].Columns) {
		return true
	}
	st := groups[rg].Columns[s.ridCol].MetaData.Statistics
	lo, hi := st.MinValue, st.MaxValue
	if lo == nil || hi == nil {
		return true
	}
	return string(lo) <= rid && rid <= string(hi)
}
