package parquetout

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// StepRow is one row of the steps table, as the recorder hands it over.
// Write copies what it keeps: the caller may reuse every slice of the row
// once Write returns.
type StepRow struct {
	// EpisodeRecordID is written to packed files only (layout "session",
	// NewPackedStepsFormat); elsewhere it is in the partition path.
	EpisodeRecordID string
	EpisodeID       string
	EpisodeIndex    int64
	EnvIndex        int32
	Step            int64
	SessionStep     int64
	// ObservationBlob and ActionBlob are the lane's values in blob form;
	// nil writes null.
	ObservationBlob []byte
	ActionBlob      []byte
	Reward          float64
	IsFirst         bool
	IsLast          bool
	Terminated      bool
	Truncated       bool
	RecordedAt      time.Time
	// ObservationLeaves and ActionLeaves are the same values as per-leaf
	// bytes (single-lane form), one per leaf of the space, from which the
	// typed columns are decoded. nil writes null to that side's typed
	// columns.
	ObservationLeaves [][]byte
	ActionLeaves      [][]byte

	// The columns of schema version 3 (schema/version3.go): Lane is
	// written when HasLane, PredictMs and StepMs when their Has flag is
	// set, else null; Infos and ObservationInfos (JSON text) and the raw
	// blobs are null when nil.
	Lane                    int64
	HasLane                 bool
	Infos                   []byte
	RawObservationBlob      []byte
	RawActionBlob           []byte
	PredictMs, StepMs       float64
	HasPredictMs, HasStepMs bool
	ObservationInfos        []byte
}

// StepsFormat is the steps file format for one pair of spaces: the schema,
// the metadata and the writer settings, computed once and shared by every
// steps file of those spaces. It is immutable and safe for concurrent use.
type StepsFormat struct {
	table     *schema.StepsTable
	fixed     int                   // the number of fixed columns: the typed ones follow
	v3        int                   // the index of the first version 3 column (after the typed ones)
	typed     []*schema.TypedColumn // observation then action columns
	hasObs    bool                  // a side without a layout ignores its leaves
	hasAct    bool
	cfg       Config
	spaces    spaceJSON
	blobPaths [][]string
	// opts are the parquet-go options of every file of the format but
	// its session and episode record ids, set per file.
	opts []parquet.WriterOption
	pool sync.Pool // of *stepsBuffers
}

// NewStepsFormat returns the steps format for the given observation and
// action layouts. A nil layout gives that side no typed columns and no
// space in the metadata, and StepsWriter.Write then ignores its leaves.
func NewStepsFormat(obs, act *schema.Layout, cfg Config) (*StepsFormat, error) {
	return newStepsFormat(obs, act, cfg, false)
}

// NewPackedStepsFormat is NewStepsFormat for the packed steps files of
// layout "session" (schema.PackedStepsSchema): every row also carries its
// StepRow.EpisodeRecordID. A writer of many episodes ends each with
// EndEpisode, so that no row group straddles two.
func NewPackedStepsFormat(obs, act *schema.Layout, cfg Config) (*StepsFormat, error) {
	return newStepsFormat(obs, act, cfg, true)
}

func newStepsFormat(obs, act *schema.Layout, cfg Config, packed bool) (*StepsFormat, error) {
	cfg = cfg.withDefaults()
	if _, err := codecFor(cfg.Compression); err != nil {
		return nil, err
	}
	var table *schema.StepsTable
	var err error
	if packed {
		table, err = schema.PackedStepsSchema(obs, act, cfg.BinaryThreshold)
	} else {
		table, err = schema.StepsSchema(obs, act, cfg.BinaryThreshold)
	}
	if err != nil {
		return nil, err
	}
	f := &StepsFormat{table: table, cfg: cfg, hasObs: obs != nil, hasAct: act != nil, fixed: schema.NumFixedStepsColumns, v3: table.V3Index}
	if packed {
		f.fixed++
	}
	if f.spaces, err = newSpaceJSON(layoutSpec(obs), layoutSpec(act)); err != nil {
		return nil, err
	}
	for i := range table.Observation {
		f.typed = append(f.typed, &table.Observation[i])
	}
	for i := range table.Action {
		f.typed = append(f.typed, &table.Action[i])
	}
	f.blobPaths = [][]string{{schema.ColObservationBlob}, {schema.ColActionBlob},
		{schema.ColRawObservationBlob}, {schema.ColRawActionBlob}}
	for _, cols := range [][]schema.TypedColumn{table.Observation, table.Action} {
		for _, c := range cols {
			if c.Form == schema.FormBinary {
				f.blobPaths = append(f.blobPaths, []string{c.Name})
			}
		}
	}
	opts, err := cfg.writerOptions(f.blobPaths, nil)
	if err != nil {
		return nil, err
	}
	f.opts = append(opts, table.Schema)
	return f, nil
}

func layoutSpec(l *schema.Layout) *spacesv1.SpaceSpec {
	if l == nil {
		return nil
	}
	return l.Spec
}

