package recorder

import (
	"log/slog"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/published"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
	"github.com/rlrec/rlrec/schema"
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

// doneSet holds the writes the markers in a log (and the recovery
// journal) say are published, and the files they name. A file is published
// only once its marker is durable (commit.go), so a write without a marker
// has no published file, and recovery writes it afresh. Only a damaged log
// (cut by --salvage past a marker) can lose the marker of a published
// write; so that recovery then duplicates nothing, an episode whose row is
// in a published episodes file, and a recording whose sessions row is
// published, count as published too (read from ROOT once per recording,
// during recovery only).
type doneSet struct {
	*logrec.Published
	st store.Root
	// rows caches the episode record ids in each recording's published
	// episodes files.
	rows map[hive.Recording]map[string]bool
}

func newDoneSet(st store.Root) *doneSet {
	return &doneSet{Published: logrec.NewPublished(), st: st, rows: make(map[hive.Recording]map[string]bool)}
}

// episode reports whether an episode's files are published.
func (d *doneSet) episode(rec hive.Recording, rid string) bool {
	if d.Episode(rec, rid) {
		return true
	}
	rows, ok := d.rows[rec]
	if !ok {
		rows = published.EpisodeIDs(d.st, rec)
		d.rows[rec] = rows
	}
	return rows[rid]
}

// session reports whether the k-th write of a recording's session files
// is published; final is set for the write with its sessions row.
func (d *doneSet) session(rec hive.Recording, k int, final bool) bool {
	if d.Session(rec, k) {
		return true
	}
	if !final {
		return false
	}
	n, err := d.st.Next(hive.RecordingPartition(schema.TableSessions, rec))
	return err == nil && n > 0
}

// addRecords notes marker records read from where.
func (d *doneSet) addRecords(recs [][]byte, where string, log *slog.Logger) {
	for _, rec := range recs {
		if err := d.Add(rec); err != nil {
			log.Error("skipping a malformed marker record", "in", where, "err", err)
		}
	}
}
