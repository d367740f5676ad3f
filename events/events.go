// Package events defines the rlmesh runtime's hook events as Go values, the
// Hooks interface a recorder implements, and the wire form of events: each
// Event converts losslessly to and from an eventsv1.Event protobuf message,
// and a stream of events is a sequence of length-delimited (varint-prefixed)
// eventsv1.Event messages.
//
// The event types mirror the runtime's event definition field for field.
// Payloads (actions and observations) are N-lane batch slabs, one []byte per
// fundamental leaf in canonical pre-order (see package blob). A nil leaf list
// means the runtime sent no payload; a non-nil empty list means it sent a
// value with zero leaves.
//
// Optional values: where the runtime's event has an Option (rlmesh 0.1's
// seed, trial index, success, lane, per-step times), the Go field is an
// Option[T], a value with a presence flag, not a pointer: events stay
// comparable (RuntimeEnvContext is a map key and compared with ==), and
// decoding one costs no allocation. Absent and present-with-zero are
// different values and both survive every conversion and codec.
//
// Ownership: a Hooks implementation must not retain an event, or any slice
// reachable from it, after its method returns; the caller may reuse them.
package events

import (
	"strconv"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Kind identifies an event type. Values equal the field numbers of the
// eventsv1.Event kind oneof and are persisted: do not change them.
type Kind uint8

const (
	KindEnvConnected       Kind = 10
	KindModelConnected     Kind = 11
	KindSessionStarted     Kind = 12
	KindSessionEnded       Kind = 13
	KindSessionFailed      Kind = 14
	KindLog                Kind = 15
	KindEpisodeStarted     Kind = 16
	KindEpisodeCompleted   Kind = 17
	KindActionReceived     Kind = 18
	KindStepCompleted      Kind = 19
	KindObservationEmitted Kind = 20
	KindTelemetrySnapshot  Kind = 21
	KindRelayAdvisory      Kind = 22
)

// kindLast is the highest Kind this version knows.
const kindLast = KindRelayAdvisory

var kindNames = map[Kind]string{
	KindEnvConnected:       "EnvConnected",
	KindModelConnected:     "ModelConnected",
	KindSessionStarted:     "SessionStarted",
	KindSessionEnded:       "SessionEnded",
	KindSessionFailed:      "SessionFailed",
	KindLog:                "Log",
	KindEpisodeStarted:     "EpisodeStarted",
	KindEpisodeCompleted:   "EpisodeCompleted",
	KindActionReceived:     "ActionReceived",
	KindStepCompleted:      "StepCompleted",
	KindObservationEmitted: "ObservationEmitted",
	KindTelemetrySnapshot:  "TelemetrySnapshot",
	KindRelayAdvisory:      "RelayAdvisory",
}

// String returns the event type name, e.g. "ActionReceived".
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is implemented by a pointer to each event type.
type Event interface {
	// Kind returns the event type.
	Kind() Kind
	// Header returns the session and route every event carries.
	Header() (sessionID string, route RuntimeEnvContext)
}

// Option is a value the runtime may leave out (a Rust Option): Set
// reports whether it is present. The zero Option is absent.
type Option[T any] struct {
	Value T
	Set   bool
}

// Some returns the present Option holding v.
func Some[T any](v T) Option[T] { return Option[T]{Value: v, Set: true} }

// Get returns the value and whether it is present.
func (o Option[T]) Get() (T, bool) { return o.Value, o.Set }

// RuntimeEnvContext names a route: the environment and model it connects.
//
// Lane (rlmesh 0.1) is set on the per-lane events of a lane-served env,
// one whose every lane is its own group with its own reset, predict and
// step loop: the lane the event belongs to. It is absent on session-level
// events (SessionStarted, SessionEnded, SessionFailed), on every
// TelemetrySnapshot and for a whole-env route. A route's lanes share its
// EnvID: a recording is still named by (session id, EnvID), whatever the
// lane.
type RuntimeEnvContext struct {
	EnvID            string
	EnvComponentID   string
	ModelComponentID string
	Lane             Option[uint32]
}

// EnvConnected reports that the environment connected. The open-source
// driver does not emit it; a managed runner may, before SessionStarted.
type EnvConnected struct {
	SessionID string
	Route     RuntimeEnvContext
	EnvID     string
}

// ModelConnected reports that the model connected (see EnvConnected).
type ModelConnected struct {
	SessionID string
	Route     RuntimeEnvContext
}

// SessionStarted opens a session: one run of a route.
type SessionStarted struct {
	SessionID string
	Route     RuntimeEnvContext
	EnvID     string
}

// SessionEnded closes a session that ran to its end.
type SessionEnded struct {
	SessionID     string
	Route         RuntimeEnvContext
	Reason        string
	TotalSteps    int64
	TotalEpisodes int64
}

// SessionFailed closes a session that failed; no SessionEnded follows.
type SessionFailed struct {
	SessionID string
	Route     RuntimeEnvContext
	Reason    string
}

// LogLevel is a log event's severity. Values are persisted: do not change.
type LogLevel uint8

const (
	LogDebug LogLevel = 1
	LogInfo  LogLevel = 2
	LogWarn  LogLevel = 3
	LogError LogLevel = 4
)

// String returns the level in lower case, as the logs table stores it.
func (l LogLevel) String() string {
	switch l {
	case LogDebug:
		return "debug"
	case LogInfo:
		return "info"
	case LogWarn:
		return "warn"
	case LogError:
		return "error"
	}
	return "LogLevel(" + strconv.Itoa(int(l)) + ")"
}

// Log is a log line from the runtime. Source is nil when the runtime gave
// none.
type Log struct {
	SessionID string
	Route     RuntimeEnvContext
	Level     LogLevel
	Message   string
	Source    *string
}

// EpisodeStarted opens an episode on one lane. Seed is the episode's
// reset seed when the runtime sent one; TrialIndex the trial ordinal the
// episode walks (the runtime's trial_index_base plus its episode-start
// position), absent under NEXT_STEP autoreset, where the runtime mints
// none. Both are rlmesh 0.1 fields, absent from older producers.
type EpisodeStarted struct {
	SessionID            string
	Route                RuntimeEnvContext
	EpisodeID            string
	EpisodeRecordID      string
	EpisodeIndex         int64
	EnvIndex             int32
	StartedFromAutoReset bool
	Seed                 Option[int64]
	TrialIndex           Option[uint64]
}

// EpisodeCompleted closes an episode. FinalInfo is nil when the runtime
// sent none.
//
// The rlmesh 0.1 fields, absent from older producers: Success is the
// runtime's own reading of the outcome (is_success, success or
// task_success in the final info, first present wins, numbers by
// truthiness), absent when the env reported no such key; Seed and
// TrialIndex repeat the EpisodeStarted ones; PredictMs and StepMs are the
// per-step means over the episode of the predict and env-step wall time in
// milliseconds, absent for an episode that completed before its first
// step.
type EpisodeCompleted struct {
	SessionID        string
	Route            RuntimeEnvContext
	EpisodeID        string
	EpisodeRecordID  string
	EpisodeIndex     int64
	EnvIndex         int32
	StepCount        int64
	CumulativeReward float64
	Terminated       bool
	Truncated        bool
	DurationMs       int64
	FinalInfo        *spacesv1.MetaMap
	Success          Option[bool]
	Seed             Option[int64]
	TrialIndex       Option[uint64]
	PredictMs        Option[float64]
	StepMs           Option[float64]
}

// ActionReceived carries the N-lane action batch the model returned. Step is
// lane 0's step counter after this action; EpisodeIDs and EpisodeRecordIDs
// name each lane's episode before this step ("" for a lane with none).
type ActionReceived struct {
	SessionID        string
	Route            RuntimeEnvContext
	EpisodeID        string
	EpisodeRecordID  string
	EpisodeIDs       []string
	EpisodeRecordIDs []string
	Step             int64
	EnvIndex         int32
	ActionSpace      *spacesv1.SpaceSpec
	// Action holds one batch slab per leaf; nil when the runtime sent none.
	// It is what the env receives: after transform_action.
	Action [][]byte
	// RawAction (rlmesh 0.1) is the model's action before transform_action
	// ran, in the same form; nil when it equals Action (a producer leaves
	// it out then: no doubled bytes) or the runtime sent none.
	RawAction [][]byte
}

// StepCompleted carries the rewards of the step, one per lane. Its ids are
// lane 0's only: map rewards to episodes with the ActionReceived of the
// same group (the same Route.Lane; in rc.5 order, the one just before).
//
// The rlmesh 0.1 fields (empty or absent from older producers): Infos is
// the step's infos, nil when a lane rolled or none came. Terminated,
// Truncated and AutoresetRoll are per lane, aligned with Rewards: whether
// this step ended the lane's episode in a terminal state or by truncation
// (env-reported or a runtime cap), and whether it is the lane's NEXT_STEP
// autoreset roll, a step of no episode. PredictMs is the wall time of the
// predicts that landed since the group's previous step (zero for a step
// served from chunk replay), StepMs the wall time of this step's env round
// trip, both in milliseconds and both shared by every lane of the group.
type StepCompleted struct {
	SessionID       string
	Route           RuntimeEnvContext
	EpisodeID       string
	EpisodeRecordID string
	Step            int64
	EnvIndex        int32
	Rewards         []float64
	Infos           *spacesv1.MetaMap
	Terminated      []bool
	Truncated       []bool
	AutoresetRoll   []bool
	PredictMs       Option[float64]
	StepMs          Option[float64]
}

// ObservationEmitted carries an N-lane observation batch (N = NumEnvs; in
// rlmesh 0.1 the group width: 1 for a lane of a lane-served env).
type ObservationEmitted struct {
	SessionID        string
	Route            RuntimeEnvContext
	EpisodeID        string
	EpisodeRecordID  string
	EpisodeIDs       []string
	EpisodeRecordIDs []string
	Step             int64
	EnvIndex         int32
	IsReset          bool
	NumEnvs          uint32
	ObservationSpace *spacesv1.SpaceSpec
	// Observation holds one batch slab per leaf; nil when the runtime sent
	// none. It is what the model receives: after transform_observation.
	Observation [][]byte
	// RawObservation (rlmesh 0.1) is the env's observation before
	// transform_observation ran; nil when it equals Observation (a
	// producer leaves it out then) or the runtime sent none.
	RawObservation [][]byte
	// Infos (rlmesh 0.1) is the env's reset infos when IsReset (on a
	// NEXT_STEP roll, the roll's infos); nil when none came.
	Infos *spacesv1.MetaMap
}

// TelemetryHorizon tells a window snapshot from the cumulative session one.
// Values are persisted: do not change.
type TelemetryHorizon uint8

const (
	HorizonWindow  TelemetryHorizon = 1
	HorizonSession TelemetryHorizon = 2
)

// String returns "window" or "session", as the telemetry table stores it.
func (h TelemetryHorizon) String() string {
	switch h {
	case HorizonWindow:
		return "window"
	case HorizonSession:
		return "session"
	}
	return "TelemetryHorizon(" + strconv.Itoa(int(h)) + ")"
}

// MetricKind is what a telemetry metric measures. Values are persisted: do
// not change.
type MetricKind uint8

const (
	MetricDurationMs MetricKind = 1
	MetricBytes      MetricKind = 2
	MetricCount      MetricKind = 3
)

// String returns "duration_ms", "bytes" or "count".
func (k MetricKind) String() string {
	switch k {
	case MetricDurationMs:
		return "duration_ms"
	case MetricBytes:
		return "bytes"
	case MetricCount:
		return "count"
	}
	return "MetricKind(" + strconv.Itoa(int(k)) + ")"
}

// TelemetryRow is one metric of one operation of one component.
type TelemetryRow struct {
	Op        string
	Component string
	Metric    string
	Kind      MetricKind
	Count     uint64
	Avg       float64
	P50       float64
	P95       float64
	P99       float64
}

// Snapshot is a telemetry snapshot: a window tick or the whole session.
type Snapshot struct {
	Horizon TelemetryHorizon
	Rows    []TelemetryRow
}

// TelemetrySnapshot carries a snapshot with the route and session it
// belongs to. It runs from a separate task and may interleave with the
// session's other events, and arrive after its end.
type TelemetrySnapshot struct {
	SessionID string
	Route     RuntimeEnvContext
	Snapshot  Snapshot
}

// RelayLeg is the direction of a payload a relay policy converted. Values
// are persisted: do not change.
type RelayLeg uint8

const (
	// LegEnvToModel is the env contract or an observation, on its way to
	// the model.
	LegEnvToModel RelayLeg = 1
	// LegModelToEnv is an action, on its way to the env.
	LegModelToEnv RelayLeg = 2
)

// String returns "env_to_model" or "model_to_env".
func (l RelayLeg) String() string {
	switch l {
	case LegEnvToModel:
		return "env_to_model"
	case LegModelToEnv:
		return "model_to_env"
	}
	return "RelayLeg(" + strconv.Itoa(int(l)) + ")"
}

// AdvisorySeverity is how much a relay advisory matters. Values are
// persisted: do not change.
type AdvisorySeverity uint8

const (
	SeverityInfo    AdvisorySeverity = 1
	SeverityCaution AdvisorySeverity = 2
)

// String returns "info" or "caution".
func (s AdvisorySeverity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityCaution:
		return "caution"
	}
	return "AdvisorySeverity(" + strconv.Itoa(int(s)) + ")"
}