// Table returns the steps schema of the format.
func (f *StepsFormat) Table() *schema.StepsTable { return f.table }

// arenaSize is the byte budget of a batch of rows buffered before they are
// handed to parquet-go; batchRows bounds the rows of a batch. parquet-go
// checks page sizes once per batch, so these also bound page overshoot.
const (
	arenaStart = 64 << 10
	arenaSize  = 1 << 20
	batchRows  = 256
	// directRowBytes is the size from which a row is not copied but
	// written through at once.
	directRowBytes = 16 << 10
)

// StepsWriter encodes one steps file to an io.Writer (NewEncoder). It is
// not safe for concurrent use.
type StepsWriter struct {
	f    *StepsFormat
	part *target
	stepsBuffers
	pending int
	direct  bool // the row being written references the caller's buffers

	groupRows  int64
	groupBytes int64
	maxGroup   int64 // the row group bytes bound: Config.RowGroupBytes or SetRowGroupBytes
	// episodes: row groups end only at EndEpisode (SetEpisodeBoundaries).
	episodes bool
	rows     int64
	err      error // sticky: set once parquet-go or the file failed
	done     bool
}

// NewEncoder starts a steps file written to out, with the given metadata
// (its spaces are the format's); name is what errors call the file (a
// part's temp path). The encoder writes the whole file, footer included,
// to out by Close, and knows nothing of where out goes (see
// internal/store for part files).
func (f *StepsFormat) NewEncoder(out io.Writer, name string, meta Metadata) *StepsWriter {
	w := &StepsWriter{f: f, part: &target{name: name}, maxGroup: f.cfg.RowGroupBytes}
	if st, ok := f.pool.Get().(*stepsBuffers); ok {
		w.stepsBuffers = *st
	} else {
		w.arena = make([]byte, 0, arenaStart)
	}
	// A new parquet-go writer for every file: see getWriteBuffer.
	w.out = getWriteBuffer(out, f.cfg.WriteBufferSize)
	w.pw = parquet.NewGenericWriter[any](w.out, f.opts...)
	for _, e := range keyValues(schema.TableSteps, meta, f.spaces) {
		w.pw.SetKeyValueMetadata(e.key, e.value)
	}
	return w
}

// target is what an encoder knows of the file it writes: the name errors
// give it.
type target struct{ name string }

// TempPath returns the name errors give the file.
func (t *target) TempPath() string { return t.name }

// stepsBuffers is what a StepsWriter allocates and its StepsFormat
// recycles across files: the batch buffers. The parquet-go writer is the
// file's own, and its write buffer comes from getWriteBuffer.
type stepsBuffers struct {
	pw      *parquet.GenericWriter[any] // rows go in column by column (ColumnWriters), never as Go values
	out     *bufio.Writer               // the file's write buffer, in front of the part
	batch   pendingRows                 // rows not yet handed to parquet-go, column by column
	arena   []byte                      // copies of the bytes those rows reference
	scratch []parquet.Value             // one column of the batch
}

// Rows returns the number of rows written so far.
func (w *StepsWriter) Rows() int64 { return w.rows }

