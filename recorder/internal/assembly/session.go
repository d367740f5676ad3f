package assembly

import (
	"sort"
	"strconv"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// The assembly state: sessions, their lanes and episodes, and the rows
// an open episode buffers.

// stepRow is one step of one episode. Its blobs are sub-slices of the
// episode's arena. It holds no pointer (its time is a stamp), so that an
// episode's rows cost the garbage collector nothing to scan and appending
// one no write barrier; its arena references are 32-bit (arenaRef), which
// keeps it at 112 bytes (it was 200 with int offsets): every row is
// written once and copied when its episode's slice grows.
type stepRow struct {
	step, sessionStep int64
	reward            float64
	predictMs, stepMs float64
	recordedAt        stamp

	// obs is the observation the action was computed from (absent: none,
	// null), act the action, both in blob form.
	obs, act arenaRef
	// Schema version 3: the step's infos (JSON text) and the lane's raw
	// payloads (blob form, only where they differ from the transformed
	// ones); obsInfos, the infos of the row's observation
	// (ObservationEmitted.infos, JSON text). The step's times are
	// predictMs and stepMs when the runtime sent them.
	infos, rawObs, rawAct arenaRef
	obsInfos              arenaRef

	isFirst, isLast     bool
	terminated          bool
	truncated           bool
	hasPredict, hasStep bool
}

// arenaRef is an optional byte string in an episode's arena: absent (null)
// unless set, which the zero value is not. Its offset and length are
// 32-bit: an arena holds at most maxStreamChunk bytes of rows before a
// row (reserve streams them out first) and a row at most the six payloads
// its events carry, each no longer than a log record (wal.MaxRecordSize,
// 256 MiB; its JSON infos at most 4/3 of that), so every offset is below
// 2 GiB.
type arenaRef struct {
	off uint32
	// n1 is the length plus one; 0: absent.
	n1 uint32
}

// set reports whether r is present.
func (r arenaRef) set() bool { return r.n1 != 0 }

// bytes returns the bytes r refers to in arena, nil when absent.
func (r arenaRef) bytes(arena []byte) []byte {
	if r.n1 == 0 {
		return nil
	}
	end := r.off + r.n1 - 1
	return arena[r.off:end:end]
}

// arenaSpan is the reference of arena[off:], present.
func arenaSpan(arena []byte, off int) arenaRef {
	return arenaRef{off: uint32(off), n1: uint32(len(arena)-off) + 1}
}

// appendRef appends b to ep's arena and returns its reference.
func appendRef(ep *episode, b []byte) arenaRef {
	off := len(ep.arena)
	ep.arena = append(ep.arena, b...)
	return arenaSpan(ep.arena, off)
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

	// rlmesh 0.1: the seed and trial index of its EpisodeStarted, and its
	// route's lane (a lane-served env's).
	seed  events.Option[int64]
	trial events.Option[uint64]
	route events.Option[uint32]

	// flagged is set once a StepCompleted carried per-lane flags for one
	// of its steps (rlmesh 0.1); flagEnded once they said that step ended
	// it, with how (flagTerminated, flagTruncated). Its completion is
	// checked against them (steps_flags.go).
	flagged, flagEnded            bool
	flagTerminated, flagTruncated bool

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
	// rawObs is the lane's raw (pre-transform) observation in blob form,
	// when it came and differs from obs (rlmesh 0.1).
	rawObs    []byte
	hasRawObs bool
	// obsInfos is the infos of the lane's last observation as JSON text
	// (rlmesh 0.1 sends them with a reset observation), when it had any.
	obsInfos    []byte
	hasObsInfos bool

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
	// probStepFlags: rlmesh 0.1's per-lane terminated, truncated and
	// autoreset_roll flags of a StepCompleted disagree with the
	// episode's completion (or its absence).
	probStepFlags problemKind = "step_flags_disagree"
)

// session is the assembly state of one recording: one route run, named by
// its session id and its route's env id (hive.Recording). Several
// recordings may share a session id.
type session struct {
	// run is the recording's run identity and the content hashes of its
	// last numbered events (run.go).
	run runState

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

	// whole is the step state of a whole-env route's lanes (every
	// ActionReceived without a route lane); byLane that of each lane of a
	// lane-served env (rlmesh 0.1), indexed by route lane, whose
	// ActionReceived and StepCompleted pairs interleave.
	whole  stepGroup
	byLane []stepGroup

	// surplusSteps counts lane-steps of surplus episodes (rlmesh 0.1:
	// episodes of lanes beyond the max_episodes budget, which never
	// start or complete); they are also in droppedSteps.
	surplusSteps int64
	// v01 is set once the recording showed rlmesh 0.1's events (per-lane
	// flags on a StepCompleted, or a route lane). heldProblems and
	// heldSteps count the unknown ids seen before, and their lane-steps:
	// counted as problems until then, surplus episodes once v01 is set
	// (unknownEpisode).
	v01          bool
	heldProblems int64
	heldSteps    int64

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

	// lane0 is the last step recorded in its lane 0 episode (repeat.go),
	// when hasLane0; it is kept beside the state snapshots hold.
	lane0    lane0Step
	hasLane0 bool

	// seq is the highest producer sequence number among the recording's
	// logged events (sequence.go); 0 when none carried one.
	seq uint64

	// clocks says whose clocks the recording's event times were:
	// clockEvent and clockRecorder bits (the sessions row's clock).
	clocks uint8

	// writes counts the session's file writes handed to the writer.
	writes int
	// rowDone is set once the sessions row is handed to the writer (the
	// first write at or after the end); logBytes counts what logs and
	// telemetry hold, which a write of their own hands over past
	// logChunkBytes or logChunkRows (logChunk).
	rowDone  bool
	logBytes int
	// logRows and teleRows count the log and telemetry rows handed to
	// the writer so far.
	logRows, teleRows int64

	// scratch for lane splitting (the payload's, the raw payload's) and
	// for a step's infos JSON
	split    [][][]byte
	rawSplit [][][]byte
	infosBuf []byte

	// adopt, in recovery's catch-up (catchup.go) only, maps the record
	// ids of restored episodes to rebuild to the episodes to build into.
	adopt map[string]*episode
}

// Bits of session.clocks: an event came with its time (clockEvent), an
// event was stamped with the recorder's clock (clockRecorder). They are
// kept in snapshots (logrec.Session's clocks field): do not change them.
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

// stepGroup is the step state of one group of lanes: the episodes whose
// rows await the rewards of the group's last ActionReceived.
type stepGroup struct {
	// pending holds, per lane of the last ActionReceived, the episode
	// whose row awaits its reward (nil if the lane's step was dropped).
	pending []*episode
	// rolled marks, per lane, a step dropped as its episode's NEXT_STEP
	// roll (the flags of the step before ended it).
	rolled []bool
	have   bool
}

type logRow struct {
	time    time.Time
	level   string
	message string
	source  *string
	lane    *int64 // the Log event's route lane (rlmesh 0.1)
}

// routeLane is a route's lane as a nullable column value.
func routeLane(route events.RuntimeEnvContext) *int64 {
	if l, ok := route.Lane.Get(); ok {
		v := int64(l)
		return &v
	}
	return nil
}

type telemetryRow struct {
	time    time.Time
	horizon string
	row     events.TelemetryRow
}

// runState is a recording's run identity in the assembler.
type runState struct {
	// nonce is the first run nonce its events carried (nil: none).
	nonce []byte
	// hashes are the content hashes of its last numbered events, kept
	// only while recovery replays the log under WithResume.
	hashes runid.Window
	// chain is the content chain of its events numbered from 1
	// (runid.Chain): what a ROOT holds of its producer's stream.
	chain runid.Chain
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

// probRepeatedStep is part of the on-disk format (problem_summary): do
// not change it.
const probRepeatedStep problemKind = "repeated_step"

// isRepeat reports whether a problem of kind drops an event that repeats
// what its recording already has.
func isRepeat(kind problemKind) bool {
	return kind == probRepeatedStep || kind == probDuplicateSession || kind == probAfterEnd
}

// Session and episode statuses, as the tables store them.
const (
	statusOpen    = "open"
	statusEnded   = "ended"
	statusFailed  = "failed"
	statusCrashed = "crashed"

	episodeCompleted  = "completed"
	episodeIncomplete = "incomplete"
)

// lane0Step is the last step recorded in a recording's lane 0 episode.
type lane0Step struct {
	recordID string
	step     int64
}

// isDone reports whether rid names an episode of s already finalised.
func (s *session) isDone(rid string) bool {
	_, ok := s.done[rid]
	return ok
}

func (s *session) lane(i int) *lane {
	for len(s.lanes) <= i {
		s.lanes = append(s.lanes, lane{})
	}
	return &s.lanes[i]
}
