package events

// Fast decoding
//
// A Decoder reads eventsv1.Event wire bytes straight into the Go event with
// protowire, without building an eventsv1.Event. It accepts exactly the
// inputs proto.Unmarshal followed by FromProto accepts and returns the same
// event (a fuzz target checks both ways), which means it follows
// protobuf-go's decoding rules to the letter:
//
//   - a field whose wire type does not match its declaration is an unknown
//     field and is skipped, like any unknown field (groups included); a
//     field number of 0 or above 2^29-1, a stray end-group and a reserved
//     wire type are malformed;
//   - a singular scalar or string seen twice keeps the last value, a
//     repeated field appends, a message seen twice merges, and a different
//     member of the kind oneof replaces the one before;
//   - every string, kept or not, must be valid UTF-8; int32 and enum values
//     are truncated varints; rewards may be packed or not;
//   - malformed input is reported (ErrMalformed) before an unknown enum
//     value (ErrUnknownEnum) or a missing kind (ErrUnknownKind).
//
// Space specs and FinalInfo maps are decoded by protobuf-go, with the
// recursion limit they would have inside the event.
//
// UTF-8: strings are copied into one scratch buffer as they are read; when
// the whole buffer is ASCII (ids always are) every string is valid, and
// otherwise the message is decoded again checking each string, so the
// common case costs one word-at-a-time pass.
//
// Memory: one decode makes a handful of exact-size allocations: the event,
// one string holding every string of the event (each field is a substring),
// one []string for both id lists, one []byte holding every payload leaf
// (each leaf is a sub-slice with its capacity capped at its length) and the
// [][]byte of leaves. Strings and leaves are separate so that neither keeps
// the other alive. Nothing aliases the input.
//
// A Decoder that decodes a stream (any but Unmarshal's) remembers the
// header strings, the kind message's two id strings and both id lists of
// the event before: a string equal to the remembered one is that string,
// and an id list equal to the remembered one is that same []string. A
// session's step events repeat their session, route and lane ids from one
// event to the next (an id changes when its lane's episode does), so most
// decode without allocating any string or list: at 16 lanes the two
// lists are 32 ids, about 1.2 KB per event, which were copied and
// allocated anew for every event.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// nestedUnmarshal decodes a space spec or FinalInfo map at the depth it has
// inside an eventsv1.Event (Event, then the kind message, then it), so that
// the recursion limit cuts where proto.Unmarshal of the event would.
var nestedUnmarshal = proto.UnmarshalOptions{Merge: true, RecursionLimit: protowire.DefaultRecursionLimit - 2}

// specMemoSize is how many distinct specs a Decoder remembers per field.
const specMemoSize = 4

// specMemo maps the wire bytes of recently decoded specs to the decoded
// spec, so that an unchanged spec decodes to the same pointer.
type specMemo struct {
	raw  [specMemoSize][]byte
	spec [specMemoSize]*spacesv1.SpaceSpec
	next int
}

func (m *specMemo) lookup(raw []byte) *spacesv1.SpaceSpec {
	for i := range m.spec {
		if m.spec[i] != nil && bytes.Equal(m.raw[i], raw) {
			return m.spec[i]
		}
	}
	return nil
}

func (m *specMemo) add(raw []byte, s *spacesv1.SpaceSpec) {
	i := m.next
	m.next = (m.next + 1) % specMemoSize
	m.raw[i] = append(m.raw[i][:0], raw...)
	m.spec[i] = s
}

// span is a string as offsets into Decoder.str, or a leaf or nested
// message as offsets into the input.
type span struct{ lo, hi int }

// rawRow is a telemetry row whose strings are still spans.
type rawRow struct {
	op, component, metric span
	kind                  int32
	count                 uint64
	avg, p50, p95, p99    float64
}

