// Package assembly is the recorder's pure stage: events in, finished
// episodes (their step rows and episodes row) and session writes (logs,
// telemetry, the sessions row) out, following rlrec's recording rules
// (assemble.go). It does no I/O and starts no goroutine: one goroutine
// calls Apply, and the Output it was made with receives, in event order,
// values it then owns (output.go). Its state goes into log snapshots and
// comes back from them (snapshot.go), and a snapshot's episodes left to
// the log are rebuilt by replaying it (catchup.go).
//
// Files, from the top (each uses only files listed after it;
// layers_test.go checks that no two files use each other): assembly.go
// (the exported calls), catchup.go and snapshot.go (snapshots),
// assemble.go (the session and its lifecycle), steps.go (observations,
// actions and rewards into rows), stepflags.go and unfinished.go (rlmesh
// 0.1's step flags, actions no step followed), repeat.go (resent steps),
// run.go (run identity), finish.go (handing chunks, finished episodes and
// session writes over), rows.go (the episodes and sessions rows),
// state.go (the Assembler), output.go (what leaves), rowbufs.go (row
// buffers handed back by the writer), session.go (the per-session state).
package assembly

import (
	"log/slog"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/runid"
)

// Statuses a recording is finished with by FinishAll: "open" (the
// recorder closed while it ran) or "crashed" (recovery found it
// unfinished). They are written to the sessions table: do not change
// them.
const (
	StatusOpen    = statusOpen
	StatusCrashed = statusCrashed
)

// EpisodeCompleted is the status of an episode that completed
// (Finished.Status; the other is "incomplete").
const EpisodeCompleted = episodeCompleted

// Apply folds one event into the state: at is its recording time and pos
// its log position.
func (a *Assembler) Apply(ev events.Event, at time.Time, pos uint64) { a.apply(ev, at, pos) }

// ApplyClocked is Apply of an event whose time is the recorder's own clock
// reading when recClock is set (or its log record says so).
func (a *Assembler) ApplyClocked(ev events.Event, at time.Time, pos uint64, recClock bool) {
	a.applyClocked(ev, at, pos, recClock)
}

// FinishAll finishes every recording that will get no more events (at
// Close, or at the end of recovery), in (session id, env id) order: its
// open episodes as incomplete, the recording with status unless it ended.
// With keepUnended, a recording that has not ended is left as it is (for
// a later resume). It returns the number of recordings and of those that
// had not ended.
func (a *Assembler) FinishAll(status string, at time.Time, keepUnended bool) (recordings, unended int) {
	for _, s := range a.sortedSessions() {
		recordings++
		if !s.ended {
			unended++
			if keepUnended {
				continue
			}
		}
		a.finishOpen(s, status, at)
	}
	return recordings, unended
}

// SetOutput makes out the receiver of what a finishes from now on (the
// state recovery rebuilt goes on live).
func (a *Assembler) SetOutput(out Output) { a.out = out }

// Problems is the number of input problems counted; Repeats those of them
// that were resent events. Both may be read from any goroutine.
func (a *Assembler) Problems() int64 { return a.problems.Load() }

// Repeats: see Problems.
func (a *Assembler) Repeats() int64 { return a.repeats.Load() }

// KeepHashes sets whether each recording keeps the content hashes of its
// last numbered events (while recovery replays the log of a recorder
// opened WithResume); turning it off drops the hashes kept.
func (a *Assembler) KeepHashes(on bool) {
	a.keepHashes = on
	if !on {
		for _, s := range a.sessions {
			s.run.hashes = runid.Window{}
		}
	}
}

// Recording is what the assembly state says of one recording.
type Recording struct {
	Rec hive.Recording
	// FirstPos is the log position from which its events are needed.
	FirstPos uint64
	// Ended: its end came; Finished: its sessions row and final
	// telemetry are handed over, so it needs no more of the log.
	Ended, Finished bool
	// Seq is its highest sequence number (0: none).
	Seq uint64
	// Nonce is its run nonce (nil: none), Hashes the content hashes of
	// its last numbered events (KeepHashes).
	Nonce  []byte
	Hashes runid.Window
}

// Each calls f with every recording, in no particular order.
func (a *Assembler) Each(f func(Recording)) {
	for _, s := range a.sessions {
		f(Recording{Rec: s.rec(), FirstPos: s.firstPos, Ended: s.ended, Finished: s.finalTelemetry,
			Seq: s.seq, Nonce: s.run.nonce, Hashes: s.run.hashes})
	}
}

// Snapshotable reports whether the state can be put in a snapshot now,
// and its approximate size (snapshot.go).
func (a *Assembler) Snapshotable() (size int, ok bool) { return a.snapshotable() }

// AppendSnapshot appends a snapshot record of the state as of log
// position asOf.
func (a *Assembler) AppendSnapshot(dst []byte, asOf uint64) ([]byte, error) {
	return a.appendSnapshot(dst, asOf)
}

// OldestOpen is the log position of the first event of the oldest open
// episode (0: none).
func (a *Assembler) OldestOpen() uint64 { return a.oldestOpen() }

// External reports whether a snapshot taken now would leave the open
// episode rid of rec to be rebuilt from the log (false: no such episode).
func (a *Assembler) External(rec hive.Recording, rid string) bool {
	s := a.sessions[rec]
	if s == nil || s.episodes[rid] == nil {
		return false
	}
	return external(s.episodes[rid])
}

// Restore makes the snapshot body b (a logrec.TypeSnapshot record without
// its type byte) the state of a, which must be new. It returns the
// snapshot's as_of, the latest time its recordings saw, and the catch-up
// that rebuilds, into a's output, the episodes it left to the log (nil:
// none); log reports what the catch-up finds wrong.
func (a *Assembler) Restore(b []byte, log *slog.Logger) (asOf uint64, last time.Time, cu *CatchUp, err error) {
	asOf, sessions, err := parseSnapshot(b)
	if err != nil {
		return 0, time.Time{}, nil, err
	}
	for _, s := range sessions {
		if s.lastAt.After(last) {
			last = s.lastAt
		}
	}
	a.restore(sessions, asOf+1)
	return asOf, last, newCatchUp(a.out, a.episodeBudget, sessions, log), nil
}
