package events

// Fast encoding
//
// AppendMarshal writes the eventsv1.Event wire bytes straight from the Go
// event with protowire, without building an eventsv1.Event. The bytes are
// exactly those of proto.MarshalOptions{Deterministic: true} applied to
// ToProto's message (a property test checks every kind): fields in
// field-number order, the oneof member at its own number, zero scalars and
// empty strings omitted but a negative-zero double kept, rewards packed,
// a present but empty message as a zero length. Space specs and FinalInfo
// are marshalled by protobuf-go itself (deterministically, so FinalInfo's
// map entries are sorted by key) and spliced in with their length.
//
// It runs in two passes: the first sizes every nested message and checks
// everything that can fail (enums, UTF-8, the spec and FinalInfo), the
// second appends and cannot fail, so on error dst is returned unchanged.
//
// Spec cache: the runtime hands every ActionReceived and
// ObservationEmitted of a route the same *spacesv1.SpaceSpec, so the wire
// bytes of the last few specs seen are kept, keyed by pointer, and reused
// while the pointer is the same. A spec must therefore not be modified
// after it has been passed to AppendMarshal (the runtime never does: it
// shares one immutable spec per route). The cache holds at most
// specCacheSize specs alive.

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// specCacheSize is how many distinct specs' wire bytes AppendMarshal keeps.
// A process records a handful of routes, each with two specs.
const specCacheSize = 8

type specWireEntry struct {
	spec *spacesv1.SpaceSpec
	wire []byte
}

// specWireCache is shared by every AppendMarshal call; entries are
// immutable once published, so lookups are plain atomic loads.
var specWireCache struct {
	slots [specCacheSize]atomic.Pointer[specWireEntry]
	next  atomic.Uint32
}

// specWire returns the deterministic wire bytes of s (not nil).
func specWire(s *spacesv1.SpaceSpec) ([]byte, error) {
	for i := range specWireCache.slots {
		if e := specWireCache.slots[i].Load(); e != nil && e.spec == s {
			return e.wire, nil
		}
	}
	w, err := marshalOpts.Marshal(s)
	if err != nil {
		return nil, err
	}
	i := specWireCache.next.Add(1) % specCacheSize
	specWireCache.slots[i].Store(&specWireEntry{spec: s, wire: w})
	return w, nil
}

// Wire types in a one-byte tag.
const (
	wtVarint  = byte(protowire.VarintType)
	wtFixed64 = byte(protowire.Fixed64Type)
	wtBytes   = byte(protowire.BytesType)
)

// tag returns the one-byte tag of a field numbered below 16.
func tag(num byte, wt byte) byte { return num<<3 | wt }

// sizer sizes the fields of one message and remembers the first string
// that is not valid UTF-8.
type sizer struct {
	n   int
	bad string
}

func (z *sizer) str(name, s string) {
	if s == "" {
		return
	}
	if orBytes(0, s)&asciiMask != 0 && !utf8.ValidString(s) && z.bad == "" {
		z.bad = name
	}
	z.n += 1 + protowire.SizeBytes(len(s))
}

func (z *sizer) strs(name string, ss []string) {
	// Ids are ASCII: OR all their bytes together and check each string
	// only when some byte is not.
	var or uint64
	n := 2 * len(ss) // a one-byte tag and (mostly) a one-byte length each
	for _, s := range ss {
		or = orBytes(or, s)
		n += len(s)
		if len(s) >= 0x80 {
			n += protowire.SizeVarint(uint64(len(s))) - 1
		}
	}
	z.n += n
	if or&asciiMask == 0 {
		return
	}
	for _, s := range ss {
		if !utf8.ValidString(s) && z.bad == "" {
			z.bad = name
		}
	}
}

// asciiMask has the high bit of every byte set: x&asciiMask == 0 when the
// bytes ORed into x are all ASCII.
const asciiMask = 0x8080808080808080

// orBytes ORs the bytes of s, eight at a time, into or.
func orBytes(or uint64, s string) uint64 {
	if len(s) < 8 {
		for i := 0; i < len(s); i++ {
			or |= uint64(s[i])
		}
		return or
	}
	for i := 0; i+8 <= len(s); i += 8 {
		or |= load64(s[i:])
	}
	return or | load64(s[len(s)-8:]) // the tail, overlapping
}