// Decoder decodes eventsv1.Event messages into events. It keeps scratch
// space between calls, and remembers the last few action and observation
// specs it decoded: a spec whose wire bytes equal a remembered one decodes
// to the same *spacesv1.SpaceSpec, so a caller can tell an unchanged spec
// by comparing pointers. Such a spec is shared between events and must not
// be modified. Likewise it hands out an id list equal to the previous
// event's as the same []string (see the package notes on memory).
//
// The zero Decoder is ready to use. A Decoder is not safe for concurrent
// use: give each pipeline its own.
type Decoder struct {
	// fresh turns the spec memo off (Unmarshal's pooled decoders).
	fresh bool
	// strict checks each string's UTF-8 as it is read.
	strict bool

	// Scratch of one Decode. It holds no pointers, so filling it costs
	// no write barriers and it keeps nothing alive.
	str     []byte  // the bytes of every string of the event
	hdr     [4]span // session_id and the route's three strings
	sing    [2]span // the kind message's fields 1 and 2 when strings
	ids     [2][]span
	leaves  [2][]span // the SpaceValue's leaves, then the raw one's
	value   [2]bool   // the SpaceValue (then the raw one) is present
	nested  []span
	infos   []span // a StepCompleted's or ObservationEmitted's infos
	rewards []float64
	flags   [3][]bool // terminated, truncated, autoreset_roll
	rows    []rawRow
	enum    int32 // log level, telemetry horizon or relay leg
	enum2   int32 // advisory severity
	src     span
	hasSrc  bool
	lane    Option[uint32]
	seq     uint64 // the message's sequence field (sequence.go)
	recClk  bool   // the message's recorder_clock field (sequence.go)
	nonce   span   // the message's run_nonce field (sequence.go)
	// lastNonce is the run nonce of the last message decoded, handed out
	// again while unchanged.
	lastNonce []byte
	hash      uint64 // a log record's content_hash field (runid.go)

	actSpecs, obsSpecs specMemo

	// The strings and id lists of the event before, handed out again
	// while unchanged (not by fresh decoders).
	lastHdr  [4]string
	lastSing [2]string
	lastIDs  [2][]string
}

// decoderPool serves Unmarshal, whose events must not share specs or id
// lists.
var decoderPool = sync.Pool{New: func() any { return &Decoder{fresh: true} }}

// Decode decodes one eventsv1.Event message (without a length prefix) and
// returns the event and the time it was observed (the zero time when the
// message carries none). The event shares no memory with b and stays valid
// after later calls, except that its space spec and its id lists
// (EpisodeIDs, EpisodeRecordIDs) may be shared with other events from the
// same Decoder: treat them as read-only. Errors wrap ErrMalformed,
// ErrUnknownKind or ErrUnknownEnum.
func (d *Decoder) Decode(b []byte) (Event, time.Time, error) {
	ev, ns, err := d.decode(b)
	if err != nil {
		return nil, time.Time{}, err
	}
	return ev, nanosToTime(ns), nil
}

func malformed(what string) error {
	return fmt.Errorf("decode event: %s: %w", what, ErrMalformed)
}

// consumeField reads one field: its number, wire type, and value (v for
// varint and fixed types, val for length-delimited ones; a group is
// skipped). n < 0 means malformed input.
func consumeField(b []byte) (num protowire.Number, typ protowire.Type, v uint64, val []byte, n int) {
	// Fast path: a one-byte tag with a one-byte varint or length.
	if len(b) >= 2 && b[0] < 0x80 && b[0] >= 1<<3 && b[1] < 0x80 {
		num, typ = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
		switch typ {
		case protowire.VarintType:
			return num, typ, uint64(b[1]), nil, 2
		case protowire.BytesType:
			if end := 2 + int(b[1]); end <= len(b) {
				return num, typ, 0, b[2:end], end
			}
		}
	}
	return consumeFieldSlow(b)
}

func consumeFieldSlow(b []byte) (num protowire.Number, typ protowire.Type, v uint64, val []byte, n int) {
	var t uint64
	t, n = protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, 0, 0, nil, n
	}
	// protobuf-go refuses field numbers outside [1, 2^29-1] at message
	// level (protowire.ConsumeTag would take up to 2^31-1).
	if f := t >> 3; f < uint64(protowire.MinValidNumber) || f > uint64(protowire.MaxValidNumber) {
		return 0, 0, 0, nil, -1
	}
	num, typ = protowire.Number(t>>3), protowire.Type(t&7)
	b = b[n:]
	var m int
	switch typ {
	case protowire.VarintType:
		v, m = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		v, m = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		val, m = protowire.ConsumeBytes(b)
	default:
		// Fixed32 and groups are never ours; an end group outside a group
		// and the reserved types 6 and 7 fail here.
		m = protowire.ConsumeFieldValue(num, typ, b)
	}
	if m < 0 {
		return 0, 0, 0, nil, m
	}
	return num, typ, v, val, n + m
}

