package recorder

import (
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder/internal/recovery"
)

// phase is what the writer writes for, and it decides where the writes'
// markers go and whether files are held:
//
//   - replaying (recovery, while it replays the log): every file is held
//     until the replay is done and published as one group, whose markers
//     go to the journal, since recovery has no log to append to. (The
//     writes the log's markers name never reach the writer:
//     recoverfilter.go drops them.)
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
	// replays reports whether the log is being replayed: files are held
	// until the replay is done.
	replays() bool
}

// live is the phase of a recorder whose log is open: markers and session
// writes go to the log (logappend.go).
type live struct{ log logAppender }

func (p live) logMarkers(markers [][]byte) error { return p.log.markers(markers) }

func (p live) sessionWrite(rec hive.Recording, k int) error { return p.log.sessionWrite(rec, k) }

func (live) replays() bool { return false }

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
	return recovery.WriteJournal(p.fs, p.state, markers)
}

func (recovered) sessionWrite(hive.Recording, int) error { return nil }
func (recovered) replays() bool                          { return false }

// replaying is the phase of a recovery while it replays the log.
type replaying struct{ recovered }

func (replaying) replays() bool { return true }
