package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rlrec/rlrec/events"
)

// Events kept in the logs table
//
// Some hook events have no table of their own, and no row of another
// table would hold them: EnvConnected and ModelConnected (which a managed
// runner may send before SessionStarted), and the repeated EpisodeCompleted
// that rlmesh's env server sends for an episode a runtime cap truncated
// under disabled autoreset (the episodes row keeps the first completion;
// see RepeatedCompletion). They are kept as rows of the logs table with
// source SourceEvent, level "info", at the event's time, and a message
// that holds the whole event: its kind, a space, and its fields as a JSON
// object with the wire form's field names:
//
//	EnvConnected {"env_id":"0190..."}
//	ModelConnected {}
//	EpisodeCompleted {"episode_id":"0190...","episode_record_id":"ep-000001","episode_index":1,
//	  "env_index":0,"step_count":100,"cumulative_reward":12.5,"terminated":false,
//	  "truncated":true,"duration_ms":40}
//
// (one line; a cumulative_reward that is NaN or infinite is the JSON
// string "NaN", "Infinity" or "-Infinity"). A RelayAdvisory (rlmesh 0.1:
// a relay policy converted a payload) is kept the same way, at level
// "info" for an info advisory and "warn" for a caution (EventLogLevel):
//
//	RelayAdvisory {"leg":"env_to_model","severity":"caution","message":"..."}
//
// with "lane" added when the event's route named one. rlrec replay re-emits them as
// the events they were, and rlrec inspect explains them. The format is
// part of the recorded output: do not change it. An ActionReceived that no
// StepCompleted followed is kept the same way, one row per lane
// (UnfinishedAction).

// SourceEvent is the logs table's source of rows that hold a hook event.
const SourceEvent = "rlrec/event"

// ErrEventLog is returned by ParseEventLog for a message that holds no
// event.
var ErrEventLog = errors.New("schema: not an event log message")

// eventLogEpisode is the JSON of a repeated EpisodeCompleted.
type eventLogEpisode struct {
	EpisodeID        string    `json:"episode_id"`
	EpisodeRecordID  string    `json:"episode_record_id"`
	EpisodeIndex     int64     `json:"episode_index"`
	EnvIndex         int32     `json:"env_index"`
	StepCount        int64     `json:"step_count"`
	CumulativeReward jsonFloat `json:"cumulative_reward"`
	Terminated       bool      `json:"terminated"`
	Truncated        bool      `json:"truncated"`
	DurationMs       int64     `json:"duration_ms"`
}

type eventLogEnv struct {
	EnvID string `json:"env_id"`
}

type eventLogAdvisory struct {
	Leg      string  `json:"leg"`
	Severity string  `json:"severity"`
	Message  string  `json:"message"`
	Lane     *uint32 `json:"lane,omitempty"`
}

// EventLogLevel is the logs table's level of the row that holds ev:
// "warn" for a caution RelayAdvisory, "info" for every other event.
func EventLogLevel(ev events.Event) string {
	if e, ok := ev.(*events.RelayAdvisory); ok && e.Severity == events.SeverityCaution {
		return events.LogWarn.String()
	}
	return events.LogInfo.String()
}

// jsonFloat is a float64 whose NaN and infinities are JSON strings.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*f = jsonFloat(math.NaN())
		return nil
	case `"Infinity"`:
		*f = jsonFloat(math.Inf(1))
		return nil
	case `"-Infinity"`:
		*f = jsonFloat(math.Inf(-1))
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*f = jsonFloat(v)
	return err
}

// RepeatedCompletion reports whether e, an EpisodeCompleted for an
// episode already completed, is what rlmesh's env server sends for an
// episode it still held when the runtime reset the lane (after a runtime
// step or time cap under disabled autoreset): truncated, not
// terminated, without final_info. Such a repeat is rlmesh's behaviour, not
// bad input: a recorder keeps it as a logs row (EventLogMessage) instead
// of counting it as a duplicate completion.
func RepeatedCompletion(e *events.EpisodeCompleted) bool {
	return e.Truncated && !e.Terminated && e.FinalInfo == nil
}

// EventLogMessage returns the logs message that holds ev, for
// EnvConnected, ModelConnected and EpisodeCompleted (the repeated one),
// and false for any other event.
func EventLogMessage(ev events.Event) (string, bool) {
	var v any
	switch e := ev.(type) {
	case *events.EnvConnected:
		v = eventLogEnv{EnvID: e.EnvID}
	case *events.ModelConnected:
		v = struct{}{}
	case *events.EpisodeCompleted:
		v = eventLogEpisode{EpisodeID: e.EpisodeID, EpisodeRecordID: e.EpisodeRecordID, EpisodeIndex: e.EpisodeIndex,
			EnvIndex: e.EnvIndex, StepCount: e.StepCount, CumulativeReward: jsonFloat(e.CumulativeReward),
			Terminated: e.Terminated, Truncated: e.Truncated, DurationMs: e.DurationMs}
	case *events.RelayAdvisory:
		a := eventLogAdvisory{Leg: e.Leg.String(), Severity: e.Severity.String(), Message: e.Message}
		if lane, ok := e.Route.Lane.Get(); ok {
			a.Lane = &lane
		}
		v = a
	default:
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Strings are always valid JSON, floats are handled: unreachable.
		return "", false
	}
	return ev.Kind().String() + " " + string(b), true
}