// isASCII reports whether every byte of b is below 0x80.
func isASCII(b []byte) bool {
	var or uint64
	for len(b) >= 8 {
		or |= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		or |= uint64(c)
	}
	return or&asciiMask == 0
}

// addStr keeps s for the event's string. UTF-8 is checked string by
// string only in strict mode; otherwise decode checks that all the strings
// together are ASCII, and decodes again in strict mode if they are not.
func (d *Decoder) addStr(s []byte, field string) (span, error) {
	if d.strict && !utf8.Valid(s) {
		return span{}, malformed(field + ": string field contains invalid UTF-8")
	}
	lo := len(d.str)
	d.str = append(d.str, s...)
	return span{lo, len(d.str)}, nil
}

// resetKind drops what was decoded of the kind message before a different
// kind replaced it. Specs and maps not yet decoded are decoded first, since
// proto.Unmarshal would have failed on a malformed one.
func (d *Decoder) resetKind(in []byte, k Kind) error {
	if err := d.checkNested(in, k); err != nil {
		return err
	}
	d.clearKind()
	return nil
}

// clearKind empties the scratch of the kind message.
func (d *Decoder) clearKind() {
	d.sing = [2]span{}
	d.ids[0], d.ids[1] = d.ids[0][:0], d.ids[1][:0]
	d.leaves[0], d.leaves[1] = d.leaves[0][:0], d.leaves[1][:0]
	d.value = [2]bool{}
	d.nested = d.nested[:0]
	d.infos = d.infos[:0]
	d.rewards = d.rewards[:0]
	for i := range d.flags {
		d.flags[i] = d.flags[i][:0]
	}
	d.rows = d.rows[:0]
	d.enum, d.enum2 = 0, 0
	d.src, d.hasSrc = span{}, false
}

func (d *Decoder) checkNested(in []byte, k Kind) error {
	for _, r := range d.nested {
		var err error
		if k == KindEpisodeCompleted {
			err = nestedUnmarshal.Unmarshal(in[r.lo:r.hi], &spacesv1.MetaMap{})
		} else {
			err = nestedUnmarshal.Unmarshal(in[r.lo:r.hi], &spacesv1.SpaceSpec{})
		}
		if err != nil {
			return fmt.Errorf("decode %v event: %w: %w", k, ErrMalformed, err)
		}
	}
	for _, r := range d.infos {
		if err := nestedUnmarshal.Unmarshal(in[r.lo:r.hi], &spacesv1.MetaMap{}); err != nil {
			return fmt.Errorf("decode %v event: %w: %w", k, ErrMalformed, err)
		}
	}
	return nil
}

func newEvent(k Kind) Event {
	switch k {
	case KindEnvConnected:
		return &EnvConnected{}
	case KindModelConnected:
		return &ModelConnected{}
	case KindSessionStarted:
		return &SessionStarted{}
	case KindSessionEnded:
		return &SessionEnded{}
	case KindSessionFailed:
		return &SessionFailed{}
	case KindLog:
		return &Log{}
	case KindEpisodeStarted:
		return &EpisodeStarted{}
	case KindEpisodeCompleted:
		return &EpisodeCompleted{}
	case KindActionReceived:
		return &ActionReceived{}
	case KindStepCompleted:
		return &StepCompleted{}
	case KindObservationEmitted:
		return &ObservationEmitted{}
	case KindTelemetrySnapshot:
		return &TelemetrySnapshot{}
	case KindRelayAdvisory:
		return &RelayAdvisory{}
	}
	return nil
}

