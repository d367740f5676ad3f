package recorder

import (
	"fmt"
	"log/slog"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logreplay"
)

// catchUp rebuilds the rows of the episodes a snapshot left to the log
// (snapshot.go: episodes streaming to their steps files, or buffering many
// rows). It replays the log from the first event of the first of them up
// to the snapshot's as_of into a scratch assembler, whose sessions start
// with the restored sessions' spaces and nothing else; when the scratch
// sees such an episode start, it builds that episode into the restored
// episode itself, streaming its rows to the real writer as recording did.
// Everything else the scratch builds (other episodes, counters, problems)
// is dropped: the snapshot holds it. The episodes' counters are checked
// against the snapshot's when the replay reaches as_of.
type catchUp struct {
	scratch *assembler
	from    uint64
	// targets are the restored episodes to rebuild, with the step count
	// the snapshot recorded for each.
	targets map[*episode]int64
	log     *slog.Logger
}

// newCatchUp returns the catch-up of the restored sessions, or nil when
// the snapshot left no episode to the log.
func newCatchUp(w *writer, budget int, sessions []*session, log *slog.Logger) *catchUp {
	c := &catchUp{targets: make(map[*episode]int64), log: log}
	c.scratch = newAssembler(catchUpOutput{c: c, w: w}, budget)
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

// apply replays one event at or before the snapshot's as_of.
func (c *catchUp) apply(d logreplay.Event) {
	id, route := d.Ev.Header()
	if c.scratch.sessions[hive.Recording{SessionID: id, EnvID: route.EnvID}] == nil {
		return
	}
	c.scratch.apply(d.Ev, d.At, uint64(d.Pos))
}

// finish ends the catch-up once the replay is past as_of: every target
// must have been rebuilt with the steps the snapshot recorded.
func (c *catchUp) finish() error {
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
// to the real writer; everything else is dropped.
type catchUpOutput struct {
	c *catchUp
	w *writer
}

func (o catchUpOutput) stepsFull(s *session, ep *episode) {
	if _, ok := o.c.targets[ep]; ok {
		o.w.stepsFull(s, ep)
		return
	}
	ep.rows, ep.arena = ep.rows[:0], ep.arena[:0]
}

func (o catchUpOutput) episodeDone(s *session, ep *episode, status string) {
	if _, ok := o.c.targets[ep]; ok {
		// Open in the snapshot, so not finished before it: the log and
		// the snapshot disagree. finish reports it (its steps differ or
		// it is lost); nothing is written here.
		o.c.log.Error("an episode open in the log's snapshot finished before it in the log", "session", s.id, "episode", ep.recordID)
	}
}

func (catchUpOutput) sessionDone(*session)                  {}
func (catchUpOutput) newSession(*session, events.Event)     {}
func (catchUpOutput) problem(*session, problemKind, string) {}