// load64 returns the first 8 bytes of s (len(s) >= 8) as one word.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func (z *sizer) varint(v uint64) {
	if v != 0 {
		z.n += 1 + protowire.SizeVarint(v)
	}
}

func (z *sizer) boolean(v bool) {
	if v {
		z.n += 2
	}
}

func (z *sizer) double(v float64) {
	if v != 0 || math.Signbit(v) {
		z.n += 9
	}
}

// msg adds a present message field of size n.
func (z *sizer) msg(n int) { z.n += 1 + protowire.SizeBytes(n) }

// optVarint adds a proto3 optional varint field, written when set even if
// zero.
func (z *sizer) optVarint(set bool, v uint64) {
	if set {
		z.n += 1 + protowire.SizeVarint(v)
	}
}

// optDouble adds a proto3 optional double field.
func (z *sizer) optDouble(set bool) {
	if set {
		z.n += 9
	}
}

// bools adds a packed repeated bool field (omitted when empty).
func (z *sizer) bools(v []bool) {
	if len(v) > 0 {
		z.msg(len(v))
	}
}

func appendStr(b []byte, num byte, s string) []byte {
	if s == "" {
		return b
	}
	return appendBytesField(b, num, s)
}

func appendStrs(b []byte, num byte, ss []string) []byte {
	for _, s := range ss {
		b = appendBytesField(b, num, s)
	}
	return b
}

// appendBytesField appends a length-delimited field, even an empty one.
func appendBytesField[T string | []byte](b []byte, num byte, s T) []byte {
	if len(s) < 0x80 {
		b = append(b, tag(num, wtBytes), byte(len(s)))
	} else {
		b = protowire.AppendVarint(append(b, tag(num, wtBytes)), uint64(len(s)))
	}
	return append(b, s...)
}

func appendVarint(b []byte, num byte, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendUvarint(append(b, tag(num, wtVarint)), v)
}

// appendUvarint appends v as a varint; the one-byte case (tags, most
// lengths and counters) is inlined where protowire.AppendVarint is a call.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return protowire.AppendVarint(b, v)
}

func appendBool(b []byte, num byte, v bool) []byte {
	if !v {
		return b
	}
	return append(b, tag(num, wtVarint), 1)
}

func appendDouble(b []byte, num byte, v float64) []byte {
	if v == 0 && !math.Signbit(v) {
		return b
	}
	return protowire.AppendFixed64(append(b, tag(num, wtFixed64)), math.Float64bits(v))
}

func appendOptVarint(b []byte, num byte, set bool, v uint64) []byte {
	if !set {
		return b
	}
	return appendUvarint(append(b, tag(num, wtVarint)), v)
}

func appendOptDouble(b []byte, num byte, o Option[float64]) []byte {
	if !o.Set {
		return b
	}
	return protowire.AppendFixed64(append(b, tag(num, wtFixed64)), math.Float64bits(o.Value))
}

func boolVarint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// appendBools appends a packed repeated bool field (nothing when empty).
func appendBools(b []byte, num byte, v []bool) []byte {
	if len(v) == 0 {
		return b
	}
	b = appendMsg(b, num, len(v))
	for _, x := range v {
		b = append(b, byte(boolVarint(x)))
	}
	return b
}

// appendNested appends a message field whose wire bytes are w.
func appendNested(b []byte, num byte, w []byte) []byte {
	b = appendMsg(b, num, len(w))
	return append(b, w...)
}

// appendMsg appends a message field's tag and length; its body follows.
func appendMsg(b []byte, num byte, n int) []byte {
	return appendUvarint(append(b, tag(num, wtBytes)), uint64(n))
}

func leavesSize(leaves [][]byte) int {
	n := 0
	for _, l := range leaves {
		n += 1 + protowire.SizeBytes(len(l))
	}
	return n
}

func appendLeaves(b []byte, num byte, leaves [][]byte, n int) []byte {
	b = appendMsg(b, num, n)
	for _, l := range leaves {
		b = appendBytesField(b, 1, l)
	}
	return b
}

func routeSize(z *sizer, r *RuntimeEnvContext) int {
	rz := sizer{}
	rz.str("route.env_id", r.EnvID)
	rz.str("route.env_component_id", r.EnvComponentID)
	rz.str("route.model_component_id", r.ModelComponentID)
	rz.optVarint(r.Lane.Set, uint64(r.Lane.Value))
	if rz.bad != "" && z.bad == "" {
		z.bad = rz.bad
	}
	return rz.n
}

