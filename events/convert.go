package events

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/events/eventsv1"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Conversion rules between Event values and eventsv1.Event messages (the
// contract is silent on these; recorded streams depend on them):
//
//   - The observation time t travels as time_unix_nano; the zero time is 0
//     and 0 decodes as the zero time. (So the instant of the Unix epoch
//     itself decodes as the zero time.) Decoded times are in UTC.
//   - A nil Action or Observation is an absent SpaceValue; a non-nil leaf
//     list, even an empty one, is a present SpaceValue. Within a list, a nil
//     leaf and an empty leaf are the same zero-length leaf and decode as
//     empty non-nil slices.
//   - Repeated fields (id lists, rewards, telemetry rows) cannot tell nil
//     from empty on the wire; both decode as nil.
//   - Log.Source nil is an absent optional source; FinalInfo, Infos and a
//     nil space spec are absent messages. Specs and MetaMaps are carried as
//     they are, not validated. RawAction and RawObservation follow the
//     Action rule (nil is absent).
//   - An Option is a proto3 optional field: absent when not Set, present
//     (even with a zero value) when Set. The per-lane flags (Terminated,
//     Truncated, AutoresetRoll) are repeated fields: nil and empty are one.
//   - The run nonce (eventsv1.Event.run_nonce) and the sequence number are
//     no part of the runtime's event and travel beside it: ToProto leaves
//     them empty and FromProto ignores them; read and set them on the
//     message (GetRunNonce, RunNonce), or with AppendRunNonce and
//     Decoder.RunNonce on the wire (sequence.go).
//   - Enum values (log level, horizon, metric kind, relay leg, advisory
//     severity) outside the defined
//     ones, including 0, are rejected in both directions with
//     ErrUnknownEnum; a message without a kind is rejected with
//     ErrUnknownKind.
//   - proto3 strings must be valid UTF-8: encoding an event whose strings
//     are not fails in AppendMarshal (never silently).
//
// ToProto shares memory with ev (slices, specs, the MetaMap) and FromProto
// with m: neither copies payload bytes. Do not modify one while the other is
// in use.

// marshalOpts orders map entries (FinalInfo) so equal events give equal
// bytes; the other fields are deterministic anyway.
var marshalOpts = proto.MarshalOptions{Deterministic: true}

// ToProto returns the wire message of ev observed at t (the zero t when the
// time is unknown). The message shares memory with ev.
func ToProto(ev Event, t time.Time) (*eventsv1.Event, error) {
	m := &eventsv1.Event{}
	if err := toProto(m, ev, t); err != nil {
		return nil, err
	}
	return m, nil
}

func timeToNanos(t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	// UnixNano is undefined outside the int64 range: check that it
	// round-trips.
	ns := t.UnixNano()
	if !time.Unix(0, ns).Equal(t) {
		return 0, fmt.Errorf("encode event time %s: %w", t.Format(time.RFC3339Nano), ErrTimeOutOfRange)
	}
	return ns, nil
}

func nanosToTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func routeToProto(r RuntimeEnvContext) *eventsv1.RuntimeEnvContext {
	if r == (RuntimeEnvContext{}) {
		return nil
	}
	return &eventsv1.RuntimeEnvContext{
		EnvId:            r.EnvID,
		EnvComponentId:   r.EnvComponentID,
		ModelComponentId: r.ModelComponentID,
		Lane:             optPtr(r.Lane),
	}
}

func routeFromProto(r *eventsv1.RuntimeEnvContext) RuntimeEnvContext {
	out := RuntimeEnvContext{
		EnvID:            r.GetEnvId(),
		EnvComponentID:   r.GetEnvComponentId(),
		ModelComponentID: r.GetModelComponentId(),
	}
	if r != nil {
		out.Lane = optFrom(r.Lane)
	}
	return out
}

// optPtr returns o as a proto3 optional field: nil when absent.
func optPtr[T any](o Option[T]) *T {
	if !o.Set {
		return nil
	}
	v := o.Value
	return &v
}

// optFrom returns the proto3 optional field p as an Option.
func optFrom[T any](p *T) Option[T] {
	if p == nil {
		return Option[T]{}
	}
	return Some(*p)
}

func leavesToProto(leaves [][]byte) *spacesv1.SpaceValue {
	if leaves == nil {
		return nil
	}
	return &spacesv1.SpaceValue{Leaves: leaves}
}

