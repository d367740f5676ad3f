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
)

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

// RuntimeEnvContext names a route: the environment and model it connects.
type RuntimeEnvContext struct {
	EnvID            string
	EnvComponentID   string
	ModelComponentID string
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

// EpisodeStarted opens an episode on one lane.
type EpisodeStarted struct {
	SessionID            string
	Route                RuntimeEnvContext
	EpisodeID            string
	EpisodeRecordID      string
	EpisodeIndex         int64
	EnvIndex             int32
	StartedFromAutoReset bool
}

// EpisodeCompleted closes an episode. FinalInfo is nil when the runtime
// sent none.
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
	Action [][]byte
}

// StepCompleted carries the rewards of the step, one per lane. Its ids are
// lane 0's only: map rewards to episodes with the preceding ActionReceived.
type StepCompleted struct {
	SessionID       string
	Route           RuntimeEnvContext
	EpisodeID       string
	EpisodeRecordID string
	Step            int64
	EnvIndex        int32
	Rewards         []float64
}

// ObservationEmitted carries an N-lane observation batch (N = NumEnvs).
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
	// none.
	Observation [][]byte
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