// ParseEventLog returns the event a logs row with source SourceEvent
// holds, with the given session and route, or an error wrapping
// ErrEventLog.
func ParseEventLog(sessionID string, route events.RuntimeEnvContext, msg string) (events.Event, error) {
	kind, body, ok := strings.Cut(msg, " ")
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrEventLog, msg)
	}
	dec := func(v any) error {
		if err := json.Unmarshal([]byte(body), v); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrEventLog, kind, err)
		}
		return nil
	}
	switch kind {
	case events.KindEnvConnected.String():
		var v eventLogEnv
		if err := dec(&v); err != nil {
			return nil, err
		}
		return &events.EnvConnected{SessionID: sessionID, Route: route, EnvID: v.EnvID}, nil
	case events.KindModelConnected.String():
		var v struct{}
		if err := dec(&v); err != nil {
			return nil, err
		}
		return &events.ModelConnected{SessionID: sessionID, Route: route}, nil
	case events.KindEpisodeCompleted.String():
		var v eventLogEpisode
		if err := dec(&v); err != nil {
			return nil, err
		}
		return &events.EpisodeCompleted{SessionID: sessionID, Route: route, EpisodeID: v.EpisodeID,
			EpisodeRecordID: v.EpisodeRecordID, EpisodeIndex: v.EpisodeIndex, EnvIndex: v.EnvIndex,
			StepCount: v.StepCount, CumulativeReward: float64(v.CumulativeReward), Terminated: v.Terminated,
			Truncated: v.Truncated, DurationMs: v.DurationMs}, nil
	case events.KindRelayAdvisory.String():
		var v eventLogAdvisory
		if err := dec(&v); err != nil {
			return nil, err
		}
		e := &events.RelayAdvisory{SessionID: sessionID, Route: route, Message: v.Message}
		for _, l := range []events.RelayLeg{events.LegEnvToModel, events.LegModelToEnv} {
			if l.String() == v.Leg {
				e.Leg = l
			}
		}
		for _, sv := range []events.AdvisorySeverity{events.SeverityInfo, events.SeverityCaution} {
			if sv.String() == v.Severity {
				e.Severity = sv
			}
		}
		if e.Leg == 0 || e.Severity == 0 {
			return nil, fmt.Errorf("%w: %s: leg %q, severity %q", ErrEventLog, kind, v.Leg, v.Severity)
		}
		if v.Lane != nil {
			e.Route.Lane = events.Some(*v.Lane)
		}
		return e, nil
	}
	return nil, fmt.Errorf("%w: kind %q", ErrEventLog, kind)
}

// UnfinishedAction is one lane of an ActionReceived that no StepCompleted
// followed: an action the runtime sent but never applied (its env step
// failed, or the recording stopped before the step completed). It is no
// step, so it has no steps row; the recorder keeps it as a logs row of
// source SourceEvent, one per lane whose open episode the action named, at
// the action's time, with the message
//
//	ActionReceived {"episode_id":"0190...","episode_record_id":"ep-000004","env_index":2,
//	  "step":26,"episode_step":9,"observation":"CgQAAIA/","action":"CggBAAAAAAAAAA=="}
//
// (one line): step is the event's step (lane 0's counter, as the steps
// table's session_step), episode_step the 0-based step the episode would
// have reached (as the steps table's step), observation the lane's
// observation the action was computed from (null if none was seen) and
// action the lane's action, both in blob form (base64), as the steps
// table's observation_blob and action_blob hold them. rlrec replay
// re-emits the ActionReceived, and rlrec inspect counts them in a note.
// The format is part of the recorded output: do not change it.
type UnfinishedAction struct {
	EpisodeID       string `json:"episode_id"`
	EpisodeRecordID string `json:"episode_record_id"`
	EnvIndex        int32  `json:"env_index"`
	Step            int64  `json:"step"`
	EpisodeStep     int64  `json:"episode_step"`
	// Observation is nil when the lane had no observation.
	Observation []byte `json:"observation"`
	Action      []byte `json:"action"`
	// ObservationInfos is the observation's infos as JSON text (rlmesh
	// 0.1's reset infos), absent when it had none.
	ObservationInfos string `json:"observation_infos,omitempty"`
}

// unfinishedKind is the message's kind: the event it holds a lane of.
var unfinishedKind = events.KindActionReceived.String()

// Message returns the logs message that holds u.
func (u UnfinishedAction) Message() string {
	if u.Action == nil {
		u.Action = []byte{}
	}
	b, err := json.Marshal(u)
	if err != nil {
		// Strings and byte slices always marshal: unreachable.
		return unfinishedKind + " {}"
	}
	return unfinishedKind + " " + string(b)
}

// ParseUnfinishedAction returns the unfinished action a logs row of source
// SourceEvent holds, or an error wrapping ErrEventLog when it holds none
// (another event, or no event).
func ParseUnfinishedAction(msg string) (UnfinishedAction, error) {
	var u UnfinishedAction
	kind, body, ok := strings.Cut(msg, " ")
	if !ok || kind != unfinishedKind {
		return u, fmt.Errorf("%w: %q is no unfinished action", ErrEventLog, msg)
	}
	if err := json.Unmarshal([]byte(body), &u); err != nil {
		return u, fmt.Errorf("%w: %s: %v", ErrEventLog, kind, err)
	}
	if u.Action == nil {
		return u, fmt.Errorf("%w: %s: no action", ErrEventLog, kind)
	}
	return u, nil
}

// CheckEventLog returns nil when msg, the message of a logs row of source
// SourceEvent, holds an event (ParseEventLog) or an unfinished action
// (ParseUnfinishedAction), and otherwise the error of the first.
func CheckEventLog(msg string) error {
	if _, err := ParseUnfinishedAction(msg); err == nil {
		return nil
	}
	_, err := ParseEventLog("", events.RuntimeEnvContext{}, msg)
	return err
}