func leavesFromProto(v *spacesv1.SpaceValue) [][]byte {
	if v == nil {
		return nil
	}
	if v.Leaves == nil {
		return [][]byte{}
	}
	return v.Leaves
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func logLevelOK(l LogLevel) bool { return l >= LogDebug && l <= LogError }

func horizonOK(h TelemetryHorizon) bool { return h == HorizonWindow || h == HorizonSession }

func metricKindOK(k MetricKind) bool { return k >= MetricDurationMs && k <= MetricCount }

func relayLegOK(l RelayLeg) bool { return l == LegEnvToModel || l == LegModelToEnv }

func severityOK(s AdvisorySeverity) bool { return s == SeverityInfo || s == SeverityCaution }

// toProto fills m (which must be empty) from ev.
func toProto(m *eventsv1.Event, ev Event, t time.Time) error {
	ns, err := timeToNanos(t)
	if err != nil {
		return err
	}
	m.TimeUnixNano = ns
	switch e := ev.(type) {
	case *EnvConnected:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_EnvConnected{EnvConnected: &eventsv1.EnvConnected{EnvId: e.EnvID}}
	case *ModelConnected:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_ModelConnected{ModelConnected: &eventsv1.ModelConnected{}}
	case *SessionStarted:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_SessionStarted{SessionStarted: &eventsv1.SessionStarted{EnvId: e.EnvID}}
	case *SessionEnded:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_SessionEnded{SessionEnded: &eventsv1.SessionEnded{
			Reason:        e.Reason,
			TotalSteps:    e.TotalSteps,
			TotalEpisodes: e.TotalEpisodes,
		}}
	case *SessionFailed:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_SessionFailed{SessionFailed: &eventsv1.SessionFailed{Reason: e.Reason}}
	case *Log:
		if e == nil {
			break
		}
		if !logLevelOK(e.Level) {
			return fmt.Errorf("encode Log event: level %d: %w", e.Level, ErrUnknownEnum)
		}
		m.Kind = &eventsv1.Event_Log{Log: &eventsv1.Log{
			Level:   eventsv1.LogLevel(e.Level),
			Message: e.Message,
			Source:  e.Source,
		}}
	case *EpisodeStarted:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_EpisodeStarted{EpisodeStarted: &eventsv1.EpisodeStarted{
			EpisodeId:            e.EpisodeID,
			EpisodeRecordId:      e.EpisodeRecordID,
			EpisodeIndex:         e.EpisodeIndex,
			EnvIndex:             e.EnvIndex,
			StartedFromAutoReset: e.StartedFromAutoReset,
			Seed:                 optPtr(e.Seed),
			TrialIndex:           optPtr(e.TrialIndex),
		}}
	case *EpisodeCompleted:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_EpisodeCompleted{EpisodeCompleted: &eventsv1.EpisodeCompleted{
			EpisodeId:        e.EpisodeID,
			EpisodeRecordId:  e.EpisodeRecordID,
			EpisodeIndex:     e.EpisodeIndex,
			EnvIndex:         e.EnvIndex,
			StepCount:        e.StepCount,
			CumulativeReward: e.CumulativeReward,
			Terminated:       e.Terminated,
			Truncated:        e.Truncated,
			DurationMs:       e.DurationMs,
			FinalInfo:        e.FinalInfo,
			Success:          optPtr(e.Success),
			Seed:             optPtr(e.Seed),
			TrialIndex:       optPtr(e.TrialIndex),
			PredictMs:        optPtr(e.PredictMs),
			StepMs:           optPtr(e.StepMs),
		}}
	case *ActionReceived:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_ActionReceived{ActionReceived: &eventsv1.ActionReceived{
			EpisodeId:        e.EpisodeID,
			EpisodeRecordId:  e.EpisodeRecordID,
			EpisodeIds:       e.EpisodeIDs,
			EpisodeRecordIds: e.EpisodeRecordIDs,
			Step:             e.Step,
			EnvIndex:         e.EnvIndex,
			ActionSpace:      e.ActionSpace,
			Action:           leavesToProto(e.Action),
			RawAction:        leavesToProto(e.RawAction),
		}}
	case *StepCompleted:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_StepCompleted{StepCompleted: &eventsv1.StepCompleted{
			EpisodeId:       e.EpisodeID,
			EpisodeRecordId: e.EpisodeRecordID,
			Step:            e.Step,
			EnvIndex:        e.EnvIndex,
			Rewards:         e.Rewards,
			Infos:           e.Infos,
			Terminated:      e.Terminated,
			Truncated:       e.Truncated,
			AutoresetRoll:   e.AutoresetRoll,
			PredictMs:       optPtr(e.PredictMs),
			StepMs:          optPtr(e.StepMs),
		}}
	case *ObservationEmitted:
		if e == nil {
			break
		}
		m.Kind = &eventsv1.Event_ObservationEmitted{ObservationEmitted: &eventsv1.ObservationEmitted{
			EpisodeId:        e.EpisodeID,
			EpisodeRecordId:  e.EpisodeRecordID,
			EpisodeIds:       e.EpisodeIDs,
			EpisodeRecordIds: e.EpisodeRecordIDs,
			Step:             e.Step,
			EnvIndex:         e.EnvIndex,
			IsReset:          e.IsReset,
			NumEnvs:          e.NumEnvs,
			ObservationSpace: e.ObservationSpace,
			Observation:      leavesToProto(e.Observation),
			RawObservation:   leavesToProto(e.RawObservation),
			Infos:            e.Infos,
		}}
	case *TelemetrySnapshot:
		if e == nil {
			break
		}
		if !horizonOK(e.Snapshot.Horizon) {
			return fmt.Errorf("encode TelemetrySnapshot event: horizon %d: %w", e.Snapshot.Horizon, ErrUnknownEnum)
		}
		var rows []*eventsv1.TelemetryRow
		if len(e.Snapshot.Rows) > 0 {
			rows = make([]*eventsv1.TelemetryRow, len(e.Snapshot.Rows))
			store := make([]eventsv1.TelemetryRow, len(e.Snapshot.Rows))
			for i := range e.Snapshot.Rows {
				r := &e.Snapshot.Rows[i]
				if !metricKindOK(r.Kind) {
					return fmt.Errorf("encode TelemetrySnapshot event: row %d metric kind %d: %w", i, r.Kind, ErrUnknownEnum)
				}
				p := &store[i]
				p.Op, p.Component, p.Metric = r.Op, r.Component, r.Metric
				p.Kind = eventsv1.MetricKind(r.Kind)
				p.Count, p.Avg, p.P50, p.P95, p.P99 = r.Count, r.Avg, r.P50, r.P95, r.P99
				rows[i] = p
			}
		}
		m.Kind = &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{
			Horizon: eventsv1.TelemetryHorizon(e.Snapshot.Horizon),
			Rows:    rows,
		}}
	case *RelayAdvisory:
		if e == nil {
			break
		}
		if !relayLegOK(e.Leg) {
			return fmt.Errorf("encode RelayAdvisory event: leg %d: %w", e.Leg, ErrUnknownEnum)
		}
		if !severityOK(e.Severity) {
			return fmt.Errorf("encode RelayAdvisory event: severity %d: %w", e.Severity, ErrUnknownEnum)
		}
		m.Kind = &eventsv1.Event_RelayAdvisory{RelayAdvisory: &eventsv1.RelayAdvisory{
			Leg:      eventsv1.RelayLeg(e.Leg),
			Severity: eventsv1.AdvisorySeverity(e.Severity),
			Message:  e.Message,
		}}
	case nil:
	default:
		return fmt.Errorf("encode %T: %w", ev, ErrUnknownKind)
	}
	if m.Kind == nil {
		return fmt.Errorf("encode event: %w", ErrNilEvent)
	}
	sid, route := ev.Header()
	m.SessionId = sid
	m.Route = routeToProto(route)
	return nil
}