// RelayAdvisory (rlmesh 0.1) reports that a relay policy converted a
// payload for a peer that could not decode it as sent, on Leg; the
// runtime delivers each distinct advisory once. rlmesh's default policy
// never converts, so a stock runtime never sends it.
type RelayAdvisory struct {
	SessionID string
	Route     RuntimeEnvContext
	Leg       RelayLeg
	Severity  AdvisorySeverity
	Message   string
}

func (*EnvConnected) Kind() Kind       { return KindEnvConnected }
func (*ModelConnected) Kind() Kind     { return KindModelConnected }
func (*SessionStarted) Kind() Kind     { return KindSessionStarted }
func (*SessionEnded) Kind() Kind       { return KindSessionEnded }
func (*SessionFailed) Kind() Kind      { return KindSessionFailed }
func (*Log) Kind() Kind                { return KindLog }
func (*EpisodeStarted) Kind() Kind     { return KindEpisodeStarted }
func (*EpisodeCompleted) Kind() Kind   { return KindEpisodeCompleted }
func (*ActionReceived) Kind() Kind     { return KindActionReceived }
func (*StepCompleted) Kind() Kind      { return KindStepCompleted }
func (*ObservationEmitted) Kind() Kind { return KindObservationEmitted }
func (*TelemetrySnapshot) Kind() Kind  { return KindTelemetrySnapshot }
func (*RelayAdvisory) Kind() Kind      { return KindRelayAdvisory }

