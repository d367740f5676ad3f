package recorder

import (
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/serial"
	"golang.org/x/sync/semaphore"
)

// The writer's lifecycle (its state is writerstate.go's): made by Open,
// drained by Flush and the end of recovery, stopped by Close.

// newWriter makes the writer of r, and its committer.
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
