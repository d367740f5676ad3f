package recorder

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/serial"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
	"golang.org/x/sync/semaphore"
)

// The writer's state, under every file of the writer stage: the writer,
// the batches and open steps files its files share, the phase it runs in,
// the writes in flight (live), part numbers and the Parquet formats.
// writer.go starts and stops it; episodewrite.go and sessionwrite.go take
// what the assembly hands over, batch.go groups it, and episodefile.go
// and sessionfile.go write the files.

// writer is the assembler's output: it writes finished episodes and
// sessions as Parquet part files on a pool of goroutines and hands the
// finished (not yet durable) files to its committer, which makes groups of
// them durable at once, then appends their markers to the log and releases
// their log positions for reclaiming.
//
// Part numbers: each new part file takes the next number free in its
// partition (store.Next): the steps file of a new episode partition
// (layout episode) is part 0; the episodes rows of a batch, a packed
// steps file and each write of a recording's sessions, logs and telemetry
// files take the next number of their recording's partition. A published
// file is never replaced (publishing refuses an existing name): recovery
// publishes the temps whose markers reached the log, removes the others,
// and writes their rows again under new numbers (commit.go).
type writer struct {
	// own lists the recordings ROOT held nothing of when this writer
	// first saw them (admit).
	own ownRecordings
	// fatal is the recorder's failure, which the writer sets (fail) and
	// reads; layoutFile is the ROOT's layout file, written with the first
	// file published.
	fatal      *fatal
	layoutFile *store.LayoutFile
	fs         vfs.FS
	root       string
	// st holds the part files: the writer asks it for a part of a
	// partition and hands the part's writer to an encoder.
	st   store.Root
	cfg  parquetout.Config
	log  *slog.Logger
	pool *serial.Pool
	com  *committer

	// rows bounds the bytes of episode rows handed to the pool and not yet
	// written: the pipeline waits for room (and hooks, in turn, for the
	// pipeline), so a writer slower than the driver holds no more than
	// rowsMax of rows in its queues.
	rows    *semaphore.Weighted
	rowsMax int64

	// phase says what the writer writes for (phase.go): recovery or a
	// live recorder.
	phase atomic.Pointer[phaseOf]

	// files shares a sixteenth of the budget among the open steps files.
	files *parquetout.FileShare

	// layout is the ROOT's steps layout.
	layout hive.Layout
	// batchDelay bounds how long a finished episode's row waits in its
	// recording's batch (batch.go).
	batchDelay time.Duration
	// closing is set once stop begins: a delayed flush no longer submits.
	closing atomic.Bool

	mu      sync.Mutex
	formats map[formatKey]*parquetout.StepsFormat
	// batches holds each recording's pending writes; parts the next part
	// number of each partition written so far (by its path).
	batches map[hive.Recording]*batch
	parts   map[string]int
	// open holds the steps files of the episodes streaming their rows;
	// only the assembly goroutine touches it.
	open map[episodeKey]*episodeFile
	// live maps each write in flight (an episode or a session write) to
	// the first log position it was built from and the order in which it
	// was handed over (liveSeq counts them).
	live     map[any]liveWrite
	liveSeq  uint64
	firstErr error
	// failed holds the failed recordings (failure.go) by recKey; failedN
	// counts them, so that a write looks the map up only when there are
	// any.
	failed     map[string]*recFailure
	failedN    atomic.Int32
	completed  int
	incomplete int
	skipped    int
}

// phaseOf boxes a phase for the atomic pointer.
type phaseOf struct{ phase }

// setPhase makes p the writer's phase. Recovery and Open set it while no
// write is in flight.
func (w *writer) setPhase(p phase) { w.phase.Store(&phaseOf{p}) }

// now returns the writer's phase.
func (w *writer) now() phase { return w.phase.Load().phase }

// fail records an error that fails the whole recorder (failure.go says
// which). The data stays in the log, so the next Open recovers it; the
// recorder stops accepting events meanwhile.
func (w *writer) fail(err error) {
	w.fatal.set(err)
	w.mu.Lock()
	if w.firstErr == nil {
		// The recorder's: it wraps ErrFailed.
		w.firstErr = w.fatal.get()
	}
	w.mu.Unlock()
}

func (w *writer) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// submitIfRunning submits job unless the writer is stopping; it reports
// whether it did.
func (w *writer) submitIfRunning(q *serial.Queue, job func()) bool {
	if w.closing.Load() {
		return false
	}
	w.pool.Submit(q, job)
	return true
}

func (w *writer) counts() (completed, incomplete, skipped int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.completed, w.incomplete, w.skipped
}

