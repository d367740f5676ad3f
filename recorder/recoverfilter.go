package recorder

import (
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
)

// replayFilter is the assembler's output while recovery replays the log:
// recovery feeds the same assembler and writer as a live recorder, and
// this is where it differs. The writes the log's markers (and the
// journal) name are published already and go no further; a recording
// whose first replayed event is late data continues its session writes
// where the log numbered them; everything else goes on to the writer,
// which holds its files until the replay is done (phase.go).
type replayFilter struct {
	w    *writer
	done *doneSet
}

func (f replayFilter) StepsFull(c assembly.Chunk) {
	if f.done.episode(c.Rec, c.RecordID) {
		c.Recycle()
		return
	}
	f.w.StepsFull(c)
}

func (f replayFilter) EpisodeDone(e assembly.Finished) {
	if f.done.episode(e.Rec, e.RecordID) {
		e.Recycle()
		f.w.skipEpisode(e.Rec, e.RecordID)
		return
	}
	f.w.EpisodeDone(e)
}

func (f replayFilter) SessionDone(sw assembly.SessionWrite) {
	if f.done.session(sw.Rec, sw.K, sw.Row != nil) {
		return
	}
	f.w.SessionDone(sw)
}

func (f replayFilter) NewSession(rec hive.Recording, late bool) assembly.Continuation {
	if k, ok := f.done.FirstWrite(rec); ok && late {
		return assembly.Continuation{FirstWrite: k, Ended: true}
	}
	if !late {
		// Replayed from its start: writes are numbered from 0 again and
		// replace what a crash may have left.
		return assembly.Continuation{}
	}
	return f.w.NewSession(rec, late)
}

func (f replayFilter) Problem(rec hive.Recording, kind, detail string) {
	f.w.Problem(rec, kind, detail)
}
