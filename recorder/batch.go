package recorder

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
	"github.com/rlrec/rlrec/schema"
)

// batchOf returns the batch of rec, creating it on first use.
func (w *writer) batchOf(rec hive.Recording) *batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.batches[rec]
	if b == nil {
		b = &batch{rec: rec}
		w.batches[rec] = b
	}
	return b
}

// add appends an entry, not yet ready, to the batch.
func (b *batch) add(e *batchEntry) {
	b.mu.Lock()
	b.entries = append(b.entries, e)
	b.notReady++
	if e.session != nil {
		b.sessions++
	}
	b.mu.Unlock()
}

// count adds a ready episode entry to the batch's counts (sign -1 takes it
// out).
func (b *batch) count(e *batchEntry, sign int) {
	if e.session != nil || e.failed {
		return
	}
	b.rows += sign
	b.bytes += sign * (batchRowBytes + len(e.row.FinalObservationBlob))
	b.steps += sign * e.stepBytes
}

// ready marks e ready (or failed) and schedules a flush as the package doc
// says. A session write waits until no entry of its batch is unready (not
// only those before it): simpler to count, and it only delays it until an
// episode's steps job has run.
func (w *writer) ready(b *batch, e *batchEntry, failed bool) {
	b.mu.Lock()
	e.ready, e.failed = true, failed
	b.notReady--
	b.count(e, 1)
	now := ((b.sessions > 0 && b.notReady == 0) ||
		b.rows >= batchMaxRows || b.bytes >= batchMaxBytes || b.steps >= packedMaxBytes) && !w.now().replays()
	switch {
	case now && !b.queued:
		b.queued = true
		b.mu.Unlock()
		w.pool.Submit(&b.q, func() { w.flush(b) })
		return
	case b.rows > 0 && !b.armed && !b.queued && !w.now().replays():
		// Recovery flushes once, at its end: its files then do not depend
		// on timing.
		b.armed = true
		b.mu.Unlock()
		time.AfterFunc(w.batchDelay, func() { w.flushLater(b) })
		return
	}
	b.mu.Unlock()
}

// flushLater is the delayed flush of a batch.
func (w *writer) flushLater(b *batch) {
	b.mu.Lock()
	b.armed = false
	if b.queued {
		b.mu.Unlock()
		return
	}
	b.queued = true
	b.mu.Unlock()
	if !w.submitIfRunning(&b.q, func() { w.flush(b) }) {
		b.mu.Lock()
		b.queued = false
		b.mu.Unlock()
	}
}

// flushAll queues a flush of every batch with entries; writer.wait calls
// it once the episodes' own queues are drained, so every entry is ready.
func (w *writer) flushAll() {
	w.mu.Lock()
	bs := make([]*batch, 0, len(w.batches))
	for _, b := range w.batches {
		bs = append(bs, b)
	}
	w.mu.Unlock()
	for _, b := range bs {
		b.mu.Lock()
		n := len(b.entries)
		queue := n > 0 && !b.queued
		if queue {
			b.queued = true
		}
		b.mu.Unlock()
		if queue {
			w.pool.Submit(&b.q, func() { w.flush(b) })
		}
	}
}

// flush publishes what a batch holds ready (see the package doc): its
// ready episodes as one episodes file with their steps files (and the
// packed steps file they were appended to), then the session writes no
// unready entry precedes, in order.
func (w *writer) flush(b *batch) {
	b.mu.Lock()
	b.queued = false
	var eps, sessions, keep []*batchEntry
	waiting := false
	for _, e := range b.entries {
		switch {
		case !e.ready:
			waiting = true
			keep = append(keep, e)
		case e.session != nil && waiting:
			keep = append(keep, e)
		case e.session != nil:
			sessions = append(sessions, e)
		default:
			eps = append(eps, e)
		}
	}
	b.entries = keep
	for _, e := range eps {
		b.count(e, -1)
	}
	b.sessions -= len(sessions)
	b.mu.Unlock()
	packed := w.finishPacked(b)
	w.writeEpisodes(b.rec, eps, packed)
	for _, e := range sessions {
		w.writeSession(b.rec, e.session)
		if c := e.session.charge; c > 0 {
			w.rows.Release(c)
		}
	}
}