// formatKey names a steps format: the spaces and the page class.
type formatKey struct {
	obs, act *schema.Layout
	class    int
}

func (w *writer) format(obs, act *schema.Layout, class int) (*parquetout.StepsFormat, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := formatKey{obs, act, class}
	if f := w.formats[key]; f != nil {
		return f, nil
	}
	newFormat := parquetout.NewStepsFormat
	cfg := parquetout.PageClassConfig(w.cfg, class)
	if w.layout == hive.LayoutSession {
		newFormat = parquetout.NewPackedStepsFormat
		// A reader of one episode reads its row groups whole: they are
		// kept to packedGroupRows rows (plus the episode that crosses the
		// bound), so that reading an episode of a packed file costs about
		// that, not the file.
		if cfg.RowGroupRows <= 0 || cfg.RowGroupRows > packedGroupRows {
			cfg.RowGroupRows = packedGroupRows
		}
	}
	f, err := newFormat(obs, act, cfg)
	if err != nil {
		return nil, err
	}
	w.formats[key] = f
	return f, nil
}

// liveWrite is a write in flight: the first log position it was built
// from, and its number in the order finished writes were handed over (0
// while it is an open episode's streamed rows).
type liveWrite struct {
	pos, seq uint64
}

// addLive notes a write in flight that needs the log from pos; w.mu must
// not be held. A finished write (a completed episode's files, a session
// write) is numbered in the order writes are handed over; the rows an
// open episode streams to its steps file are not (see finishLive).
func (w *writer) addLive(key any, pos uint64, finished bool) {
	w.mu.Lock()
	l := liveWrite{pos: pos}
	if finished {
		w.liveSeq++
		l.seq = w.liveSeq
	}
	w.live[key] = l
	w.mu.Unlock()
}

// finishLive numbers the write of key, in flight since its episode began
// streaming, as a finished write handed over now.
func (w *writer) finishLive(key any) {
	w.mu.Lock()
	w.liveSeq++
	l := w.live[key]
	l.seq = w.liveSeq
	w.live[key] = l
	w.mu.Unlock()
}

// minLive returns the first log position an unfinished episode being
// written still needs, or 0 if none.
func (w *writer) minLive() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var m uint64
	for _, l := range w.live {
		if m == 0 || l.pos < m {
			m = l.pos
		}
	}
	return m
}

// handedOver returns the number of writes handed over so far.
func (w *writer) handedOver() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.liveSeq
}

// finishedUpTo reports whether every write among the first seq finished
// writes handed over is durable. (A failed write stays in flight: it fails
// the recorder, or its recording, whose log must be kept.)
func (w *writer) finishedUpTo(seq uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.live {
		if l.seq != 0 && l.seq <= seq {
			return false
		}
	}
	return true
}

// Episode rows in batches. A finished episode's steps file is finished
// (complete, not yet durable) on the episode's own queue, but its episodes
// row waits in its recording's batch, which writes the rows of many
// episodes into one episodes file and hands that file, with the steps
// files of its episodes, to the committer as one write: an episode is
// published with its steps, and the episodes table is not one file per
// episode (a one-row file is 2.4 KB of footer around 100 bytes of data).
//
// A batch keeps its entries in the order they were handed over: episodes
// in the order the assembler finished them, and the recording's session
// writes (its sessions row, logs and telemetry) among them. A flush takes
// every ready episode (one is ready once its steps are written) and the
// session writes that no unready entry precedes, so a session write is
// published after the episodes finished before it: the episodes in one
// episodes file (with their steps files), then the session writes in
// order. It runs, on the batch's own queue,
//   - at once when a session write is ready and nothing before it waits
//     (the recording ended, or late telemetry came), or the ready episodes
//     reach batchMaxRows rows or batchMaxBytes bytes of episodes rows, or
//     their packed steps reach packedMaxBytes;
//   - else batch delay (WithEpisodeBatchDelay, default 2 s) after the
//     first entry of a batch became ready;
//   - and on writer.wait (Flush, Close, the end of recovery).
//
// So an episode's rows are visible within about the delay after it
// completes, and at the latest when its recording ends.
//
// Layout "session" (packed steps files): an episode whose rows were never
// streamed out (all but long or image-heavy ones) has its rows appended,
// whole and on the batch's queue, to its recording's open packed steps
// file, whose row groups end only between episodes; a flush finishes that
// file and publishes it with the episodes rows that name it, so the steps
// of a recording are rolled into a file per flush (by time, or by
// packedMaxBytes). An episode that streamed has a part file of its own in
// the recording's partition.
const (
	batchMaxRows  = 4096
	batchMaxBytes = 8 << 20
	// batchRowBytes is what a row is counted beyond its blob.
	batchRowBytes = 512
	// packedMaxBytes bounds the step bytes (blobs and typed values, before
	// compression) of one packed steps file.
	packedMaxBytes = 128 << 20
	// packedGroupRows bounds the rows of a packed file's row groups: the
	// rows of its fixed columns a reader of one episode decodes (the
	// group that holds it), against the row groups a scan of the whole
	// table opens (DuckDB's count(*) over 5,000 cartpole episodes: 3.1x
	// one file's time with 16,384-row groups, 15 of them, against 4 in the
	// one file). 65,536 is what DuckDB's own writer uses.
	packedGroupRows = 64 << 10
)