// Write appends one row. A row whose leaves do not fit the spaces is
// rejected with an error wrapping ErrLeafCount, ErrLeafSize or ErrLeafText
// and nothing of it is written; the writer stays usable. Any other error is
// final: Commit will fail, call Abort.
func (w *StepsWriter) Write(r *StepRow) error {
	if w.done {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	t := w.f.table
	obsLeaves, actLeaves := r.ObservationLeaves, r.ActionLeaves
	if !w.f.hasObs {
		obsLeaves = nil
	}
	if !w.f.hasAct {
		actLeaves = nil
	}
	copyBytes, err := checkLeaves(t.Observation, obsLeaves, schema.ColObservation)
	if err != nil {
		return err
	}
	n, err := checkLeaves(t.Action, actLeaves, schema.ColAction)
	if err != nil {
		return err
	}
	copyBytes += n + len(r.ObservationBlob) + len(r.ActionBlob) + len(r.Infos) + len(r.ObservationInfos) + len(r.RawObservationBlob) + len(r.RawActionBlob)
	// A large row (images) goes to parquet-go on its own, straight from the
	// caller's buffers: parquet-go copies it into its column buffers
	// anyway, and a copy into the arena first would double the memory
	// traffic.
	w.direct = copyBytes >= directRowBytes
	if w.direct || len(w.arena)+copyBytes > cap(w.arena) {
		if err := w.writePending(); err != nil {
			return err
		}
		if !w.direct && (copyBytes > cap(w.arena) || cap(w.arena) < arenaSize) {
			w.arena = make([]byte, 0, max(copyBytes, min(2*cap(w.arena), arenaSize)))
		}
	}

	w.add(r, obsLeaves, actLeaves)
	w.pending++
	w.rows++
	w.groupRows++
	w.groupBytes += int64(fixedRowBytes + copyBytes)
	switch {
	case !w.episodes && w.full():
		return w.Flush()
	case w.direct || w.pending >= batchRows:
		return w.writePending()
	}
	return nil
}

// full reports whether the current row group reached its bounds.
func (w *StepsWriter) full() bool {
	return w.groupRows >= w.f.cfg.RowGroupRows || w.groupBytes >= w.maxGroup
}

// SetEpisodeBoundaries makes row groups end only at EndEpisode (once they
// reach their bounds), so that a file of many episodes has no row group
// that straddles two: a reader of one episode then reads only its row
// groups. A row group may then exceed the bounds by one episode.
func (w *StepsWriter) SetEpisodeBoundaries(on bool) { w.episodes = on }

// EndEpisode marks the end of an episode's rows: under
// SetEpisodeBoundaries, the row group ends here if it reached its bounds.
func (w *StepsWriter) EndEpisode() error {
	if w.episodes && w.full() {
		return w.Flush()
	}
	return nil
}

// fixedRowBytes estimates the buffered size of a row's fixed columns.
const fixedRowBytes = 64

// checkLeaves validates one side's leaves against its columns and returns
// their total size (a row keeps copies of them until its batch is written).
func checkLeaves(cols []schema.TypedColumn, leaves [][]byte, side string) (int, error) {
	if leaves == nil {
		return 0, nil
	}
	if len(leaves) != len(cols) {
		return 0, fmt.Errorf("%w: %s has %d leaves, its space has %d", ErrLeafCount, side, len(leaves), len(cols))
	}
	n := 0
	for i := range cols {
		c := &cols[i]
		b := leaves[i]
		switch {
		case c.Leaf.Kind == schema.KindText:
			if !utf8.Valid(b) {
				return 0, fmt.Errorf("%w: column %s", ErrLeafText, c.Name)
			}
		case int64(len(b)) != c.Leaf.Stride:
			return 0, fmt.Errorf("%w: column %s has %d bytes, want %d", ErrLeafSize, c.Name, len(b), c.Leaf.Stride)
		}
		n += len(b)
	}
	return n, nil
}

// keepOptional copies b into the arena; nil stays nil (null).
func (w *StepsWriter) keepOptional(b []byte) []byte {
	if b == nil {
		return nil
	}
	return w.keep(b)
}

// keep copies b into the arena, returning a non-nil slice also for an
// empty b; the caller made sure it fits. For a direct row it returns b
// itself.
func (w *StepsWriter) keep(b []byte) []byte {
	if w.direct {
		if b == nil {
			return noBytes
		}
		return b
	}
	start := len(w.arena)
	w.arena = append(w.arena, b...)
	return w.arena[start:len(w.arena):len(w.arena)]
}

// noBytes is an empty leaf, which unlike nil does not mean null.
var noBytes = []byte{}

func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// SetRowGroupBytes changes the bound on the payload bytes of this
// writer's row groups (Config.RowGroupBytes) from the next row on; n <= 0
// restores the format's bound. A caller that keeps many files open at once
// uses it to share one memory budget among them.
func (w *StepsWriter) SetRowGroupBytes(n int64) {
	if n <= 0 {
		n = w.f.cfg.RowGroupBytes
	}
	w.maxGroup = n
}

// Flush ends the current row group: it encodes and writes the buffered
// rows to the temp file. Write calls it when a row group reaches its bounds.
func (w *StepsWriter) Flush() error {
	if w.done {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := w.writePending(); err != nil {
		return err
	}
	if w.groupRows == 0 {
		return nil
	}
	if err := w.pw.Flush(); err != nil {
		w.err = fmt.Errorf("parquetout: flush row group to %s: %w", w.part.TempPath(), err)
		return w.err
	}
	w.groupRows, w.groupBytes = 0, 0
	return nil
}

// Close writes the buffered rows and the footer: the file is complete in
// the writer NewEncoder was given. After an error, call Abort.
func (w *StepsWriter) Close() error { return w.close() }

// close writes the buffered rows and the footer.
func (w *StepsWriter) close() error {
	if w.done {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := w.writePending(); err != nil {
		return err
	}
	if err := w.pw.Close(); err != nil {
		w.err = fmt.Errorf("parquetout: finish %s: %w", w.part.TempPath(), err)
		return w.err
	}
	if err := w.out.Flush(); err != nil {
		w.err = fmt.Errorf("parquetout: finish %s: %w", w.part.TempPath(), err)
		return w.err
	}
	w.done = true
	w.recycle()
	return nil
}

// Abort drops the encoder, after an error or to discard the file; what
// it wrote stays in its writer (the caller discards it: store.Part.Abort).
// It is a no-op after Close.
func (w *StepsWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.release()
}

func (w *StepsWriter) release() {
	w.stepsBuffers = stepsBuffers{}
}

// recycle hands the writer's buffers back to its format after a clean
// Commit (a writer that failed or was aborted mid-file is dropped instead).
func (w *StepsWriter) recycle() {
	clear(w.scratch)
	putWriteBuffer(w.out)
	st := &stepsBuffers{batch: w.batch, arena: w.arena[:0], scratch: w.scratch[:0]}
	w.f.pool.Put(st)
	w.release()
}
