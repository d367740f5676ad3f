package recorder

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"google.golang.org/protobuf/proto"
)

// Session and episode statuses, as the tables store them.
const (
	statusOpen    = "open"
	statusEnded   = "ended"
	statusFailed  = "failed"
	statusCrashed = "crashed"

	episodeCompleted  = "completed"
	episodeIncomplete = "incomplete"
)

// The assembler turns one session's events into step rows and episode rows,
// following the recording semantics of the design contract:
//
//   - Per lane, the last observation emitted is the one the next action is
//     computed from.
//   - An ActionReceived opens one step row for every lane whose id names an
//     open episode; the following StepCompleted fills its reward.
//   - An EpisodeCompleted marks that episode's last row and completes it; the
//     episode is finalised once the session's next observation has been seen
//     (under NEXT_STEP autoreset that observation carries the terminal
//     observation, kept as final_observation_blob) or the session ends.
//   - Anything that does not fit is counted in the session row and logged,
//     never silently dropped, and never stops the rest of the recording.
//
// The assembler does no I/O: finished episodes and sessions are handed to an
// output through the out callbacks.

// stepRow is one step of one episode. Its blobs are sub-slices of the
// episode's arena. It holds no pointer (its time is a stamp), so that an
// episode's rows cost the garbage collector nothing to scan and appending
// one no write barrier.
type stepRow struct {
	step, sessionStep int64
	obsOff, obsLen    int // obsLen < 0: no observation (null)
	actOff, actLen    int
	reward            float64
	isFirst, isLast   bool
	terminated        bool
	truncated         bool
	recordedAt        stamp
}

// stamp is a time without its location: Unix microseconds and the
// nanoseconds beyond them, which holds every instant of ±292,000 years
// (the zero time too) exactly.
type stamp struct {
	us int64
	ns int32
}

func stampOf(t time.Time) stamp {
	return stamp{us: t.UnixMicro(), ns: int32(t.Nanosecond() % 1000)}
}

// time returns the stamp's instant in UTC.
func (s stamp) time() time.Time {
	return time.UnixMicro(s.us).Add(time.Duration(s.ns)).UTC()
}

// episode is one lane episode being assembled.
type episode struct {
	id, recordID string
	index        int64
	envIndex     int32
	autoReset    bool
	startedAt    time.Time
	lastAt       time.Time

	nextStep      int64
	stepsRecorded int64
	rewardSum     float64

	// rows not yet handed to the output, with their payload bytes in arena.
	rows  []stepRow
	arena []byte
	// flushedRows counts rows already handed out (streamed).
	flushedRows int64

	completed  bool
	completion *events.EpisodeCompleted // nil until completed
	endedAt    time.Time
	finalObs   []byte // nil: none emitted

	// firstPos is the log position of the episode's first record; the log
	// is kept from there until the episode is durable.
	firstPos uint64

	// file is the episode's steps file once rows are handed to the writer.
	file *episodeFile

	// gone is set once the episode left its session's episodes (finished):
	// a lane's cached episode is then looked up again.
	gone bool

	// replayFrom is set on an episode restored from a snapshot without its
	// rows: the log position from which recovery rebuilds them.
	replayFrom uint64
}

// lane is the per-lane state of a session.
type lane struct {
	// obs is the lane's last observation in blob form; obsRecord names the
	// episode it was emitted for.
	obs       []byte
	obsRecord string
	hasObs    bool

	// ep is the open episode the lane's last step event named, under
	// record id epRecord: consecutive step events of a lane name the same
	// one, which then needs no map lookup (episodeOn).
	ep       *episode
	epRecord string
}

// problemKind names a class of input that did not fit, for the session row
// and the log. The values are written to the sessions table
// (problem_summary) and to snapshots: they are part of the on-disk format,
// do not change them.
type problemKind string