func (d *Decoder) decode(in []byte) (Event, int64, error) {
	d.str = d.str[:0]
	d.hdr = [4]span{}
	d.lane = Option[uint32]{}
	d.seq, d.recClk, d.nonce, d.hash = 0, false, span{}, 0
	d.clearKind()
	var (
		ns   int64
		kind Kind
		ev   Event
	)
	for pos := 0; pos < len(in); {
		num, typ, v, val, n := consumeField(in[pos:])
		if n < 0 {
			return nil, 0, malformed(protowire.ParseError(n).Error())
		}
		pos += n
		switch {
		case num == 1 && typ == protowire.BytesType:
			r, err := d.addStr(val, "session_id")
			if err != nil {
				return nil, 0, err
			}
			d.hdr[0] = r
		case num == 2 && typ == protowire.BytesType:
			if err := d.decodeRoute(val); err != nil {
				return nil, 0, err
			}
		case num == 3 && typ == protowire.VarintType:
			ns = int64(v)
		case num == 4 && typ == protowire.VarintType:
			d.seq = v
		case num == recorderClockField && typ == protowire.VarintType:
			d.recClk = v != 0
		case num == runNonceField && typ == protowire.BytesType:
			d.nonce = span{pos - len(val), pos}
		case num == contentHashField && typ == protowire.Fixed64Type:
			d.hash = v
		case num >= protowire.Number(KindEnvConnected) && num <= protowire.Number(kindLast) && typ == protowire.BytesType:
			if k := Kind(num); k != kind {
				if err := d.resetKind(in, kind); err != nil {
					return nil, 0, err
				}
				kind, ev = k, newEvent(k)
			}
			if err := d.decodeBody(ev, val, pos-len(val)); err != nil {
				return nil, 0, err
			}
		}
	}
	if !d.strict && !isASCII(d.str) {
		d.strict = true
		ev, ns, err := d.decode(in)
		d.strict = false
		return ev, ns, err
	}
	if ev == nil {
		return nil, 0, fmt.Errorf("decode event: no kind set: %w", ErrUnknownKind)
	}
	if err := d.finish(ev, in); err != nil {
		return nil, 0, err
	}
	if nb := in[d.nonce.lo:d.nonce.hi]; !d.fresh && !bytes.Equal(nb, d.lastNonce) {
		if len(nb) == 0 {
			d.lastNonce = nil
		} else {
			d.lastNonce = bytes.Clone(nb)
		}
	}
	return ev, ns, nil
}