// batch is the pending writes of one recording.
type batch struct {
	rec hive.Recording
	q   serial.Queue // flush jobs

	mu      sync.Mutex
	entries []*batchEntry
	armed   bool // a delayed flush is scheduled
	queued  bool // a flush job is queued and has not started
	// Counts over entries, kept as they change so that an entry's
	// hand-over costs O(1) however many wait: entries not ready, session
	// writes, and the ready episodes' rows, episodes-row bytes and packed
	// step bytes.
	notReady, sessions int
	rows, bytes, steps int

	// packed is the open packed steps file (layout "session"), and
	// packedDone the ones finished since the last flush (when the spaces
	// changed); only jobs on q touch them.
	packed     *episodeFile
	packedDone []store.Part
}

// batchEntry is one write waiting in a batch: an episode's row with its
// steps file, or a session write.
type batchEntry struct {
	ready, failed bool

	// An episode.
	file   *episodeFile // its entry in writer.live
	rid    string
	status string
	row    schema.EpisodeRow
	meta   parquetout.Metadata // the episodes file's (its spaces)
	steps  store.Part          // nil: no steps file of its own
	// stepBytes are the bytes of its rows in the packed steps file.
	stepBytes int

	// A session write (session set).
	session *sessionWriteJob
}

// sessionWriteJob is the k-th write of a recording's session files.
type sessionWriteJob struct {
	k   int
	row *schema.SessionRow
	// logRows and teleRows count the recording's log and telemetry rows
	// up to and with this write (for the sessions file's metadata).
	logRows, teleRows int64
	// seq is the recording's highest sequence number when the write was
	// taken (the files' rlrec.last_sequence; 0: unnumbered events).
	seq uint64
	// nonce is the recording's run nonce (rlrec.run_nonce; nil: none).
	nonce []byte
	// chain is the recording's content chain (rlrec.content_chain).
	chain runid.Chain
	// charge is what the job holds of the rows in flight (writer.rows)
	// until its files are written: its log and telemetry rows.
	charge int64
	logs   []schema.LogRow
	tele   []schema.TelemetryRow
	token  any // its entry in writer.live
}

// episodeFile is the state of one episode's steps file while it is
// written; only the episode's serial queue touches it.
type episodeFile struct {
	q      serial.Queue
	format *parquetout.StepsFormat
	steps  *parquetout.StepsWriter
	file   store.Part // where steps writes
	part   int        // the steps file's part number
	// packed is set for a batch's packed steps file (layout "session"),
	// of the spaces obs and act.
	packed   bool
	obs, act *schema.Layout
	// rel is a packed file's path relative to ROOT, once an episode's
	// row has named it.
	rel    string
	row    parquetout.StepRow
	leaves [2][][]byte
}

// episodeKey names an episode of a recording.
type episodeKey struct {
	rec hive.Recording
	rid string
}

// nextPart returns the number of the next part file of partition p: one
// more than the highest one there when first asked (temp files are gone:
// recovery removes or publishes them first), then counting up. Only the
// writer creates part files under ROOT, so the count cannot go stale.
func (w *writer) nextPart(p hive.Partition) int {
	rel := p.Rel()
	w.mu.Lock()
	n, ok := w.parts[rel]
	w.mu.Unlock()
	if !ok {
		var err error
		if n, err = w.st.Next(p); err != nil {
			n = 0 // creation then fails on the listing error's cause
		}
	}
	w.mu.Lock()
	if m, ok := w.parts[rel]; ok && m > n {
		n = m
	}
	w.parts[rel] = n + 1
	w.mu.Unlock()
	return n
}

// recFailure is a failed recording: its error, and the events it received
// after it failed.
type recFailure struct {
	err    *RecordingError
	events int64
}