const (
	probUnknownEpisode   problemKind = "unknown_episode"
	probDuplicateStart   problemKind = "duplicate_episode_start"
	probDuplicateEnd     problemKind = "duplicate_episode_completion"
	probBadSlab          problemKind = "bad_slab"
	probBadSpec          problemKind = "bad_space_spec"
	probLaneCount        problemKind = "lane_count_mismatch"
	probRewardWithout    problemKind = "step_completed_without_action"
	probMissingReward    problemKind = "action_without_step_completed"
	probAfterEnd         problemKind = "event_after_session_end"
	probLaneOutOfRange   problemKind = "env_index_out_of_range"
	probMissingPayload   problemKind = "missing_payload"
	probDuplicateSession problemKind = "duplicate_session_start"
	probNoSpace          problemKind = "missing_space_spec"
	probNotStarted       problemKind = "session_not_started"
	probInvalidEvent     problemKind = "invalid_event"
)

// session is the assembly state of one recording: one route run, named by
// its session id and its route's env id (hive.Recording). Several
// recordings may share a session id.
type session struct {
	id        string
	route     events.RuntimeEnvContext
	envID     string // SessionStarted.EnvID, which repeats route.EnvID
	status    string
	reason    string
	started   bool
	startedAt time.Time
	endedAt   time.Time
	lastAt    time.Time

	totalSteps, totalEpisodes int64
	hasTotals                 bool

	// ended is set by SessionEnded or SessionFailed; finalTelemetry once
	// the final session-horizon snapshot has arrived.
	ended             bool
	finalTelemetry    bool
	sawFinalTelemetry bool

	episodes map[string]*episode // open, or completed and not yet finalised
	done     map[string]struct{} // finalised record ids
	lanes    []lane

	// pending holds, per lane of the last ActionReceived, the episode whose
	// row awaits its reward (nil if the lane's step was dropped).
	pending     []*episode
	havePending bool

	// numEnvs is the session's lane count N, from its last batch; 0 until
	// one is seen.
	numEnvs int32

	obsSpec, actSpec     *spacesv1.SpaceSpec
	obsLayout, actLayout *schema.Layout
	obsSpecJSON          string
	actSpecJSON          string

	episodesRecorded int64
	stepsRecorded    int64
	droppedSteps     int64
	problems         map[problemKind]int64

	logs      []logRow
	telemetry []telemetryRow

	// toFinalize lists completed episodes awaiting the next observation.
	toFinalize []*episode

	firstPos uint64

	// seq is the highest producer sequence number among the recording's
	// logged events (sequence.go); 0 when none carried one.
	seq uint64

	// clocks says whose clocks the recording's event times were:
	// clockEvent and clockRecorder bits (the sessions row's clock).
	clocks uint8

	// writes counts the session's file writes handed to the writer; q
	// orders them.
	writes int
	q      serial
	// rowDone is set once the sessions row is handed to the writer (the
	// first write at or after the end); logBytes counts what logs and
	// telemetry hold, which a write of their own hands over past
	// logChunkBytes or logChunkRows (logChunk).
	rowDone  bool
	logBytes int
	// logRows and teleRows count the log and telemetry rows handed to
	// the writer so far.
	logRows, teleRows int64

	// scratch for lane splitting
	split [][][]byte

	// adopt, in recovery's catch-up (catchup.go) only, maps the record
	// ids of restored episodes to rebuild to the episodes to build into.
	adopt map[string]*episode
}

// Bits of session.clocks: an event came with its time (clockEvent), an
// event was stamped with the recorder's clock (clockRecorder). They are
// kept in snapshots (Session field 41): do not change them.
const (
	clockEvent    uint8 = 1
	clockRecorder uint8 = 2
)

// clock is the sessions row's clock column: "event" when every event of
// the recording carried its time, "recorder" when none did and the
// recorder stamped its own clock, "mixed" otherwise.
func (s *session) clock() string {
	switch s.clocks {
	case clockRecorder:
		return schema.ClockRecorder
	case clockEvent | clockRecorder:
		return schema.ClockMixed
	}
	return schema.ClockEvent
}

// rec is the recording s assembles.
func (s *session) rec() hive.Recording { return hive.Recording{SessionID: s.id, EnvID: s.route.EnvID} }

// problemCount is the number of input problems counted in s.
func (s *session) problemCount() int64 {
	var n int64
	for _, c := range s.problems {
		n += c
	}
	return n
}