func (d *Decoder) decodeRoute(b []byte) error {
	for len(b) > 0 {
		num, typ, v, val, n := consumeField(b)
		if n < 0 {
			return malformed("route: " + protowire.ParseError(n).Error())
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= 1 && num <= 3 {
			r, err := d.addStr(val, "route")
			if err != nil {
				return err
			}
			d.hdr[num] = r
		} else if num == 4 && typ == protowire.VarintType {
			d.lane = Some(uint32(v))
		}
	}
	return nil
}

func bodyErr(k Kind, n int) error {
	return malformed(fmt.Sprintf("%v: %v", k, protowire.ParseError(n)))
}

// str12 keeps a kind message's string field 1 (or 2, when last is 2);
// it reports whether num was one of them.
func (d *Decoder) str12(num protowire.Number, last protowire.Number, val []byte) (bool, error) {
	if num < 1 || num > last {
		return false, nil
	}
	r, err := d.addStr(val, "string field")
	d.sing[num-1] = r
	return true, err
}

// decodeBody decodes (or merges) the kind message b, found at offset off
// of the input, into ev.
func (d *Decoder) decodeBody(ev Event, b []byte, off int) error {
	k := ev.Kind()
	for pos := 0; pos < len(b); {
		num, typ, v, val, n := consumeField(b[pos:])
		if n < 0 {
			return bodyErr(k, n)
		}
		pos += n
		isBytes, isVarint := typ == protowire.BytesType, typ == protowire.VarintType
		var err error
		switch e := ev.(type) {
		case *EnvConnected, *SessionStarted, *SessionFailed:
			if isBytes {
				_, err = d.str12(num, 1, val)
			}
		case *ModelConnected:
		case *SessionEnded:
			switch {
			case isBytes:
				_, err = d.str12(num, 1, val)
			case num == 2 && isVarint:
				e.TotalSteps = int64(v)
			case num == 3 && isVarint:
				e.TotalEpisodes = int64(v)
			}
		case *Log:
			switch {
			case num == 1 && isVarint:
				d.enum = int32(v)
			case num == 2 && isBytes:
				d.sing[0], err = d.addStr(val, "log message")
			case num == 3 && isBytes:
				d.src, err = d.addStr(val, "log source")
				d.hasSrc = true
			}
		case *EpisodeStarted:
			switch {
			case isBytes:
				_, err = d.str12(num, 2, val)
			case num == 3 && isVarint:
				e.EpisodeIndex = int64(v)
			case num == 4 && isVarint:
				e.EnvIndex = int32(v)
			case num == 5 && isVarint:
				e.StartedFromAutoReset = v != 0
			case num == 6 && isVarint:
				e.Seed = Some(int64(v))
			case num == 7 && isVarint:
				e.TrialIndex = Some(v)
			}
		case *EpisodeCompleted:
			switch {
			case num <= 2 && isBytes:
				_, err = d.str12(num, 2, val)
			case num == 3 && isVarint:
				e.EpisodeIndex = int64(v)
			case num == 4 && isVarint:
				e.EnvIndex = int32(v)
			case num == 5 && isVarint:
				e.StepCount = int64(v)
			case num == 6 && typ == protowire.Fixed64Type:
				e.CumulativeReward = math.Float64frombits(v)
			case num == 7 && isVarint:
				e.Terminated = v != 0
			case num == 8 && isVarint:
				e.Truncated = v != 0
			case num == 9 && isVarint:
				e.DurationMs = int64(v)
			case num == 10 && isBytes:
				d.nested = append(d.nested, span{off + pos - len(val), off + pos})
			case num == 11 && isVarint:
				e.Success = Some(v != 0)
			case num == 12 && isVarint:
				e.Seed = Some(int64(v))
			case num == 13 && isVarint:
				e.TrialIndex = Some(v)
			case num == 14 && typ == protowire.Fixed64Type:
				e.PredictMs = Some(math.Float64frombits(v))
			case num == 15 && typ == protowire.Fixed64Type:
				e.StepMs = Some(math.Float64frombits(v))
			}
		case *ActionReceived:
			switch {
			case num <= 2 && isBytes:
				_, err = d.str12(num, 2, val)
			case num <= 4 && isBytes:
				err = d.addID(num-3, val)
			case num == 5 && isVarint:
				e.Step = int64(v)
			case num == 6 && isVarint:
				e.EnvIndex = int32(v)
			case num == 7 && isBytes:
				d.nested = append(d.nested, span{off + pos - len(val), off + pos})
			case num == 8 && isBytes:
				err = d.decodeValue(0, val, off+pos-len(val))
			case num == 9 && isBytes:
				err = d.decodeValue(1, val, off+pos-len(val))
			}
		case *StepCompleted:
			switch {
			case num <= 2 && isBytes:
				_, err = d.str12(num, 2, val)
			case num == 3 && isVarint:
				e.Step = int64(v)
			case num == 4 && isVarint:
				e.EnvIndex = int32(v)
			case num == 5 && typ == protowire.Fixed64Type:
				d.rewards = append(d.rewards, math.Float64frombits(v))
			case num == 5 && isBytes:
				if len(val)%8 != 0 {
					return malformed("step_completed.rewards: packed length not a multiple of 8")
				}
				for ; len(val) > 0; val = val[8:] {
					d.rewards = append(d.rewards, math.Float64frombits(binary.LittleEndian.Uint64(val)))
				}
			case num == 6 && isBytes:
				d.infos = append(d.infos, span{off + pos - len(val), off + pos})
			case num >= 7 && num <= 9 && isVarint:
				d.flags[num-7] = append(d.flags[num-7], v != 0)
			case num >= 7 && num <= 9 && isBytes:
				err = d.packedBools(num-7, val)
			case num == 10 && typ == protowire.Fixed64Type:
				e.PredictMs = Some(math.Float64frombits(v))
			case num == 11 && typ == protowire.Fixed64Type:
				e.StepMs = Some(math.Float64frombits(v))
			}
		case *ObservationEmitted:
			switch {
			case num <= 2 && isBytes:
				_, err = d.str12(num, 2, val)
			case num <= 4 && isBytes:
				err = d.addID(num-3, val)
			case num == 5 && isVarint:
				e.Step = int64(v)
			case num == 6 && isVarint:
				e.EnvIndex = int32(v)
			case num == 7 && isVarint:
				e.IsReset = v != 0
			case num == 8 && isVarint:
				e.NumEnvs = uint32(v)
			case num == 9 && isBytes:
				d.nested = append(d.nested, span{off + pos - len(val), off + pos})
			case num == 10 && isBytes:
				err = d.decodeValue(0, val, off+pos-len(val))
			case num == 11 && isBytes:
				err = d.decodeValue(1, val, off+pos-len(val))
			case num == 12 && isBytes:
				d.infos = append(d.infos, span{off + pos - len(val), off + pos})
			}
		case *TelemetrySnapshot:
			switch {
			case num == 1 && isVarint:
				d.enum = int32(v)
			case num == 2 && isBytes:
				err = d.decodeRow(val)
			}
		case *RelayAdvisory:
			switch {
			case num == 1 && isVarint:
				d.enum = int32(v)
			case num == 2 && isVarint:
				d.enum2 = int32(v)
			case num == 3 && isBytes:
				d.sing[0], err = d.addStr(val, "relay advisory message")
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) addID(list protowire.Number, val []byte) error {
	r, err := d.addStr(val, "episode id")
	d.ids[list] = append(d.ids[list], r)
	return err
}

// packedBools appends the packed bools in b to flag list k.
func (d *Decoder) packedBools(k protowire.Number, b []byte) error {
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return malformed("step_completed flags: " + protowire.ParseError(n).Error())
		}
		d.flags[k] = append(d.flags[k], v != 0)
		b = b[n:]
	}
	return nil
}

// decodeValue decodes (or merges) SpaceValue k (0 the payload, 1 the raw
// payload) found at offset off of the input: it keeps the leaves as spans
// until finish copies them.
func (d *Decoder) decodeValue(k int, b []byte, off int) error {
	d.value[k] = true
	for pos := 0; pos < len(b); {
		num, typ, _, val, n := consumeField(b[pos:])
		if n < 0 {
			return malformed("space value: " + protowire.ParseError(n).Error())
		}
		pos += n
		if num == 1 && typ == protowire.BytesType {
			d.leaves[k] = append(d.leaves[k], span{off + pos - len(val), off + pos})
		}
	}
	return nil
}

func (d *Decoder) decodeRow(b []byte) error {
	var r rawRow
	for len(b) > 0 {
		num, typ, v, val, n := consumeField(b)
		if n < 0 {
			return malformed("telemetry row: " + protowire.ParseError(n).Error())
		}
		b = b[n:]
		var err error
		switch {
		case num == 1 && typ == protowire.BytesType:
			r.op, err = d.addStr(val, "telemetry row op")
		case num == 2 && typ == protowire.BytesType:
			r.component, err = d.addStr(val, "telemetry row component")
		case num == 3 && typ == protowire.BytesType:
			r.metric, err = d.addStr(val, "telemetry row metric")
		case num == 4 && typ == protowire.VarintType:
			r.kind = int32(v)
		case num == 5 && typ == protowire.VarintType:
			r.count = v
		case num == 6 && typ == protowire.Fixed64Type:
			r.avg = math.Float64frombits(v)
		case num == 7 && typ == protowire.Fixed64Type:
			r.p50 = math.Float64frombits(v)
		case num == 8 && typ == protowire.Fixed64Type:
			r.p95 = math.Float64frombits(v)
		case num == 9 && typ == protowire.Fixed64Type:
			r.p99 = math.Float64frombits(v)
		}
		if err != nil {
			return err
		}
	}
	d.rows = append(d.rows, r)
	return nil
}

// finish decodes the specs and maps, checks enums, and fills in the
// strings, id lists, leaves and rewards of ev.
func (d *Decoder) finish(ev Event, in []byte) error {
	k := ev.Kind()
	var spec *spacesv1.SpaceSpec
	var info *spacesv1.MetaMap
	if len(d.nested) > 0 {
		var err error
		switch k {
		case KindEpisodeCompleted:
			info = &spacesv1.MetaMap{}
			for _, r := range d.nested {
				if err = nestedUnmarshal.Unmarshal(in[r.lo:r.hi], info); err != nil {
					break
				}
			}
		case KindActionReceived:
			spec, err = d.spec(&d.actSpecs, in)
		case KindObservationEmitted:
			spec, err = d.spec(&d.obsSpecs, in)
		}
		if err != nil {
			return fmt.Errorf("decode %v event: %w: %w", k, ErrMalformed, err)
		}
	}
	var infos *spacesv1.MetaMap
	if len(d.infos) > 0 {
		infos = &spacesv1.MetaMap{}
		for _, r := range d.infos {
			if err := nestedUnmarshal.Unmarshal(in[r.lo:r.hi], infos); err != nil {
				return fmt.Errorf("decode %v event: infos: %w: %w", k, ErrMalformed, err)
			}
		}
	}
	switch k {
	case KindRelayAdvisory:
		if d.enum != int32(LegEnvToModel) && d.enum != int32(LegModelToEnv) {
			return fmt.Errorf("decode RelayAdvisory event: leg %d: %w", d.enum, ErrUnknownEnum)
		}
		if d.enum2 != int32(SeverityInfo) && d.enum2 != int32(SeverityCaution) {
			return fmt.Errorf("decode RelayAdvisory event: severity %d: %w", d.enum2, ErrUnknownEnum)
		}
	case KindLog:
		if d.enum < int32(LogDebug) || d.enum > int32(LogError) {
			return fmt.Errorf("decode Log event: level %d: %w", d.enum, ErrUnknownEnum)
		}
	case KindTelemetrySnapshot:
		if d.enum != int32(HorizonWindow) && d.enum != int32(HorizonSession) {
			return fmt.Errorf("decode TelemetrySnapshot event: horizon %d: %w", d.enum, ErrUnknownEnum)
		}
		for i := range d.rows {
			if mk := d.rows[i].kind; mk < int32(MetricDurationMs) || mk > int32(MetricCount) {
				return fmt.Errorf("decode TelemetrySnapshot event: row %d metric kind %d: %w", i, mk, ErrUnknownEnum)
			}
		}
	}

	// s holds every string of the event but those remembered from the
	// event before; made on first use.
	var s string
	at := func(r span) string {
		if len(s) != len(d.str) {
			s = string(d.str)
		}
		return s[r.lo:r.hi]
	}
	kept := func(r span, last *string) string {
		if d.fresh {
			return at(r)
		}
		if b := d.str[r.lo:r.hi]; string(b) != *last {
			*last = string(b)
		}
		return *last
	}
	sid := kept(d.hdr[0], &d.lastHdr[0])
	route := RuntimeEnvContext{EnvID: kept(d.hdr[1], &d.lastHdr[1]),
		EnvComponentID: kept(d.hdr[2], &d.lastHdr[2]), ModelComponentID: kept(d.hdr[3], &d.lastHdr[3]), Lane: d.lane}
	s0, s1 := kept(d.sing[0], &d.lastSing[0]), kept(d.sing[1], &d.lastSing[1])

	switch e := ev.(type) {
	case *EnvConnected:
		e.SessionID, e.Route, e.EnvID = sid, route, s0
	case *ModelConnected:
		e.SessionID, e.Route = sid, route
	case *SessionStarted:
		e.SessionID, e.Route, e.EnvID = sid, route, s0
	case *SessionEnded:
		e.SessionID, e.Route, e.Reason = sid, route, s0
	case *SessionFailed:
		e.SessionID, e.Route, e.Reason = sid, route, s0
	case *Log:
		e.SessionID, e.Route, e.Message = sid, route, s0
		e.Level = LogLevel(d.enum)
		if d.hasSrc {
			src := at(d.src)
			e.Source = &src
		}
	case *EpisodeStarted:
		e.SessionID, e.Route, e.EpisodeID, e.EpisodeRecordID = sid, route, s0, s1
	case *EpisodeCompleted:
		e.SessionID, e.Route, e.EpisodeID, e.EpisodeRecordID = sid, route, s0, s1
		e.FinalInfo = info
	case *ActionReceived:
		e.SessionID, e.Route, e.EpisodeID, e.EpisodeRecordID = sid, route, s0, s1
		e.EpisodeIDs, e.EpisodeRecordIDs = d.idLists(at)
		e.ActionSpace = spec
		e.Action = d.leafList(0, in)
		e.RawAction = d.leafList(1, in)
	case *StepCompleted:
		e.SessionID, e.Route, e.EpisodeID, e.EpisodeRecordID = sid, route, s0, s1
		if len(d.rewards) > 0 {
			e.Rewards = append([]float64(nil), d.rewards...)
		}
		e.Infos = infos
		e.Terminated, e.Truncated, e.AutoresetRoll = d.flagLists()
	case *ObservationEmitted:
		e.SessionID, e.Route, e.EpisodeID, e.EpisodeRecordID = sid, route, s0, s1
		e.EpisodeIDs, e.EpisodeRecordIDs = d.idLists(at)
		e.ObservationSpace = spec
		e.Observation = d.leafList(0, in)
		e.RawObservation = d.leafList(1, in)
		e.Infos = infos
	case *TelemetrySnapshot:
		e.SessionID, e.Route = sid, route
		e.Snapshot.Horizon = TelemetryHorizon(d.enum)
		if len(d.rows) > 0 {
			rows := make([]TelemetryRow, len(d.rows))
			for i := range d.rows {
				r := &d.rows[i]
				rows[i] = TelemetryRow{Op: at(r.op), Component: at(r.component), Metric: at(r.metric),
					Kind: MetricKind(r.kind), Count: r.count, Avg: r.avg, P50: r.p50, P95: r.p95, P99: r.p99}
			}
			e.Snapshot.Rows = rows
		}
	case *RelayAdvisory:
		e.SessionID, e.Route, e.Message = sid, route, at(d.sing[0])
		e.Leg, e.Severity = RelayLeg(d.enum), AdvisorySeverity(d.enum2)
	}
	return nil
}

// flagLists returns the three per-lane flag lists, each nil when empty,
// in one allocation.
func (d *Decoder) flagLists() (terminated, truncated, roll []bool) {
	n0, n1, n2 := len(d.flags[0]), len(d.flags[1]), len(d.flags[2])
	if n0+n1+n2 == 0 {
		return nil, nil, nil
	}
	all := make([]bool, 0, n0+n1+n2)
	all = append(append(append(all, d.flags[0]...), d.flags[1]...), d.flags[2]...)
	if n0 > 0 {
		terminated = all[:n0:n0]
	}
	if n1 > 0 {
		truncated = all[n0 : n0+n1 : n0+n1]
	}
	if n2 > 0 {
		roll = all[n0+n1 : n0+n1+n2 : n0+n1+n2]
	}
	return terminated, truncated, roll
}

// spec returns the event's spec, reusing a remembered one when its wire
// bytes are unchanged.
func (d *Decoder) spec(m *specMemo, in []byte) (*spacesv1.SpaceSpec, error) {
	memo := !d.fresh && len(d.nested) == 1
	if memo {
		if s := m.lookup(in[d.nested[0].lo:d.nested[0].hi]); s != nil {
			return s, nil
		}
	}
	s := &spacesv1.SpaceSpec{}
	for _, r := range d.nested {
		if err := nestedUnmarshal.Unmarshal(in[r.lo:r.hi], s); err != nil {
			return nil, err
		}
	}
	if memo {
		m.add(in[d.nested[0].lo:d.nested[0].hi], s)
	}
	return s, nil
}

// idLists returns both id lists, each nil when empty: in one allocation
// for a fresh decoder, else each the remembered list when unchanged (see
// keptIDs).
func (d *Decoder) idLists(at func(span) string) (ids, recordIDs []string) {
	if !d.fresh {
		return d.keptIDs(0), d.keptIDs(1)
	}
	n0, n1 := len(d.ids[0]), len(d.ids[1])
	if n0+n1 == 0 {
		return nil, nil
	}
	all := make([]string, n0+n1)
	for i, r := range d.ids[0] {
		all[i] = at(r)
	}
	for i, r := range d.ids[1] {
		all[n0+i] = at(r)
	}
	if n0 > 0 {
		ids = all[:n0:n0]
	}
	if n1 > 0 {
		recordIDs = all[n0:]
	}
	return ids, recordIDs
}

// keptIDs returns id list k: the list of the event before if every id is
// the same, else a new list (its length and capacity equal, so that an
// append cannot write into a list another event holds) that keeps each
// unchanged id's string and allocates the others.
func (d *Decoder) keptIDs(k int) []string {
	spans := d.ids[k]
	if len(spans) == 0 {
		return nil
	}
	last := d.lastIDs[k]
	if len(last) == len(spans) {
		i := 0
		for i < len(spans) && string(d.str[spans[i].lo:spans[i].hi]) == last[i] {
			i++
		}
		if i == len(spans) {
			return last
		}
	}
	out := make([]string, len(spans))
	for i, r := range spans {
		b := d.str[r.lo:r.hi]
		if i < len(last) && string(b) == last[i] {
			out[i] = last[i]
		} else {
			out[i] = string(b)
		}
	}
	d.lastIDs[k] = out
	return out
}

// leafList copies the leaves of SpaceValue k into one new buffer: nil when
// the SpaceValue was absent, non-nil (and every leaf non-nil) when present.
func (d *Decoder) leafList(k int, in []byte) [][]byte {
	if !d.value[k] {
		return nil
	}
	total := 0
	for _, r := range d.leaves[k] {
		total += r.hi - r.lo
	}
	buf := make([]byte, total)
	out := make([][]byte, len(d.leaves[k]))
	off := 0
	for i, r := range d.leaves[k] {
		end := off + copy(buf[off:], in[r.lo:r.hi])
		out[i] = buf[off:end:end]
		off = end
	}
	return out
}