func telemetryRowSize(z *sizer, r *TelemetryRow) int {
	rz := sizer{}
	rz.str("telemetry_snapshot.rows.op", r.Op)
	rz.str("telemetry_snapshot.rows.component", r.Component)
	rz.str("telemetry_snapshot.rows.metric", r.Metric)
	rz.varint(uint64(r.Kind))
	rz.varint(r.Count)
	rz.double(r.Avg)
	rz.double(r.P50)
	rz.double(r.P95)
	rz.double(r.P99)
	if rz.bad != "" && z.bad == "" {
		z.bad = rz.bad
	}
	return rz.n
}

// encodePlan is what the sizing pass hands the append pass.
type encodePlan struct {
	body   int    // size of the kind message
	route  int    // size of the route message
	value  int    // size of the SpaceValue message, when present
	raw    int    // size of the raw (pre-transform) SpaceValue, when present
	nested []byte // wire bytes of the spec or FinalInfo, when present
	infos  []byte // wire bytes of the Infos MetaMap, when the runtime encoded it
	// infosN is the size of the Infos MetaMap when appendMetaMap writes it
	// (infosFast).
	infosN    int
	infosFast bool
}

// sizeInfos sizes an Infos map: directly (metaSize) when it can, else
// through the protobuf runtime, whose bytes it keeps.
func (p *encodePlan) sizeInfos(m *spacesv1.MetaMap) error {
	if n, ok := metaSize(m); ok {
		p.infosN, p.infosFast = n, true
		return nil
	}
	w, err := marshalOpts.Marshal(m)
	if err != nil {
		return err
	}
	p.infos = w
	return nil
}

func (p *encodePlan) infosLen() int {
	if p.infosFast {
		return p.infosN
	}
	return len(p.infos)
}

// appendInfos appends the Infos map m as field num.
func (p *encodePlan) appendInfos(b []byte, num byte, m *spacesv1.MetaMap) []byte {
	if !p.infosFast {
		return appendNested(b, num, p.infos)
	}
	return appendMetaMap(appendMsg(b, num, p.infosN), m)
}

// appendEvent is AppendMarshal.
func appendEvent(dst []byte, ev Event, t time.Time) ([]byte, error) {
	ns, err := timeToNanos(t)
	if err != nil {
		return dst, err
	}
	var p encodePlan
	if err := sizeEvent(&p, ev); err != nil {
		return dst, err
	}
	sid, route := ev.Header()
	// Grow dst once: appending an image payload to a small buffer would
	// otherwise reallocate and copy it several times over.
	if need := len(dst) + p.body + len(sid) + len(route.EnvID) + len(route.EnvComponentID) + len(route.ModelComponentID) + maxEnvelopeOverhead; need > cap(dst) {
		grown := make([]byte, len(dst), need)
		copy(grown, dst)
		dst = grown
	}
	b := appendStr(dst, 1, sid)
	if route != (RuntimeEnvContext{}) {
		b = appendMsg(b, 2, p.route)
		b = appendStr(b, 1, route.EnvID)
		b = appendStr(b, 2, route.EnvComponentID)
		b = appendStr(b, 3, route.ModelComponentID)
		b = appendOptVarint(b, 4, route.Lane.Set, uint64(route.Lane.Value))
	}
	b = appendVarint(b, 3, uint64(ns))
	b = protowire.AppendTag(b, protowire.Number(ev.Kind()), protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(p.body))
	return appendBody(b, &p, ev), nil
}

// maxEnvelopeOverhead bounds the bytes of an Event's envelope beyond its
// strings and body: the tags and length varints of session_id, the route
// and its three strings, the route's lane, time_unix_nano and the kind (at
// most 1 + 10 bytes each, 2 + 10 for the kind).
const maxEnvelopeOverhead = 7*11 + 12