// problemSummary renders the counted problems as "kind=count" pairs in kind
// order, or "" when there were none.
func (s *session) problemSummary() string {
	kinds := make([]string, 0, len(s.problems))
	for k := range s.problems {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	var b []byte
	for i, k := range kinds {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, s.problems[problemKind(k)], 10)
	}
	return string(b)
}

type logRow struct {
	time    time.Time
	level   string
	message string
	source  *string
}

type telemetryRow struct {
	time    time.Time
	horizon string
	row     events.TelemetryRow
}

// output receives what the assembler finishes. Ownership of the episode or
// session passes to the callee.
type output interface {
	// stepsFull is called when an open episode's buffered rows exceed the
	// row budget; the callee takes ep.rows and ep.arena (and must reset
	// them) so they can be streamed to storage.
	stepsFull(s *session, ep *episode)
	// episodeDone hands over a finished episode (completed or incomplete).
	episodeDone(s *session, ep *episode, status string)
	// sessionDone hands over a finished session with its logs and
	// telemetry.
	sessionDone(s *session)
	// newSession is called for a session seen for the first time, with
	// its first event, before the event is applied.
	newSession(s *session, first events.Event)
	// problem reports input that did not fit.
	problem(s *session, kind problemKind, detail string)
}

// assembler holds the state of every session it has seen.
type assembler struct {
	sessions map[hive.Recording]*session
	out      output
	// episodeBudget is the arena bytes all open episodes may hold together
	// before their rows are streamed out; open counts open episodes.
	episodeBudget int
	open          int
	// problems counts the problems counted in every session, for Stats;
	// it is read from other goroutines.
	problems atomic.Int64
}

// minEpisodeBuffer is the least an open episode may buffer before its rows
// are streamed out, however many episodes are open.
const minEpisodeBuffer = 256 << 10

func newAssembler(out output, episodeBudget int) *assembler {
	return &assembler{sessions: make(map[hive.Recording]*session), out: out, episodeBudget: episodeBudget}
}

// maxStreamChunk is the most one open episode buffers before its rows are
// streamed out, however few episodes are open. Chunks of this size keep a
// long image episode's live memory small (its arena would otherwise grow
// by doubling towards the whole budget) without changing its files: row
// groups are cut by the steps writer, not by chunks.
const maxStreamChunk = 4 << 20

// maxEpisodeBuffer is the number of arena bytes one open episode may hold
// before its rows are streamed out.
func (a *assembler) maxEpisodeBuffer() int {
	return min(max(a.episodeBudget/max(a.open, 1), minEpisodeBuffer), maxStreamChunk)
}

// reserve makes room in ep's arena for a row of need bytes. An arena grows
// by doubling up to maxEpisodeBuffer and no further: a row that would take
// it past that first streams the buffered rows out (a row larger than the
// whole buffer gets an arena of its own size). Appending alone would grow
// the arena by up to 2x past the bound, and every open episode's arena
// with it.
func (a *assembler) reserve(s *session, ep *episode, need int) {
	limit := a.maxEpisodeBuffer()
	if len(ep.arena)+need > limit && len(ep.rows) > 0 {
		a.out.stepsFull(s, ep)
	}
	takeRowBufs(ep)
	if len(ep.arena)+need <= cap(ep.arena) {
		return
	}
	c := min(max(2*cap(ep.arena), len(ep.arena)+need, 4<<10), max(limit, len(ep.arena)+need))
	grown := make([]byte, len(ep.arena), c)
	copy(grown, ep.arena)
	ep.arena = grown
}

// sortedSessions lists the recordings in (session id, env id) order.
func (a *assembler) sortedSessions() []*session {
	out := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec().Less(out[j].rec()) })
	return out
}

// sessionFor returns the session of an event, creating it on first sight.
func (a *assembler) sessionFor(ev events.Event, at time.Time, pos uint64) *session {
	id, route := ev.Header()
	key := hive.Recording{SessionID: id, EnvID: route.EnvID}
	s := a.sessions[key]
	if s == nil {
		s = &session{
			id:        id,
			route:     route,
			status:    statusOpen,
			startedAt: at,
			episodes:  make(map[string]*episode),
			done:      make(map[string]struct{}),
			problems:  make(map[problemKind]int64),
			firstPos:  pos,
		}
		a.sessions[key] = s
		a.out.newSession(s, ev)
	}
	s.lastAt = at
	return s
}

