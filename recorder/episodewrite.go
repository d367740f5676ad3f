package recorder

import (
	"context"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
)

// The writes of episodes as the assembly hands them over: chunks of a
// long episode's rows (StepsFull) and finished episodes (EpisodeDone),
// queued on each episode's own queue and then to its recording's batch;
// episodefile.go writes the files.

// takeRows makes a job of c, waiting until the rows in flight leave room
// for it; the job releases j.charge once its rows are written.
func (w *writer) takeRows(c assembly.Chunk) rowsJob {
	j := rowsJob{c: c, charge: min(int64(jobOverhead+c.Bytes()), w.rowsMax)}
	w.rows.Acquire(context.Background(), j.charge)
	return j
}

// openFile returns the steps file of an episode streaming its rows,
// starting one on its first chunk; only the assembly goroutine calls it.
func (w *writer) openFile(c *assembly.Chunk) *episodeFile {
	k := episodeKey{c.Rec, c.RecordID}
	f := w.open[k]
	if f == nil {
		f = &episodeFile{}
		w.open[k] = f
		w.addLive(f, c.FirstPos, false)
	}
	return f
}

// StepsFull streams an open episode's rows to its steps file.
func (w *writer) StepsFull(c assembly.Chunk) {
	f := w.openFile(&c)
	meta := metaOf(&c)
	j := w.takeRows(c)
	w.pool.Submit(&f.q, func() {
		err := w.writeRows(f, meta, j)
		w.rows.Release(j.charge)
		if err != nil {
			w.failRec(meta.rec, err)
		}
	})
}

// EpisodeDone writes a finished episode: the rest of its steps on its own
// queue, then its row waits in its recording's batch (batch.go), which
// publishes it with its steps file.
func (w *writer) EpisodeDone(e assembly.Finished) {
	k := episodeKey{e.Rec, e.RecordID}
	f := w.open[k]
	delete(w.open, k)
	streamed := e.Streamed > 0
	if f == nil {
		f = &episodeFile{}
		w.addLive(f, e.FirstPos, false)
	}
	w.finishLive(f)
	em := metaOf(&e.Chunk)
	be := &batchEntry{file: f, rid: e.RecordID, status: e.Status, row: e.Row, meta: w.meta(e.Rec)}
	if e.Obs != nil {
		be.meta.ObservationSpace = e.Obs.Spec
	}
	if e.Act != nil {
		be.meta.ActionSpace = e.Act.Spec
	}
	j := w.takeRows(e.Chunk)
	b := w.batchOf(e.Rec)
	b.add(be)
	if w.layout == hive.LayoutSession && !streamed {
		// Its rows go, whole, to the recording's packed steps file.
		w.pool.Submit(&b.q, func() {
			err := w.pack(b, em, j, be)
			w.rows.Release(j.charge)
			if err != nil {
				w.failRec(em.rec, err)
			}
			w.ready(b, be, err != nil)
		})
		return
	}
	w.pool.Submit(&f.q, func() {
		part, err := w.finishSteps(f, em, j)
		w.rows.Release(j.charge)
		if err != nil {
			w.failRec(em.rec, err)
			w.ready(b, be, true)
			return
		}
		if part != nil {
			be.steps = part
			rel := w.stepsPartition(em).File(f.part)
			be.row.StepsFile = &rel
		}
		w.ready(b, be, false)
	})
}

// skipEpisode counts an episode recovery found published, and drops
// what it streamed before recovery knew it durable.
func (w *writer) skipEpisode(rec hive.Recording, rid string) {
	k := episodeKey{rec, rid}
	f := w.open[k]
	delete(w.open, k)
	w.mu.Lock()
	w.skipped++
	if f != nil {
		delete(w.live, f)
	}
	w.mu.Unlock()
	if f != nil {
		w.pool.Submit(&f.q, func() {
			if f.steps != nil {
				f.abort()
				w.files.Closed()
			}
		})
	}
}