// writeEpisodes writes the rows of finished episodes into one episodes
// file and hands it, with their steps files and the packed steps files
// they were appended to, to the committer.
func (w *writer) writeEpisodes(rec hive.Recording, run []*batchEntry, packed []store.Part) {
	var ok []*batchEntry
	for _, e := range run {
		if e.failed {
			if e.steps != nil {
				e.steps.Abort()
			}
			continue
		}
		ok = append(ok, e)
	}
	abort := func() {
		for _, e := range ok {
			if e.steps != nil {
				e.steps.Abort()
			}
		}
		store.AbortAll(packed)
	}
	if len(ok) == 0 {
		// A packed file holds only rows of episodes in run.
		store.AbortAll(packed)
		return
	}
	if err := w.blocked(rec); err != nil {
		// An earlier write (of the recorder, or of this recording)
		// failed: commit nothing more of it; the data stays in the log
		// for the next Open, its writes in flight.
		abort()
		return
	}
	p := hive.RecordingPartition(schema.TableEpisodes, rec)
	rows := make([]schema.EpisodeRow, len(ok))
	for i, e := range ok {
		rows[i] = e.row
	}
	meta := ok[len(ok)-1].meta
	k := w.nextPart(p)
	part, err := finishTable(w.st, p, k, meta, w.cfg, rows)
	if err != nil {
		abort()
		w.failRec(rec, fmt.Errorf("episode rows of %s: %w", rec, err))
		return
	}
	epFile := p.File(k)
	it := commitItem{rec: rec, hold: w.now().replays()}
	// The markers are cut from one buffer, sized by the first (each grew
	// its own from nothing before: five allocations a marker).
	var buf []byte
	ends := make([]int, len(ok))
	for i, e := range ok {
		files := [2]string{epFile}
		n := 1
		if e.steps != nil {
			it.parts = append(it.parts, e.steps)
		}
		if e.row.StepsFile != nil {
			files[1], n = *e.row.StepsFile, 2
		}
		buf = logrec.AppendEpisodeDone(buf, logrec.Marker{Recording: rec, Record: e.rid, Files: files[:n]})
		if i == 0 {
			// The others name files of the same partitions.
			buf = slices.Grow(buf, (len(ok)-1)*(len(buf)+len(buf)/8))
		}
		ends[i] = len(buf)
		it.live = append(it.live, e.file)
	}
	it.markers = make([][]byte, len(ok))
	start := 0
	for i, end := range ends {
		it.markers[i] = buf[start:end:end]
		start = end
	}
	it.parts = append(append(it.parts, packed...), part)
	statuses := make([]string, len(ok))
	for i, e := range ok {
		statuses[i] = e.status
	}
	it.done = func() {
		for _, st := range statuses {
			if st == assembly.EpisodeCompleted {
				w.completed++
			} else {
				w.incomplete++
			}
		}
	}
	w.com.commit(it)
}

// pack appends a finished episode's rows, whole, to its recording's packed
// steps file (layout "session"), opening one when none is open or the
// spaces changed; it runs on the batch's queue.
func (w *writer) pack(b *batch, m episodeMeta, j rowsJob, e *batchEntry) error {
	if j.c.Len() == 0 {
		return nil
	}
	stepBytes := j.c.ArenaBytes()
	f := b.packed
	if f != nil && (f.obs != j.c.Obs || f.act != j.c.Act) {
		w.finishPackedFile(b)
		f = nil
	}
	if f == nil {
		f = &episodeFile{packed: true}
		b.packed = f
	}
	if err := w.writeRows(f, m, j); err != nil {
		return err
	}
	if f.steps == nil {
		return nil
	}
	if err := f.steps.EndEpisode(); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	if f.rel == "" {
		// Every episode of the file names it: its path is made once.
		f.rel = hive.RecordingPartition(schema.TableSteps, m.rec).File(f.part)
	}
	rel := f.rel
	e.row.StepsFile = &rel
	e.stepBytes = stepBytes
	return nil
}

// finishPacked finishes the open packed steps file of a batch, and returns
// it with the others finished since the last flush.
func (w *writer) finishPacked(b *batch) []store.Part {
	w.finishPackedFile(b)
	out := b.packedDone
	b.packedDone = nil
	return out
}

func (w *writer) finishPackedFile(b *batch) {
	f := b.packed
	b.packed = nil
	if f == nil || f.steps == nil {
		return
	}
	p, err := f.finish()
	w.files.Closed()
	if err != nil {
		w.failRec(b.rec, fmt.Errorf("packed steps of %s: %w", b.rec, err))
		return
	}
	b.packedDone = append(b.packedDone, p)
}