// FromProto returns the event in m and the time it was observed (the zero
// time when m carries none). The event shares memory with m. It fails with
// ErrUnknownKind when m has no kind set, ErrUnknownEnum for an enum value
// this version does not define, and ErrNilEvent for a nil m.
func FromProto(m *eventsv1.Event) (Event, time.Time, error) {
	if m == nil {
		return nil, time.Time{}, fmt.Errorf("decode event: %w", ErrNilEvent)
	}
	sid := m.GetSessionId()
	route := routeFromProto(m.GetRoute())
	var ev Event
	switch k := m.GetKind().(type) {
	case *eventsv1.Event_EnvConnected:
		ev = &EnvConnected{SessionID: sid, Route: route, EnvID: k.EnvConnected.GetEnvId()}
	case *eventsv1.Event_ModelConnected:
		ev = &ModelConnected{SessionID: sid, Route: route}
	case *eventsv1.Event_SessionStarted:
		ev = &SessionStarted{SessionID: sid, Route: route, EnvID: k.SessionStarted.GetEnvId()}
	case *eventsv1.Event_SessionEnded:
		p := k.SessionEnded
		ev = &SessionEnded{
			SessionID:     sid,
			Route:         route,
			Reason:        p.GetReason(),
			TotalSteps:    p.GetTotalSteps(),
			TotalEpisodes: p.GetTotalEpisodes(),
		}
	case *eventsv1.Event_SessionFailed:
		ev = &SessionFailed{SessionID: sid, Route: route, Reason: k.SessionFailed.GetReason()}
	case *eventsv1.Event_Log:
		p := k.Log
		lv := p.GetLevel()
		if lv < eventsv1.LogLevel_LOG_LEVEL_DEBUG || lv > eventsv1.LogLevel_LOG_LEVEL_ERROR {
			return nil, time.Time{}, fmt.Errorf("decode Log event: level %d: %w", int32(lv), ErrUnknownEnum)
		}
		var src *string
		if p.Source != nil {
			s := *p.Source
			src = &s
		}
		ev = &Log{SessionID: sid, Route: route, Level: LogLevel(lv), Message: p.GetMessage(), Source: src}
	case *eventsv1.Event_EpisodeStarted:
		p := k.EpisodeStarted
		ev = &EpisodeStarted{
			SessionID:            sid,
			Route:                route,
			EpisodeID:            p.GetEpisodeId(),
			EpisodeRecordID:      p.GetEpisodeRecordId(),
			EpisodeIndex:         p.GetEpisodeIndex(),
			EnvIndex:             p.GetEnvIndex(),
			StartedFromAutoReset: p.GetStartedFromAutoReset(),
			Seed:                 optFrom(p.Seed),
			TrialIndex:           optFrom(p.TrialIndex),
		}
	case *eventsv1.Event_EpisodeCompleted:
		p := k.EpisodeCompleted
		ev = &EpisodeCompleted{
			SessionID:        sid,
			Route:            route,
			EpisodeID:        p.GetEpisodeId(),
			EpisodeRecordID:  p.GetEpisodeRecordId(),
			EpisodeIndex:     p.GetEpisodeIndex(),
			EnvIndex:         p.GetEnvIndex(),
			StepCount:        p.GetStepCount(),
			CumulativeReward: p.GetCumulativeReward(),
			Terminated:       p.GetTerminated(),
			Truncated:        p.GetTruncated(),
			DurationMs:       p.GetDurationMs(),
			FinalInfo:        p.GetFinalInfo(),
			Success:          optFrom(p.Success),
			Seed:             optFrom(p.Seed),
			TrialIndex:       optFrom(p.TrialIndex),
			PredictMs:        optFrom(p.PredictMs),
			StepMs:           optFrom(p.StepMs),
		}
	case *eventsv1.Event_ActionReceived:
		p := k.ActionReceived
		ev = &ActionReceived{
			SessionID:        sid,
			Route:            route,
			EpisodeID:        p.GetEpisodeId(),
			EpisodeRecordID:  p.GetEpisodeRecordId(),
			EpisodeIDs:       nilIfEmpty(p.GetEpisodeIds()),
			EpisodeRecordIDs: nilIfEmpty(p.GetEpisodeRecordIds()),
			Step:             p.GetStep(),
			EnvIndex:         p.GetEnvIndex(),
			ActionSpace:      p.GetActionSpace(),
			Action:           leavesFromProto(p.GetAction()),
			RawAction:        leavesFromProto(p.GetRawAction()),
		}
	case *eventsv1.Event_StepCompleted:
		p := k.StepCompleted
		ev = &StepCompleted{
			SessionID:       sid,
			Route:           route,
			EpisodeID:       p.GetEpisodeId(),
			EpisodeRecordID: p.GetEpisodeRecordId(),
			Step:            p.GetStep(),
			EnvIndex:        p.GetEnvIndex(),
			Rewards:         nilIfEmpty(p.GetRewards()),
			Infos:           p.GetInfos(),
			Terminated:      nilIfEmpty(p.GetTerminated()),
			Truncated:       nilIfEmpty(p.GetTruncated()),
			AutoresetRoll:   nilIfEmpty(p.GetAutoresetRoll()),
			PredictMs:       optFrom(p.PredictMs),
			StepMs:          optFrom(p.StepMs),
		}
	case *eventsv1.Event_ObservationEmitted:
		p := k.ObservationEmitted
		ev = &ObservationEmitted{
			SessionID:        sid,
			Route:            route,
			EpisodeID:        p.GetEpisodeId(),
			EpisodeRecordID:  p.GetEpisodeRecordId(),
			EpisodeIDs:       nilIfEmpty(p.GetEpisodeIds()),
			EpisodeRecordIDs: nilIfEmpty(p.GetEpisodeRecordIds()),
			Step:             p.GetStep(),
			EnvIndex:         p.GetEnvIndex(),
			IsReset:          p.GetIsReset(),
			NumEnvs:          p.GetNumEnvs(),
			ObservationSpace: p.GetObservationSpace(),
			Observation:      leavesFromProto(p.GetObservation()),
			RawObservation:   leavesFromProto(p.GetRawObservation()),
			Infos:            p.GetInfos(),
		}
	case *eventsv1.Event_TelemetrySnapshot:
		p := k.TelemetrySnapshot
		h := p.GetHorizon()
		if h != eventsv1.TelemetryHorizon_TELEMETRY_HORIZON_WINDOW && h != eventsv1.TelemetryHorizon_TELEMETRY_HORIZON_SESSION {
			return nil, time.Time{}, fmt.Errorf("decode TelemetrySnapshot event: horizon %d: %w", int32(h), ErrUnknownEnum)
		}
		var rows []TelemetryRow
		if pr := p.GetRows(); len(pr) > 0 {
			rows = make([]TelemetryRow, len(pr))
			for i, r := range pr {
				mk := r.GetKind()
				if mk < eventsv1.MetricKind_METRIC_KIND_DURATION_MS || mk > eventsv1.MetricKind_METRIC_KIND_COUNT {
					return nil, time.Time{}, fmt.Errorf("decode TelemetrySnapshot event: row %d metric kind %d: %w", i, int32(mk), ErrUnknownEnum)
				}
				rows[i] = TelemetryRow{
					Op:        r.GetOp(),
					Component: r.GetComponent(),
					Metric:    r.GetMetric(),
					Kind:      MetricKind(mk),
					Count:     r.GetCount(),
					Avg:       r.GetAvg(),
					P50:       r.GetP50(),
					P95:       r.GetP95(),
					P99:       r.GetP99(),
				}
			}
		}
		ev = &TelemetrySnapshot{SessionID: sid, Route: route, Snapshot: Snapshot{Horizon: TelemetryHorizon(h), Rows: rows}}
	case *eventsv1.Event_RelayAdvisory:
		p := k.RelayAdvisory
		leg, sev := p.GetLeg(), p.GetSeverity()
		if leg != eventsv1.RelayLeg_RELAY_LEG_ENV_TO_MODEL && leg != eventsv1.RelayLeg_RELAY_LEG_MODEL_TO_ENV {
			return nil, time.Time{}, fmt.Errorf("decode RelayAdvisory event: leg %d: %w", int32(leg), ErrUnknownEnum)
		}
		if sev != eventsv1.AdvisorySeverity_ADVISORY_SEVERITY_INFO && sev != eventsv1.AdvisorySeverity_ADVISORY_SEVERITY_CAUTION {
			return nil, time.Time{}, fmt.Errorf("decode RelayAdvisory event: severity %d: %w", int32(sev), ErrUnknownEnum)
		}
		ev = &RelayAdvisory{SessionID: sid, Route: route, Leg: RelayLeg(leg), Severity: AdvisorySeverity(sev), Message: p.GetMessage()}
	case nil:
		return nil, time.Time{}, fmt.Errorf("decode event: no kind set: %w", ErrUnknownKind)
	default:
		return nil, time.Time{}, fmt.Errorf("decode event: kind %T: %w", k, ErrUnknownKind)
	}
	return ev, nanosToTime(m.GetTimeUnixNano()), nil
}

// AppendMarshal appends the protobuf encoding of ev observed at t (one
// eventsv1.Event message, without a length prefix) to dst and returns the
// extended slice; on error it returns dst unchanged. Equal events give
// equal bytes: the deterministic proto.Marshal of ToProto's message,
// written without building it (see encode.go). ev's space spec must not be
// modified once it has been encoded: its wire bytes are cached by pointer.
// AppendMarshal is safe for concurrent use.
func AppendMarshal(dst []byte, ev Event, t time.Time) ([]byte, error) {
	return appendEvent(dst, ev, t)
}

// Unmarshal decodes one eventsv1.Event message (without a length prefix).
// The event does not share memory with b or with any other event. Errors
// wrap ErrMalformed, ErrUnknownKind or ErrUnknownEnum. A pipeline decoding
// many events should keep a Decoder, which also reuses unchanged specs.
func Unmarshal(b []byte) (Event, time.Time, error) {
	d := decoderPool.Get().(*Decoder)
	ev, t, err := d.Decode(b)
	decoderPool.Put(d)
	return ev, t, err
}
