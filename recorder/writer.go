package recorder

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/serial"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
	"golang.org/x/sync/semaphore"
)

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

func newWriter(r *Recorder) *writer {
	rowsMax := r.budget.rowsInFlight()
	w := &writer{
		fatal:      r.fatal,
		layoutFile: r.layoutFile,
		fs:         r.fs,
		root:       r.root,
		st:         r.st,
		cfg: parquetout.Config{
			Compression:     string(r.opts.compression),
			RowGroupRows:    int64(r.opts.rowGroupRows),
			RowGroupBytes:   r.budget.rowGroup(),
			BinaryThreshold: r.opts.typedThreshold,
		},
		log:        r.opts.logger,
		pool:       serial.NewPool(r.opts.workers),
		rows:       semaphore.NewWeighted(rowsMax),
		rowsMax:    rowsMax,
		files:      parquetout.NewFileShare(r.budget.stepsFiles()),
		formats:    make(map[formatKey]*parquetout.StepsFormat),
		batches:    make(map[hive.Recording]*batch),
		open:       make(map[episodeKey]*episodeFile),
		layout:     r.layout,
		parts:      make(map[string]int),
		batchDelay: r.opts.batchDelay,
		live:       make(map[any]liveWrite),
		failed:     make(map[string]*recFailure),
	}
	w.setPhase(recovered{fs: r.fs, state: r.state})
	w.com = newCommitter(commitEnv{
		st:         w.st,
		layoutFile: w.layoutFile,
		logMarkers: func(markers [][]byte) error { return w.now().logMarkers(markers) },
		failed:     w.err,
		fail:       w.fail,
		failRec:    w.failRec,
		recFailed:  w.recFailed,
		anyFailed:  func() bool { return w.failedN.Load() > 0 },
		published:  w.published,
	})
	return w
}

// published releases the writes of a group the committer made durable:
// their log positions, and their done functions.
func (w *writer) published(group []commitItem) {
	w.mu.Lock()
	for _, it := range group {
		for _, l := range it.live {
			delete(w.live, l)
		}
		if it.done != nil {
			it.done()
		}
	}
	w.mu.Unlock()
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

// wait returns once every write submitted so far has finished, every
// batch is flushed and every group is committed. It returns the error that
// failed the recorder; failed recordings are in recordingErrors.
func (w *writer) wait() error {
	w.drain()
	w.com.flush()
	return w.err()
}

// drain runs every queued job, then flushes every batch (its entries are
// all ready once their episodes' jobs ran).
func (w *writer) drain() {
	w.pool.Wait()
	w.flushAll()
	w.pool.Wait()
}

// stop waits for every write, flushes the batches, commits, and ends the
// pool and the committer.
func (w *writer) stop() error {
	w.drain()
	w.closing.Store(true)
	w.pool.Stop()
	w.com.stop()
	return w.err()
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