func (a *assembler) problem(s *session, kind problemKind, format string, args ...any) {
	s.problems[kind]++
	a.problems.Add(1)
	a.out.problem(s, kind, fmt.Sprintf(format, args...))
}

// apply folds one event into the state. at is the event's recording time
// and pos its log position.
func (a *assembler) apply(ev events.Event, at time.Time, pos uint64) {
	a.applyClocked(ev, at, pos, false)
}

// applyClocked is apply of an event whose time is the recorder's own
// clock reading when recClock is set (or its log record says so).
func (a *assembler) applyClocked(ev events.Event, at time.Time, pos uint64, recClock bool) {
	ev, seq, logged := unsequence(ev)
	s := a.sessionFor(ev, at, pos)
	s.seq = max(s.seq, seq)
	if e, ok := ev.(*invalidEvent); ok {
		// A message of the stream that was no valid event: counted, and
		// nothing of it applied.
		a.problem(s, probInvalidEvent, "%s; skipped", e.detail)
		return
	}
	if recClock || logged {
		s.clocks |= clockRecorder
	} else {
		s.clocks |= clockEvent
	}
	if s.ended {
		// Only telemetry (the final snapshot, late window ones) and logs
		// are expected after a session's end; once its files are written
		// they go to further part files. Anything else is counted.
		switch e := ev.(type) {
		case *events.TelemetrySnapshot:
			a.telemetry(s, e, at)
			return
		case *events.Log:
			s.logs = append(s.logs, logRow{time: at, level: e.Level.String(), message: e.Message, source: e.Source})
			if s.finalTelemetry {
				a.out.sessionDone(s)
			}
			return
		}
		a.problem(s, probAfterEnd, "%s after the session ended", ev.Kind())
		return
	}
	if !s.started {
		a.notStarted(s, ev)
	}
	switch e := ev.(type) {
	case *events.EnvConnected, *events.ModelConnected:
		// No table of their own: kept as logs rows (schema.SourceEvent).
		a.eventLog(s, ev, at)
	case *events.SessionStarted:
		if s.started {
			a.problem(s, probDuplicateSession, "second SessionStarted")
			return
		}
		s.started = true
		s.startedAt = at
		s.envID = e.EnvID
		s.route = e.Route
	case *events.SessionEnded:
		s.totalSteps, s.totalEpisodes, s.hasTotals = e.TotalSteps, e.TotalEpisodes, true
		a.endSession(s, statusEnded, e.Reason, at)
		if s.sawFinalTelemetry {
			// The final snapshot came first (not the runtime's order, but
			// nothing else is to come).
			s.finalTelemetry = true
			a.out.sessionDone(s)
		}
	case *events.SessionFailed:
		a.endSession(s, statusFailed, e.Reason, at)
		// The final telemetry precedes SessionFailed.
		s.finalTelemetry = true
		a.out.sessionDone(s)
	case *events.Log:
		s.logs = append(s.logs, logRow{time: at, level: e.Level.String(), message: e.Message, source: e.Source})
		s.logBytes += logRowBytes + len(e.Message)
		a.logChunk(s)
	case *events.TelemetrySnapshot:
		a.telemetry(s, e, at)
		a.logChunk(s)
	case *events.EpisodeStarted:
		a.episodeStarted(s, e, at, pos)
	case *events.EpisodeCompleted:
		a.episodeCompleted(s, e, at)
	case *events.ActionReceived:
		a.actionReceived(s, e, at)
	case *events.StepCompleted:
		a.stepCompleted(s, e)
	case *events.ObservationEmitted:
		a.observationEmitted(s, e, at)
	}
}