// sizeEvent fills p for ev and checks that ev encodes.
func sizeEvent(p *encodePlan, ev Event) error {
	var z sizer
	switch e := ev.(type) {
	case *EnvConnected:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("env_connected.env_id", e.EnvID)
	case *ModelConnected:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
	case *SessionStarted:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("session_started.env_id", e.EnvID)
	case *SessionEnded:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("session_ended.reason", e.Reason)
		z.varint(uint64(e.TotalSteps))
		z.varint(uint64(e.TotalEpisodes))
	case *SessionFailed:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("session_failed.reason", e.Reason)
	case *Log:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		if !logLevelOK(e.Level) {
			return fmt.Errorf("encode Log event: level %d: %w", e.Level, ErrUnknownEnum)
		}
		z.varint(uint64(e.Level))
		z.str("log.message", e.Message)
		if e.Source != nil {
			if !utf8.ValidString(*e.Source) {
				z.bad = "log.source"
			}
			z.n += 1 + protowire.SizeBytes(len(*e.Source))
		}
	case *EpisodeStarted:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("episode_started.episode_id", e.EpisodeID)
		z.str("episode_started.episode_record_id", e.EpisodeRecordID)
		z.varint(uint64(e.EpisodeIndex))
		z.varint(uint64(e.EnvIndex))
		z.boolean(e.StartedFromAutoReset)
		z.optVarint(e.Seed.Set, uint64(e.Seed.Value))
		z.optVarint(e.TrialIndex.Set, e.TrialIndex.Value)
	case *EpisodeCompleted:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("episode_completed.episode_id", e.EpisodeID)
		z.str("episode_completed.episode_record_id", e.EpisodeRecordID)
		z.varint(uint64(e.EpisodeIndex))
		z.varint(uint64(e.EnvIndex))
		z.varint(uint64(e.StepCount))
		z.double(e.CumulativeReward)
		z.boolean(e.Terminated)
		z.boolean(e.Truncated)
		z.varint(uint64(e.DurationMs))
		if e.FinalInfo != nil {
			w, err := marshalOpts.Marshal(e.FinalInfo)
			if err != nil {
				return fmt.Errorf("encode EpisodeCompleted event: final_info: %w", err)
			}
			p.nested = w
			z.msg(len(w))
		}
		z.optVarint(e.Success.Set, boolVarint(e.Success.Value))
		z.optVarint(e.Seed.Set, uint64(e.Seed.Value))
		z.optVarint(e.TrialIndex.Set, e.TrialIndex.Value)
		z.optDouble(e.PredictMs.Set)
		z.optDouble(e.StepMs.Set)
	case *ActionReceived:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("action_received.episode_id", e.EpisodeID)
		z.str("action_received.episode_record_id", e.EpisodeRecordID)
		z.strs("action_received.episode_ids", e.EpisodeIDs)
		z.strs("action_received.episode_record_ids", e.EpisodeRecordIDs)
		z.varint(uint64(e.Step))
		z.varint(uint64(e.EnvIndex))
		if e.ActionSpace != nil {
			w, err := specWire(e.ActionSpace)
			if err != nil {
				return fmt.Errorf("encode ActionReceived event: action_space: %w", err)
			}
			p.nested = w
			z.msg(len(w))
		}
		if e.Action != nil {
			p.value = leavesSize(e.Action)
			z.msg(p.value)
		}
		if e.RawAction != nil {
			p.raw = leavesSize(e.RawAction)
			z.msg(p.raw)
		}
	case *StepCompleted:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("step_completed.episode_id", e.EpisodeID)
		z.str("step_completed.episode_record_id", e.EpisodeRecordID)
		z.varint(uint64(e.Step))
		z.varint(uint64(e.EnvIndex))
		if len(e.Rewards) > 0 {
			z.msg(8 * len(e.Rewards))
		}
		if e.Infos != nil {
			if err := p.sizeInfos(e.Infos); err != nil {
				return fmt.Errorf("encode StepCompleted event: infos: %w", err)
			}
			z.msg(p.infosLen())
		}
		z.bools(e.Terminated)
		z.bools(e.Truncated)
		z.bools(e.AutoresetRoll)
		z.optDouble(e.PredictMs.Set)
		z.optDouble(e.StepMs.Set)
	case *ObservationEmitted:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		z.str("observation_emitted.episode_id", e.EpisodeID)
		z.str("observation_emitted.episode_record_id", e.EpisodeRecordID)
		z.strs("observation_emitted.episode_ids", e.EpisodeIDs)
		z.strs("observation_emitted.episode_record_ids", e.EpisodeRecordIDs)
		z.varint(uint64(e.Step))
		z.varint(uint64(e.EnvIndex))
		z.boolean(e.IsReset)
		z.varint(uint64(e.NumEnvs))
		if e.ObservationSpace != nil {
			w, err := specWire(e.ObservationSpace)
			if err != nil {
				return fmt.Errorf("encode ObservationEmitted event: observation_space: %w", err)
			}
			p.nested = w
			z.msg(len(w))
		}
		if e.Observation != nil {
			p.value = leavesSize(e.Observation)
			z.msg(p.value)
		}
		if e.RawObservation != nil {
			p.raw = leavesSize(e.RawObservation)
			z.msg(p.raw)
		}
		if e.Infos != nil {
			if err := p.sizeInfos(e.Infos); err != nil {
				return fmt.Errorf("encode ObservationEmitted event: infos: %w", err)
			}
			z.msg(p.infosLen())
		}
	case *TelemetrySnapshot:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		if !horizonOK(e.Snapshot.Horizon) {
			return fmt.Errorf("encode TelemetrySnapshot event: horizon %d: %w", e.Snapshot.Horizon, ErrUnknownEnum)
		}
		z.varint(uint64(e.Snapshot.Horizon))
		for i := range e.Snapshot.Rows {
			r := &e.Snapshot.Rows[i]
			if !metricKindOK(r.Kind) {
				return fmt.Errorf("encode TelemetrySnapshot event: row %d metric kind %d: %w", i, r.Kind, ErrUnknownEnum)
			}
			z.msg(telemetryRowSize(&z, r))
		}
	case *RelayAdvisory:
		if e == nil {
			return fmt.Errorf("encode event: %w", ErrNilEvent)
		}
		if !relayLegOK(e.Leg) {
			return fmt.Errorf("encode RelayAdvisory event: leg %d: %w", e.Leg, ErrUnknownEnum)
		}
		if !severityOK(e.Severity) {
			return fmt.Errorf("encode RelayAdvisory event: severity %d: %w", e.Severity, ErrUnknownEnum)
		}
		z.varint(uint64(e.Leg))
		z.varint(uint64(e.Severity))
		z.str("relay_advisory.message", e.Message)
	case nil:
		return fmt.Errorf("encode event: %w", ErrNilEvent)
	default:
		return fmt.Errorf("encode %T: %w", ev, ErrUnknownKind)
	}
	p.body = z.n

	sid, route := ev.Header()
	hz := sizer{}
	hz.str("session_id", sid)
	p.route = routeSize(&hz, &route)
	if hz.bad != "" {
		return fmt.Errorf("encode %v event: %s: string field contains invalid UTF-8", ev.Kind(), hz.bad)
	}
	if z.bad != "" {
		return fmt.Errorf("encode %v event: %s: string field contains invalid UTF-8", ev.Kind(), z.bad)
	}
	return nil
}

