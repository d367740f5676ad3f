package recorder

import (
	"context"
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// phase is what the writer writes for, and it decides where the writes'
// markers go and which writes are skipped:
//
//   - replaying (recovery, while it replays the log): the writes the
//     log's markers name are published already and are skipped; every
//     file is held until the replay is done and published as one group,
//     whose markers go to the journal, since recovery has no log to
//     append to.
//   - recovered (recovery, after the replay): nothing is skipped or held;
//     markers still go to the journal.
//   - live (once the log is open): markers go to the log, and each
//     session write is logged as it is handed over.
type phase interface {
	// logMarkers makes a group's markers durable before its files are
	// published.
	logMarkers(markers [][]byte) error
	// sessionWrite notes that the k-th session write of rec is handed
	// over.
	sessionWrite(rec hive.Recording, k int) error
	// skipEpisode and skipSession report whether a write is published
	// already.
	skipEpisode(rec hive.Recording, rid string) bool
	skipSession(rec hive.Recording, k int, final bool) bool
	// firstWrite returns the number of the first session write of rec
	// that the log recorded, if it did (replaying only).
	firstWrite(rec hive.Recording) (int, bool)
	// replays reports whether the log is being replayed: files are held
	// until the replay is done, and sessions number their writes as the
	// log recorded them.
	replays() bool
}

// live is the phase of a recorder whose log is open.
type live struct{ log *wal.Log }

func (p live) logMarkers(markers [][]byte) error {
	if len(markers) == 0 {
		return nil
	}
	var last wal.Pos
	for _, m := range markers {
		pos, err := p.log.Append(m)
		if err != nil {
			return fmt.Errorf("append marker: %w", err)
		}
		last = pos
	}
	if err := p.log.WaitSynced(context.Background(), last); err != nil {
		return fmt.Errorf("sync markers: %w", err)
	}
	return nil
}

func (p live) sessionWrite(rec hive.Recording, k int) error {
	if _, err := p.log.Append(logrec.AppendSessionMarker(nil, logrec.TypeSessionWrite, logrec.Marker{Recording: rec, Write: k})); err != nil {
		return fmt.Errorf("append session write record: %w", err)
	}
	return nil
}

func (live) skipEpisode(hive.Recording, string) bool    { return false }
func (live) skipSession(hive.Recording, int, bool) bool { return false }
func (live) firstWrite(hive.Recording) (int, bool)      { return 0, false }
func (live) replays() bool                              { return false }

// recovered is the phase of a recovery after its replay: its markers go
// to the journal.
type recovered struct {
	fs    vfs.FS
	state string // the state directory, which holds the journal
}

func (p recovered) logMarkers(markers [][]byte) error {
	if len(markers) == 0 {
		return nil
	}
	return store.WriteJournal(p.fs, p.state, markers)
}

func (recovered) sessionWrite(hive.Recording, int) error     { return nil }
func (recovered) skipEpisode(hive.Recording, string) bool    { return false }
func (recovered) skipSession(hive.Recording, int, bool) bool { return false }
func (recovered) firstWrite(hive.Recording) (int, bool)      { return 0, false }
func (recovered) replays() bool                              { return false }

// replaying is the phase of a recovery while it replays the log: done
// holds the writes the log's markers and the journal name.
type replaying struct {
	recovered
	done *doneSet
}

func (p replaying) skipEpisode(rec hive.Recording, rid string) bool { return p.done.episode(rec, rid) }

func (p replaying) skipSession(rec hive.Recording, k int, final bool) bool {
	return p.done.session(rec, k, final)
}

func (p replaying) firstWrite(rec hive.Recording) (int, bool) {
	return p.done.FirstWrite(rec)
}

func (replaying) replays() bool { return true }