func (e *EnvConnected) Header() (string, RuntimeEnvContext)       { return e.SessionID, e.Route }
func (e *ModelConnected) Header() (string, RuntimeEnvContext)     { return e.SessionID, e.Route }
func (e *SessionStarted) Header() (string, RuntimeEnvContext)     { return e.SessionID, e.Route }
func (e *SessionEnded) Header() (string, RuntimeEnvContext)       { return e.SessionID, e.Route }
func (e *SessionFailed) Header() (string, RuntimeEnvContext)      { return e.SessionID, e.Route }
func (e *Log) Header() (string, RuntimeEnvContext)                { return e.SessionID, e.Route }
func (e *EpisodeStarted) Header() (string, RuntimeEnvContext)     { return e.SessionID, e.Route }
func (e *EpisodeCompleted) Header() (string, RuntimeEnvContext)   { return e.SessionID, e.Route }
func (e *ActionReceived) Header() (string, RuntimeEnvContext)     { return e.SessionID, e.Route }
func (e *StepCompleted) Header() (string, RuntimeEnvContext)      { return e.SessionID, e.Route }
func (e *ObservationEmitted) Header() (string, RuntimeEnvContext) { return e.SessionID, e.Route }
func (e *TelemetrySnapshot) Header() (string, RuntimeEnvContext)  { return e.SessionID, e.Route }
func (e *RelayAdvisory) Header() (string, RuntimeEnvContext)      { return e.SessionID, e.Route }