// notStarted counts an event of a session that no SessionStarted opened
// (EnvConnected and ModelConnected may come first). The event is applied
// all the same. Every such event is counted; only the first is logged, as
// a session whose start is missing from the stream has nothing else.
func (a *assembler) notStarted(s *session, ev events.Event) {
	switch ev.(type) {
	case *events.SessionStarted, *events.EnvConnected, *events.ModelConnected:
		return
	}
	s.problems[probNotStarted]++
	a.problems.Add(1)
	if s.problems[probNotStarted] == 1 {
		a.out.problem(s, probNotStarted, fmt.Sprintf("%s before any SessionStarted of the session; it is recorded, "+
			"and it and every later event before a SessionStarted are counted in the session row but not logged", ev.Kind()))
	}
}

// laneOutOfRange counts an episode whose env_index is not a lane of the
// session: negative, or N or more once N is known.
func (a *assembler) laneOutOfRange(s *session, kind events.Kind, rid string, envIndex int32) {
	if envIndex < 0 || (s.numEnvs > 0 && envIndex >= s.numEnvs) {
		a.problem(s, probLaneOutOfRange, "%s for %q: env_index %d is not a lane of the session's %d", kind, rid, envIndex, s.numEnvs)
	}
}

// setNumEnvs notes the session's lane count n from a batch. The first
// time, it checks the episodes already open: a session's first
// EpisodeStarted events come before its first batch.
func (a *assembler) setNumEnvs(s *session, n int) {
	if n <= 0 || int(s.numEnvs) == n {
		return
	}
	first := s.numEnvs == 0
	s.numEnvs = int32(min(n, math.MaxInt32))
	if !first {
		return
	}
	for _, ep := range sortedOpen(s) {
		if ep.envIndex >= s.numEnvs {
			a.problem(s, probLaneOutOfRange, "EpisodeStarted for %q: env_index %d is not a lane of the session's %d", ep.recordID, ep.envIndex, s.numEnvs)
		}
	}
}

// Logs and telemetry of a running session are handed to the writer in a
// write of their own (no sessions row) once they hold logChunkRows rows or
// logChunkBytes bytes, so that a session with millions of log lines keeps
// them within bounded memory. The bounds are constants, not a share of the
// memory budget: recovery must cut the same writes as the run it replays.
const (
	logChunkRows  = 1 << 16
	logChunkBytes = 8 << 20
	// logRowBytes is what a log or telemetry row is counted beyond its
	// message.
	logRowBytes = 96
)

// logChunk hands a running session's logs and telemetry over once they
// reach the bounds.
func (a *assembler) logChunk(s *session) {
	if len(s.logs)+len(s.telemetry) >= logChunkRows || s.logBytes >= logChunkBytes {
		a.out.sessionDone(s)
	}
}

func (a *assembler) telemetry(s *session, e *events.TelemetrySnapshot, at time.Time) {
	h := e.Snapshot.Horizon.String()
	for _, r := range e.Snapshot.Rows {
		s.telemetry = append(s.telemetry, telemetryRow{time: at, horizon: h, row: r})
	}
	s.logBytes += logRowBytes * len(e.Snapshot.Rows)
	switch {
	case s.ended && s.finalTelemetry:
		// Late rows (a window snapshot in flight at the end): written as a
		// further part file of the session's telemetry.
		a.out.sessionDone(s)
	case e.Snapshot.Horizon == events.HorizonSession:
		s.sawFinalTelemetry = true
		if s.ended {
			s.finalTelemetry = true
			a.out.sessionDone(s)
		}
	}
}

// endSession finalises every episode of s: completed ones as completed,
// open ones as incomplete.
func (a *assembler) endSession(s *session, status, reason string, at time.Time) {
	if s.ended {
		a.problem(s, probAfterEnd, "second session end (%s)", status)
		return
	}
	s.ended = true
	s.status = status
	s.reason = reason
	s.endedAt = at
	a.closePending(s)
	a.finalizeCompleted(s)
	for _, ep := range sortedOpen(s) {
		a.finishEpisode(s, ep, episodeIncomplete)
	}
}

// finishOpen finalises every episode of a session that will get no more
// events (recovery after a crash, or Close), and the session itself.
func (a *assembler) finishOpen(s *session, status string, at time.Time) {
	if s.ended {
		if !s.finalTelemetry {
			s.finalTelemetry = true
			a.out.sessionDone(s)
		}
		return
	}
	a.endSession(s, status, "", at)
	s.finalTelemetry = true
	a.out.sessionDone(s)
}