// appendBody appends the kind message of ev, sized by sizeEvent.
func appendBody(b []byte, p *encodePlan, ev Event) []byte {
	switch e := ev.(type) {
	case *EnvConnected:
		b = appendStr(b, 1, e.EnvID)
	case *ModelConnected:
	case *SessionStarted:
		b = appendStr(b, 1, e.EnvID)
	case *SessionEnded:
		b = appendStr(b, 1, e.Reason)
		b = appendVarint(b, 2, uint64(e.TotalSteps))
		b = appendVarint(b, 3, uint64(e.TotalEpisodes))
	case *SessionFailed:
		b = appendStr(b, 1, e.Reason)
	case *Log:
		b = appendVarint(b, 1, uint64(e.Level))
		b = appendStr(b, 2, e.Message)
		if e.Source != nil {
			b = appendMsg(b, 3, len(*e.Source))
			b = append(b, *e.Source...)
		}
	case *EpisodeStarted:
		b = appendStr(b, 1, e.EpisodeID)
		b = appendStr(b, 2, e.EpisodeRecordID)
		b = appendVarint(b, 3, uint64(e.EpisodeIndex))
		b = appendVarint(b, 4, uint64(e.EnvIndex))
		b = appendBool(b, 5, e.StartedFromAutoReset)
		b = appendOptVarint(b, 6, e.Seed.Set, uint64(e.Seed.Value))
		b = appendOptVarint(b, 7, e.TrialIndex.Set, e.TrialIndex.Value)
	case *EpisodeCompleted:
		b = appendStr(b, 1, e.EpisodeID)
		b = appendStr(b, 2, e.EpisodeRecordID)
		b = appendVarint(b, 3, uint64(e.EpisodeIndex))
		b = appendVarint(b, 4, uint64(e.EnvIndex))
		b = appendVarint(b, 5, uint64(e.StepCount))
		b = appendDouble(b, 6, e.CumulativeReward)
		b = appendBool(b, 7, e.Terminated)
		b = appendBool(b, 8, e.Truncated)
		b = appendVarint(b, 9, uint64(e.DurationMs))
		if e.FinalInfo != nil {
			b = appendNested(b, 10, p.nested)
		}
		b = appendOptVarint(b, 11, e.Success.Set, boolVarint(e.Success.Value))
		b = appendOptVarint(b, 12, e.Seed.Set, uint64(e.Seed.Value))
		b = appendOptVarint(b, 13, e.TrialIndex.Set, e.TrialIndex.Value)
		b = appendOptDouble(b, 14, e.PredictMs)
		b = appendOptDouble(b, 15, e.StepMs)
	case *ActionReceived:
		b = appendStr(b, 1, e.EpisodeID)
		b = appendStr(b, 2, e.EpisodeRecordID)
		b = appendStrs(b, 3, e.EpisodeIDs)
		b = appendStrs(b, 4, e.EpisodeRecordIDs)
		b = appendVarint(b, 5, uint64(e.Step))
		b = appendVarint(b, 6, uint64(e.EnvIndex))
		if e.ActionSpace != nil {
			b = appendMsg(b, 7, len(p.nested))
			b = append(b, p.nested...)
		}
		if e.Action != nil {
			b = appendLeaves(b, 8, e.Action, p.value)
		}
		if e.RawAction != nil {
			b = appendLeaves(b, 9, e.RawAction, p.raw)
		}
	case *StepCompleted:
		b = appendStr(b, 1, e.EpisodeID)
		b = appendStr(b, 2, e.EpisodeRecordID)
		b = appendVarint(b, 3, uint64(e.Step))
		b = appendVarint(b, 4, uint64(e.EnvIndex))
		if len(e.Rewards) > 0 {
			b = appendMsg(b, 5, 8*len(e.Rewards))
			for _, r := range e.Rewards {
				b = protowire.AppendFixed64(b, math.Float64bits(r))
			}
		}
		if e.Infos != nil {
			b = p.appendInfos(b, 6, e.Infos)
		}
		b = appendBools(b, 7, e.Terminated)
		b = appendBools(b, 8, e.Truncated)
		b = appendBools(b, 9, e.AutoresetRoll)
		b = appendOptDouble(b, 10, e.PredictMs)
		b = appendOptDouble(b, 11, e.StepMs)
	case *ObservationEmitted:
		b = appendStr(b, 1, e.EpisodeID)
		b = appendStr(b, 2, e.EpisodeRecordID)
		b = appendStrs(b, 3, e.EpisodeIDs)
		b = appendStrs(b, 4, e.EpisodeRecordIDs)
		b = appendVarint(b, 5, uint64(e.Step))
		b = appendVarint(b, 6, uint64(e.EnvIndex))
		b = appendBool(b, 7, e.IsReset)
		b = appendVarint(b, 8, uint64(e.NumEnvs))
		if e.ObservationSpace != nil {
			b = appendMsg(b, 9, len(p.nested))
			b = append(b, p.nested...)
		}
		if e.Observation != nil {
			b = appendLeaves(b, 10, e.Observation, p.value)
		}
		if e.RawObservation != nil {
			b = appendLeaves(b, 11, e.RawObservation, p.raw)
		}
		if e.Infos != nil {
			b = p.appendInfos(b, 12, e.Infos)
		}
	case *TelemetrySnapshot:
		b = appendVarint(b, 1, uint64(e.Snapshot.Horizon))
		for i := range e.Snapshot.Rows {
			r := &e.Snapshot.Rows[i]
			var z sizer
			b = appendMsg(b, 2, telemetryRowSize(&z, r))
			b = appendStr(b, 1, r.Op)
			b = appendStr(b, 2, r.Component)
			b = appendStr(b, 3, r.Metric)
			b = appendVarint(b, 4, uint64(r.Kind))
			b = appendVarint(b, 5, r.Count)
			b = appendDouble(b, 6, r.Avg)
			b = appendDouble(b, 7, r.P50)
			b = appendDouble(b, 8, r.P95)
			b = appendDouble(b, 9, r.P99)
		}
	case *RelayAdvisory:
		b = appendVarint(b, 1, uint64(e.Leg))
		b = appendVarint(b, 2, uint64(e.Severity))
		b = appendStr(b, 3, e.Message)
	}
	return b
}
