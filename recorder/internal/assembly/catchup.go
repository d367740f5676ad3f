package assembly

import (
	"fmt"
	"log/slog"

	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
)

// CatchUp rebuilds the rows of the episodes a snapshot left to the log
// (snapshot.go: episodes streaming to their steps files, or buffering many
// rows). It replays the log from the first event of the first of them up
// to the snapshot's as_of into a scratch assembler, whose sessions start
// with the restored sessions' spaces and nothing else; when the scratch
// sees such an episode start, it builds that episode into the restored
// episode itself, streaming its rows to the real output as recording did.
// Everything else the scratch builds (other episodes, counters, problems)
// is dropped: the snapshot holds it. The episodes' counters are checked
// against the snapshot's when the replay reaches as_of.
type CatchUp struct {
	scratch *Assembler
	from    uint64
	// targets are the restored episodes to rebuild, with the step count
	// the snapshot recorded for each; byKey names them by recording and
	// record id.
	targets map[*episode]int64
	byKey   map[episodeKey]*episode
	log     *slog.Logger
}

// episodeKey names an episode of a recording.
type episodeKey struct {
	rec hive.Recording
	rid string
}

// newCatchUp returns the catch-up of the restored sessions into out, or
// nil when the snapshot left no episode to the log.
func newCatchUp(out Output, budget int, sessions []*session, log *slog.Logger) *CatchUp {
	c := &CatchUp{targets: make(map[*episode]int64), byKey: make(map[episodeKey]*episode), log: log}
	c.scratch = New(catchUpOutput{c: c, out: out}, budget)
	for _, s := range sessions {
		var adopt map[string]*episode
		for rid, ep := range s.episodes {
			if ep.replayFrom == 0 {
				continue
			}
			if adopt == nil {
				adopt = make(map[string]*episode)
			}
			adopt[rid] = ep
			c.targets[ep] = ep.stepsRecorded
			c.byKey[episodeKey{s.rec(), rid}] = ep
			if c.from == 0 || ep.replayFrom < c.from {
				c.from = ep.replayFrom
			}
		}
		if adopt == nil {
			continue
		}
		c.scratch.sessions[s.rec()] = &session{
			id: s.id, route: s.route, envID: s.envID, status: statusOpen, started: true,
			episodes: make(map[string]*episode), done: make(map[string]struct{}), problems: make(map[problemKind]int64),
			obsSpec: s.obsSpec, actSpec: s.actSpec, obsLayout: s.obsLayout, actLayout: s.actLayout,
			obsSpecJSON: s.obsSpecJSON, actSpecJSON: s.actSpecJSON,
			adopt: adopt,
		}
	}
	if len(c.targets) == 0 {
		return nil
	}
	return c
}

// From is the log position the catch-up replays from.
func (c *CatchUp) From() uint64 { return c.from }

// Rebuilds is the number of episodes the catch-up rebuilds.
func (c *CatchUp) Rebuilds() int { return len(c.targets) }

// Apply replays one event at or before the snapshot's as_of, at log
// position pos.
func (c *CatchUp) Apply(ev events.Event, at time.Time, pos uint64) {
	id, route := ev.Header()
	if c.scratch.sessions[hive.Recording{SessionID: id, EnvID: route.EnvID}] == nil {
		return
	}
	c.scratch.apply(ev, at, pos)
}

// Finish ends the catch-up once the replay is past as_of: every target
// must have been rebuilt with the steps the snapshot recorded.
func (c *CatchUp) Finish() error {
	for ep, steps := range c.targets {
		if ep.replayFrom != 0 {
			return fmt.Errorf("episode %s: its first event (log position %d) was not found in the log", ep.recordID, ep.replayFrom)
		}
		if ep.stepsRecorded != steps {
			return fmt.Errorf("episode %s: the log rebuilds %d steps up to the snapshot, the snapshot recorded %d", ep.recordID, ep.stepsRecorded, steps)
		}
	}
	return nil
}

// catchUpOutput is the scratch assembler's output: a target's rows stream
// to the real output; everything else is dropped.
type catchUpOutput struct {
	c   *CatchUp
	out Output
}

func (o catchUpOutput) StepsFull(ch Chunk) {
	if o.c.byKey[episodeKey{ch.Rec, ch.RecordID}] != nil {
		o.out.StepsFull(ch)
		return
	}
	ch.Recycle()
}

func (o catchUpOutput) EpisodeDone(e Finished) {
	if o.c.byKey[episodeKey{e.Rec, e.RecordID}] != nil {
		// Open in the snapshot, so not finished before it: the log and
		// the snapshot disagree. Finish reports it (its steps differ or
		// it is lost); nothing is written here.
		o.c.log.Error("an episode open in the log's snapshot finished before it in the log", "session", e.Rec.SessionID, "episode", e.RecordID)
	}
	e.Recycle()
}

func (catchUpOutput) SessionDone(SessionWrite)                     {}
func (catchUpOutput) NewSession(hive.Recording, bool) Continuation { return Continuation{} }
func (catchUpOutput) Problem(hive.Recording, string, string)       {}