func (a *assembler) episodeStarted(s *session, e *events.EpisodeStarted, at time.Time, pos uint64) {
	if _, dup := s.episodes[e.EpisodeRecordID]; dup || e.EpisodeRecordID == "" {
		a.problem(s, probDuplicateStart, "EpisodeStarted for %q (episode %s) which is already open or has no record id", e.EpisodeRecordID, e.EpisodeID)
		return
	}
	if _, dup := s.done[e.EpisodeRecordID]; dup {
		a.problem(s, probDuplicateStart, "EpisodeStarted for %q which was already recorded", e.EpisodeRecordID)
		return
	}
	a.laneOutOfRange(s, events.KindEpisodeStarted, e.EpisodeRecordID, e.EnvIndex)
	a.open++
	ep := &episode{
		id:        e.EpisodeID,
		recordID:  e.EpisodeRecordID,
		index:     e.EpisodeIndex,
		envIndex:  e.EnvIndex,
		autoReset: e.StartedFromAutoReset,
		startedAt: at,
		lastAt:    at,
		firstPos:  pos,
	}
	if t := s.adopt[e.EpisodeRecordID]; t != nil {
		// Recovery's catch-up: build into the restored episode.
		delete(s.adopt, e.EpisodeRecordID)
		*t = *ep
		ep = t
	}
	s.episodes[e.EpisodeRecordID] = ep
}

func (a *assembler) episodeCompleted(s *session, e *events.EpisodeCompleted, at time.Time) {
	ep := s.episodes[e.EpisodeRecordID]
	if ep == nil {
		if _, done := s.done[e.EpisodeRecordID]; done {
			if schema.RepeatedCompletion(e) {
				// rlmesh's env server reporting an episode a reset
				// interrupted: kept as it came, in the logs table.
				a.eventLog(s, e, at)
				return
			}
			a.problem(s, probDuplicateEnd, "EpisodeCompleted for %q, which was already completed", e.EpisodeRecordID)
		} else {
			a.problem(s, probUnknownEpisode, "EpisodeCompleted for %q (episode %s), which never started", e.EpisodeRecordID, e.EpisodeID)
		}
		return
	}
	if ep.completed {
		if schema.RepeatedCompletion(e) {
			a.eventLog(s, e, at)
			return
		}
		a.problem(s, probDuplicateEnd, "EpisodeCompleted for %q, which was already completed", e.EpisodeRecordID)
		return
	}
	a.laneOutOfRange(s, events.KindEpisodeCompleted, e.EpisodeRecordID, e.EnvIndex)
	ep.completed = true
	c := *e
	ep.completion = &c
	ep.endedAt = at
	ep.lastAt = at
	if n := len(ep.rows); n > 0 && ep.rows[n-1].step == ep.nextStep-1 {
		r := &ep.rows[n-1]
		r.isLast, r.terminated, r.truncated = true, e.Terminated, e.Truncated
	}
	s.toFinalize = append(s.toFinalize, ep)
}

// eventLog keeps an event that no table row holds (EnvConnected,
// ModelConnected, a repeated EpisodeCompleted) as a logs row with source
// schema.SourceEvent, at the event's time.
func (a *assembler) eventLog(s *session, ev events.Event, at time.Time) {
	msg, ok := schema.EventLogMessage(ev)
	if !ok {
		return
	}
	src := schema.SourceEvent
	s.logs = append(s.logs, logRow{time: at, level: events.LogInfo.String(), message: msg, source: &src})
	s.logBytes += logRowBytes + len(msg)
	a.logChunk(s)
}

