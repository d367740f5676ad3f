package assembly

import (
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/rlrec/rlrec/internal/hive"
)

// The Assembler's state, and what every rule file uses of it: the
// problem counter, the episode buffer bounds, the sessions in order. The
// types it holds are session.go's; the rule files (assemble.go, steps.go,
// stepflags.go, unfinished.go, repeat.go, run.go) build on both.

// Assembler holds the state of every session it has seen.
type Assembler struct {
	sessions map[hive.Recording]*session
	out      Output
	// episodeBudget is the arena bytes all open episodes may hold together
	// before their rows are streamed out; open counts open episodes.
	episodeBudget int
	open          int
	// problems counts the problems counted in every session, for Stats;
	// it is read from other goroutines.
	problems atomic.Int64
	// repeats counts the events dropped as repeats.
	repeats atomic.Int64
	// last is the session of the last event applied: a recording's
	// events come in runs, which then need no map lookup (sessionFor).
	last *session
	// keepHashes: each session keeps the content hashes of its last
	// numbered events (run.go), while recovery replays the log of a
	// recorder opened WithResume.
	keepHashes bool
}

// minEpisodeBuffer is the least an open episode may buffer before its rows
// are streamed out, however many episodes are open.
const minEpisodeBuffer = 256 << 10

func New(out Output, episodeBudget int) *Assembler {
	return &Assembler{sessions: make(map[hive.Recording]*session), out: out, episodeBudget: episodeBudget}
}

// maxStreamChunk is the most one open episode buffers before its rows are
// streamed out, however few episodes are open. Chunks of this size keep a
// long image episode's live memory small (its arena would otherwise grow
// by doubling towards the whole budget) without changing its files: row
// groups are cut by the steps writer, not by chunks.
const maxStreamChunk = 4 << 20

// maxEpisodeBuffer is the number of arena bytes one open episode may hold
// before its rows are streamed out.
func (a *Assembler) maxEpisodeBuffer() int {
	return min(max(a.episodeBudget/max(a.open, 1), minEpisodeBuffer), maxStreamChunk)
}

// sortedSessions lists the recordings in (session id, env id) order.
func (a *Assembler) sortedSessions() []*session {
	out := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec().Less(out[j].rec()) })
	return out
}

func (a *Assembler) problem(s *session, kind problemKind, format string, args ...any) {
	s.problems[kind]++
	a.problems.Add(1)
	if isRepeat(kind) {
		a.repeats.Add(1)
	}
	a.out.Problem(s.rec(), string(kind), fmt.Sprintf(format, args...))
}

// sortedOpen lists a session's unfinished episodes by record index.
func sortedOpen(s *session) []*episode {
	eps := make([]*episode, 0, len(s.episodes))
	for _, ep := range s.episodes {
		eps = append(eps, ep)
	}
	for i := 1; i < len(eps); i++ {
		for j := i; j > 0 && eps[j].index < eps[j-1].index; j-- {
			eps[j], eps[j-1] = eps[j-1], eps[j]
		}
	}
	return eps
}