// layoutFor compiles spec, reusing the session's cached layout while the
// spec is unchanged.
func (a *assembler) layoutFor(s *session, spec *spacesv1.SpaceSpec, obs bool) (*schema.Layout, bool) {
	cached, layout := s.actSpec, s.actLayout
	if obs {
		cached, layout = s.obsSpec, s.obsLayout
	}
	if spec == nil {
		return nil, false
	}
	if layout != nil && spec == cached {
		return layout, true
	}
	if layout != nil && proto.Equal(spec, cached) {
		// The same space decoded anew (by another decoder, or restored
		// from a snapshot): keep this pointer so that the next events,
		// which share it, compare by pointer.
		if obs {
			s.obsSpec = spec
		} else {
			s.actSpec = spec
		}
		return layout, true
	}
	l, err := schema.Compile(spec)
	if err != nil {
		a.problem(s, probBadSpec, "invalid space spec: %v", err)
		return nil, false
	}
	js, _ := schema.SpecJSON(spec)
	if obs {
		s.obsSpec, s.obsLayout, s.obsSpecJSON = spec, l, string(js)
	} else {
		s.actSpec, s.actLayout, s.actSpecJSON = spec, l, string(js)
	}
	return l, true
}

func (a *assembler) split(s *session, kind string, step int64, layout *schema.Layout, slabs [][]byte, n int) ([][][]byte, bool) {
	lanes, err := blob.SplitLanesInto(s.split, layout, slabs, n)
	if err != nil {
		a.problem(s, probBadSlab, "%s at step %d: %v", kind, step, err)
		return nil, false
	}
	s.split = lanes
	return lanes, true
}

// episodeOn returns the open episode rid names (nil: none), as
// s.episodes[rid], for a step event's lane i.
func (s *session) episodeOn(i int, rid string) *episode {
	if i < len(s.lanes) {
		if l := &s.lanes[i]; l.ep != nil && !l.ep.gone && l.epRecord == rid {
			return l.ep
		}
	}
	ep := s.episodes[rid]
	if ep != nil {
		l := s.lane(i)
		l.ep, l.epRecord = ep, rid
	}
	return ep
}

func (s *session) lane(i int) *lane {
	for len(s.lanes) <= i {
		s.lanes = append(s.lanes, lane{})
	}
	return &s.lanes[i]
}

func (a *assembler) observationEmitted(s *session, e *events.ObservationEmitted, at time.Time) {
	n := int(e.NumEnvs)
	defer a.finalizeCompleted(s)
	if len(e.EpisodeRecordIDs) != n {
		a.problem(s, probLaneCount, "ObservationEmitted at step %d: %d record ids for num_envs %d", e.Step, len(e.EpisodeRecordIDs), n)
		return
	}
	a.setNumEnvs(s, n)
	if e.Observation == nil {
		a.problem(s, probMissingPayload, "ObservationEmitted at step %d has no observation", e.Step)
		return
	}
	if e.ObservationSpace == nil {
		a.problem(s, probNoSpace, "ObservationEmitted at step %d carries no observation space (the runtime sends one with every batch); its observation is not recorded", e.Step)
		return
	}
	layout, ok := a.layoutFor(s, e.ObservationSpace, true)
	if !ok {
		return
	}
	lanes, ok := a.split(s, "observation", e.Step, layout, e.Observation, n)
	if !ok {
		return
	}
	for i, rid := range e.EpisodeRecordIDs {
		if rid == "" {
			continue
		}
		ep := s.episodeOn(i, rid)
		if ep == nil {
			if _, done := s.done[rid]; !done {
				a.problem(s, probUnknownEpisode, "observation at step %d for lane %d names %q, which never started", e.Step, i, rid)
			}
			continue
		}
		if ep.completed {
			// An observation after completion is the terminal observation.
			if ep.finalObs == nil {
				ep.finalObs = blob.Append(make([]byte, 0, blobSize(lanes[i])), lanes[i])
			}
			continue
		}
		l := s.lane(i)
		l.obs = blob.Append(l.obs[:0], lanes[i])
		l.obsRecord = rid
		l.hasObs = true
		ep.lastAt = at
	}
}

func blobSize(leaves [][]byte) int {
	n := 0
	for _, l := range leaves {
		n += len(l) + 11
	}
	return n
}

func (a *assembler) actionReceived(s *session, e *events.ActionReceived, at time.Time) {
	a.closePending(s)
	n := len(e.EpisodeRecordIDs)
	a.setNumEnvs(s, n)
	if e.Action == nil {
		a.problem(s, probMissingPayload, "ActionReceived at step %d has no action", e.Step)
		return
	}
	if e.ActionSpace == nil {
		a.problem(s, probNoSpace, "ActionReceived at step %d carries no action space (the runtime sends one with every batch); its steps are not recorded", e.Step)
		return
	}
	layout, ok := a.layoutFor(s, e.ActionSpace, false)
	if !ok {
		return
	}
	lanes, ok := a.split(s, "action", e.Step, layout, e.Action, n)
	if !ok {
		return
	}
	if cap(s.pending) < n {
		s.pending = make([]*episode, n)
	}
	s.pending = s.pending[:n]
	s.havePending = true
	for i, rid := range e.EpisodeRecordIDs {
		s.pending[i] = nil
		var ep *episode
		if rid != "" {
			ep = s.episodeOn(i, rid)
		}
		if ep == nil || ep.completed {
			// A step that belongs to no episode: the lane has none, or
			// (under NEXT_STEP autoreset) it still names the episode that
			// completed on the previous step.
			s.droppedSteps++
			if ep == nil && rid != "" {
				if _, done := s.done[rid]; !done {
					a.problem(s, probUnknownEpisode, "action at step %d for lane %d names %q, which never started", e.Step, i, rid)
				}
			}
			continue
		}
		l := s.lane(i)
		need := blob.Size(lanes[i])
		if l.hasObs && l.obsRecord == rid {
			need += len(l.obs)
		}
		a.reserve(s, ep, need)
		row := stepRow{
			step:        ep.nextStep,
			sessionStep: e.Step,
			obsLen:      -1,
			isFirst:     ep.nextStep == 0,
			recordedAt:  stampOf(at),
		}
		if l.hasObs && l.obsRecord == rid {
			row.obsOff = len(ep.arena)
			ep.arena = append(ep.arena, l.obs...)
			row.obsLen = len(l.obs)
			// The observation is consumed by this action.
			l.hasObs = false
		}
		row.actOff = len(ep.arena)
		ep.arena = blob.Append(ep.arena, lanes[i])
		row.actLen = len(ep.arena) - row.actOff
		ep.rows = append(ep.rows, row)
		ep.nextStep++
		ep.stepsRecorded++
		ep.lastAt = at
		s.stepsRecorded++
		s.pending[i] = ep
	}
}

// closePending counts a previous action whose StepCompleted never came.
func (a *assembler) closePending(s *session) {
	if !s.havePending {
		return
	}
	s.havePending = false
	for _, ep := range s.pending {
		if ep != nil {
			a.problem(s, probMissingReward, "a step of %s got no StepCompleted; its reward is recorded as 0", ep.recordID)
			return
		}
	}
}

func (a *assembler) stepCompleted(s *session, e *events.StepCompleted) {
	if !s.havePending {
		a.problem(s, probRewardWithout, "StepCompleted at step %d without a preceding ActionReceived", e.Step)
		return
	}
	s.havePending = false
	// An empty vector means every reward is 0 (RLMESH.md §4a); rows start at 0.
	if len(e.Rewards) != 0 && len(e.Rewards) != len(s.pending) {
		a.problem(s, probLaneCount, "StepCompleted at step %d: %d rewards for %d lanes", e.Step, len(e.Rewards), len(s.pending))
	}
	for i, ep := range s.pending {
		if ep == nil || i >= len(e.Rewards) {
			continue
		}
		r := e.Rewards[i]
		ep.rows[len(ep.rows)-1].reward = r
		ep.rewardSum += r
	}
}

// finalizeCompleted hands every completed episode to the output.
func (a *assembler) finalizeCompleted(s *session) {
	for _, ep := range s.toFinalize {
		a.finishEpisode(s, ep, episodeCompleted)
	}
	s.toFinalize = s.toFinalize[:0]
}

func (a *assembler) finishEpisode(s *session, ep *episode, status string) {
	if _, ok := s.episodes[ep.recordID]; !ok {
		return
	}
	delete(s.episodes, ep.recordID)
	ep.gone = true
	a.open--
	s.done[ep.recordID] = struct{}{}
	if ep.endedAt.IsZero() {
		ep.endedAt = ep.lastAt
	}
	s.episodesRecorded++
	a.out.episodeDone(s, ep, status)
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
