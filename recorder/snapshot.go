package recorder

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A snapshot record (recSnapshot) holds the whole assembly state as of one
// log position: every session the assembler holds, with its open episodes'
// buffered rows. Recovery restores it and replays only the event records
// after that position, and the log before it can be removed (checkpoint.go
// says when one is taken and when it may be relied on).
//
// Its body is protobuf wire data, written and read by hand here:
//
//	Snapshot  1 as_of (varint: the position of the last event applied)
//	          2 session (Session, repeated)
//	Session   1 id  2 route (Route)  3 env_id  4 status  5 reason
//	          6 started  7 started_at  8 ended_at  9 last_at
//	          10 total_steps  11 total_episodes  12 has_totals  13 ended
//	          14 final_telemetry  15 saw_final_telemetry
//	          16 episode (Episode, repeated)  17 done (repeated record id)
//	          18 lane (Lane, repeated)  19 pending (repeated record id,
//	          "" for a lane whose step was dropped)  20 have_pending
//	          21 observation_space  22 action_space (SpaceSpec bytes)
//	          23 episodes_recorded  24 steps_recorded  25 dropped_steps
//	          26 problem (Problem, repeated)  27 log (Log, repeated)
//	          28 telemetry (Telemetry, repeated)  29 writes  30 num_envs
//	          31 reserved  32 row_done  33 log_rows  34 telemetry_rows  40 sequence (varint, not
//	          zigzag: the highest producer sequence number logged,
//	          sequence.go)  41 clocks (varint: 1 an event came with its
//	          time, 2 one was stamped with the recorder's clock)
//	Route     1 env_id  2 env_component_id  3 model_component_id
//	Episode   1 id  2 record_id  3 index  4 env_index  5 auto_reset
//	          6 started_at  7 last_at  8 next_step  9 steps_recorded
//	          10 reward_sum (fixed64)  11 row (Row, repeated)
//	          12 replay_from (present: the rows are not in the snapshot;
//	          recovery rebuilds them from the log from this position)
//	Row       1 step  2 session_step  3 observation (absent: null)
//	          4 action  5 reward (fixed64)  6 flags (1 first, 2 last,
//	          4 terminated, 8 truncated)  7 recorded_at
//	Lane      1 observation (absent: none pending)  2 record_id
//	Problem   1 kind  2 count
//	Log       1 time  2 level  3 message  4 source (absent: null)
//	Telemetry 1 time  2 horizon  3 op  4 component  5 metric  6 kind
//	          7 count  8 avg  9 p50  10 p95  11 p99 (doubles: fixed64)
//
// A snapshot holds only open episodes: it is taken when no completed
// episode awaits finalisation, and a completed episode is in the state only
// until then. An open episode's rows are in the snapshot unless it streams
// rows to its steps file (those are in no durable file yet) or buffers more
// than inlineRowsMax: then the snapshot names the log position of its first
// event, the log is kept from there, and recovery rebuilds its rows by
// replaying the log from there to the snapshot (recover.go).
//
// Times are Unix nanoseconds (varint, zigzag), absent for the zero time;
// integers are varints (zigzag where they can be negative); booleans are
// varints present only when true. The field numbers are part of the
// on-disk format: do not change them.

var errBadSnapshot = errors.New("malformed snapshot record")

// snapshotable reports whether the whole assembly state can be put in a
// snapshot now, and its approximate size: not while an episode awaits
// finalisation or streams rows to a steps file being written (those rows
// are only in the log until the file is durable).
func (a *assembler) snapshotable() (size int, ok bool) {
	for _, s := range a.sessions {
		if len(s.toFinalize) > 0 {
			return 0, false
		}
		size += 256 + len(s.done)*16 + len(s.logs)*128 + len(s.telemetry)*160
		for _, ep := range s.episodes {
			size += 128
			if !external(ep) {
				size += len(ep.arena) + len(ep.rows)*48
			}
		}
		for _, l := range s.lanes {
			size += 32 + len(l.obs)
		}
	}
	return size, true
}

// inlineRowsMax is the most buffered row bytes an open episode puts in a
// snapshot; a larger one is rebuilt from the log (see external).
const inlineRowsMax = 64 << 10

// external reports whether a snapshot leaves ep's rows to be rebuilt from
// the log: rows streamed to a steps file not yet durable are only there,
// and a large buffer would make snapshots large and slow.
func external(ep *episode) bool {
	return ep.file != nil || ep.flushedRows > 0 || len(ep.arena) > inlineRowsMax
}

// oldestOpen returns the log position of the first event of the oldest
// open episode (0: none). The log is kept from there: a later snapshot may
// leave any episode open now to the log, even one an earlier snapshot held
// with its rows.
func (a *assembler) oldestOpen() uint64 {
	var from uint64
	for _, s := range a.sessions {
		for _, ep := range s.episodes {
			if from == 0 || ep.firstPos < from {
				from = ep.firstPos
			}
		}
	}
	return from
}

// appendSnapshot appends a snapshot record of every session in a, as of
// log position asOf.
func (a *assembler) appendSnapshot(dst []byte, asOf uint64) ([]byte, error) {
	dst = append(dst, recSnapshot)
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, asOf)
	var err error
	for _, s := range a.sortedSessions() {
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		if dst, err = appendMessage(dst, func(b []byte) ([]byte, error) { return appendSession(b, s) }); err != nil {
			return nil, fmt.Errorf("snapshot session %s: %w", s.id, err)
		}
	}
	return dst, nil
}

// appendMessage appends a length-prefixed message written by body. The
// length takes a fixed 5 bytes (a padded varint, which protobuf accepts)
// so body can write in place.
func appendMessage(dst []byte, body func([]byte) ([]byte, error)) ([]byte, error) {
	at := len(dst)
	dst = append(dst, 0x80, 0x80, 0x80, 0x80, 0)
	dst, err := body(dst)
	if err != nil {
		return nil, err
	}
	n := len(dst) - at - 5
	if n > math.MaxUint32>>4 {
		return nil, fmt.Errorf("message of %d bytes is too large", n)
	}
	for i := range 4 {
		dst[at+i] = byte(n>>(7*i))&0x7f | 0x80
	}
	dst[at+4] = byte(n >> 28)
	return dst, nil
}

func appendStr(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

// appendPresent appends v even when empty: its presence means something.
func appendPresent(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeZigZag(v))
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, 1)
}

func appendTime(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeZigZag(t.UnixNano()))
}

func appendFloat(b []byte, num protowire.Number, v float64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func appendSpec(b []byte, num protowire.Number, spec *spacesv1.SpaceSpec) ([]byte, error) {
	if spec == nil {
		return b, nil
	}
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return appendPresent(b, num, wire), nil
}

func appendSession(b []byte, s *session) ([]byte, error) {
	var err error
	b = appendStr(b, 1, s.id)
	if s.route != (events.RuntimeEnvContext{}) {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b, _ = appendMessage(b, func(b []byte) ([]byte, error) {
			b = appendStr(b, 1, s.route.EnvID)
			b = appendStr(b, 2, s.route.EnvComponentID)
			return appendStr(b, 3, s.route.ModelComponentID), nil
		})
	}
	b = appendStr(b, 3, s.envID)
	b = appendStr(b, 4, s.status)
	b = appendStr(b, 5, s.reason)
	b = appendBool(b, 6, s.started)
	b = appendTime(b, 7, s.startedAt)
	b = appendTime(b, 8, s.endedAt)
	b = appendTime(b, 9, s.lastAt)
	b = appendInt(b, 10, s.totalSteps)
	b = appendInt(b, 11, s.totalEpisodes)
	b = appendBool(b, 12, s.hasTotals)
	b = appendBool(b, 13, s.ended)
	b = appendBool(b, 14, s.finalTelemetry)
	b = appendBool(b, 15, s.sawFinalTelemetry)
	for _, ep := range sortedOpen(s) {
		b = protowire.AppendTag(b, 16, protowire.BytesType)
		if b, err = appendMessage(b, func(b []byte) ([]byte, error) { return appendEpisode(b, ep) }); err != nil {
			return nil, fmt.Errorf("episode %s: %w", ep.recordID, err)
		}
	}
	for rid := range s.done {
		b = appendPresent(b, 17, []byte(rid))
	}
	for _, l := range s.lanes {
		b = protowire.AppendTag(b, 18, protowire.BytesType)
		b, _ = appendMessage(b, func(b []byte) ([]byte, error) {
			if l.hasObs {
				b = appendPresent(b, 1, l.obs)
			}
			return appendStr(b, 2, l.obsRecord), nil
		})
	}
	if s.havePending {
		for _, ep := range s.pending {
			rid := ""
			if ep != nil {
				rid = ep.recordID
			}
			b = appendPresent(b, 19, []byte(rid))
		}
		b = appendBool(b, 20, true)
	}
	if b, err = appendSpec(b, 21, s.obsSpec); err != nil {
		return nil, err
	}
	if b, err = appendSpec(b, 22, s.actSpec); err != nil {
		return nil, err
	}
	b = appendInt(b, 23, s.episodesRecorded)
	b = appendInt(b, 24, s.stepsRecorded)
	b = appendInt(b, 25, s.droppedSteps)
	for k, n := range s.problems {
		b = protowire.AppendTag(b, 26, protowire.BytesType)
		b, _ = appendMessage(b, func(b []byte) ([]byte, error) {
			return appendInt(appendStr(b, 1, string(k)), 2, n), nil
		})
	}
	for _, l := range s.logs {
		b = protowire.AppendTag(b, 27, protowire.BytesType)
		b, _ = appendMessage(b, func(b []byte) ([]byte, error) {
			b = appendTime(b, 1, l.time)
			b = appendStr(b, 2, l.level)
			b = appendStr(b, 3, l.message)
			if l.source != nil {
				b = appendPresent(b, 4, []byte(*l.source))
			}
			return b, nil
		})
	}
	for _, t := range s.telemetry {
		b = protowire.AppendTag(b, 28, protowire.BytesType)
		b, _ = appendMessage(b, func(b []byte) ([]byte, error) {
			r := t.row
			b = appendTime(b, 1, t.time)
			b = appendStr(b, 2, t.horizon)
			b = appendStr(b, 3, r.Op)
			b = appendStr(b, 4, r.Component)
			b = appendStr(b, 5, r.Metric)
			b = appendInt(b, 6, int64(r.Kind))
			b = appendInt(b, 7, int64(r.Count))
			b = appendFloat(b, 8, r.Avg)
			b = appendFloat(b, 9, r.P50)
			b = appendFloat(b, 10, r.P95)
			return appendFloat(b, 11, r.P99), nil
		})
	}
	b = appendInt(b, 29, int64(s.writes))
	b = appendInt(b, 30, int64(s.numEnvs))
	b = appendBool(b, 32, s.rowDone)
	b = appendInt(b, 33, s.logRows)
	b = appendInt(b, 34, s.teleRows)
	b = appendSessionSeq(b, s)
	return b, nil
}

func appendEpisode(b []byte, ep *episode) ([]byte, error) {
	if ep.completed {
		return nil, fmt.Errorf("episode %s is completed: snapshots hold open episodes only", ep.recordID)
	}
	b = appendStr(b, 1, ep.id)
	b = appendStr(b, 2, ep.recordID)
	b = appendInt(b, 3, ep.index)
	b = appendInt(b, 4, int64(ep.envIndex))
	b = appendBool(b, 5, ep.autoReset)
	b = appendTime(b, 6, ep.startedAt)
	b = appendTime(b, 7, ep.lastAt)
	b = appendInt(b, 8, ep.nextStep)
	b = appendInt(b, 9, ep.stepsRecorded)
	b = appendFloat(b, 10, ep.rewardSum)
	if external(ep) {
		b = protowire.AppendTag(b, 12, protowire.VarintType)
		return protowire.AppendVarint(b, ep.firstPos), nil
	}
	for _, r := range ep.rows {
		b = protowire.AppendTag(b, 11, protowire.BytesType)
		b, _ = appendMessage(b, func(b []byte) ([]byte, error) {
			b = appendInt(b, 1, r.step)
			b = appendInt(b, 2, r.sessionStep)
			if r.obsLen >= 0 {
				b = appendPresent(b, 3, ep.arena[r.obsOff:r.obsOff+r.obsLen])
			}
			b = appendPresent(b, 4, ep.arena[r.actOff:r.actOff+r.actLen])
			b = appendFloat(b, 5, r.reward)
			var flags int64
			for i, f := range []bool{r.isFirst, r.isLast, r.terminated, r.truncated} {
				if f {
					flags |= 1 << i
				}
			}
			b = appendInt(b, 6, flags)
			return appendTime(b, 7, r.recordedAt.time()), nil
		})
	}
	return b, nil
}

// fields calls f for each field of the message b; val is the field's bytes
// (BytesType) and v its number (VarintType, Fixed64Type).
func fields(b []byte, f func(num protowire.Number, v uint64, val []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errBadSnapshot, protowire.ParseError(n))
		}
		b = b[n:]
		var v uint64
		var val []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			val, n = protowire.ConsumeBytes(b)
		default:
			return fmt.Errorf("%w: field %d has wire type %d", errBadSnapshot, num, typ)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", errBadSnapshot, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, v, val); err != nil {
			return err
		}
	}
	return nil
}

func zz(v uint64) int64 { return protowire.DecodeZigZag(v) }

func nanos(v uint64) time.Time { return time.Unix(0, zz(v)).UTC() }

// snapshotAsOf reads the as_of of a snapshot record's body, its first
// field, without decoding the rest.
func snapshotAsOf(b []byte) (uint64, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.VarintType {
		return 0, fmt.Errorf("%w: it does not start with as_of", errBadSnapshot)
	}
	v, m := protowire.ConsumeVarint(b[n:])
	if m < 0 {
		return 0, fmt.Errorf("%w: as_of: %v", errBadSnapshot, protowire.ParseError(m))
	}
	return v, nil
}

// parseSnapshot decodes a snapshot record's body (after its type byte).
// The sessions it returns own copies of every byte they hold.
func parseSnapshot(b []byte) (asOf uint64, sessions []*session, err error) {
	err = fields(b, func(num protowire.Number, v uint64, val []byte) error {
		switch num {
		case 1:
			asOf = v
		case 2:
			s, err := parseSession(val)
			if err != nil {
				return err
			}
			sessions = append(sessions, s)
		}
		return nil
	})
	return asOf, sessions, err
}

func parseSession(b []byte) (*session, error) {
	s := &session{
		status:   statusOpen,
		episodes: make(map[string]*episode),
		done:     make(map[string]struct{}),
		problems: make(map[problemKind]int64),
	}
	var pending []string
	var obsWire, actWire []byte
	err := fields(b, func(num protowire.Number, v uint64, val []byte) error {
		switch num {
		case 1:
			s.id = string(val)
		case 2:
			return fields(val, func(num protowire.Number, _ uint64, val []byte) error {
				switch num {
				case 1:
					s.route.EnvID = string(val)
				case 2:
					s.route.EnvComponentID = string(val)
				case 3:
					s.route.ModelComponentID = string(val)
				}
				return nil
			})
		case 3:
			s.envID = string(val)
		case 4:
			s.status = string(val)
		case 5:
			s.reason = string(val)
		case 6:
			s.started = v != 0
		case 7:
			s.startedAt = nanos(v)
		case 8:
			s.endedAt = nanos(v)
		case 9:
			s.lastAt = nanos(v)
		case 10:
			s.totalSteps = zz(v)
		case 11:
			s.totalEpisodes = zz(v)
		case 12:
			s.hasTotals = v != 0
		case 13:
			s.ended = v != 0
		case 14:
			s.finalTelemetry = v != 0
		case 15:
			s.sawFinalTelemetry = v != 0
		case 16:
			ep, err := parseEpisode(val)
			if err != nil {
				return err
			}
			s.episodes[ep.recordID] = ep
		case 17:
			s.done[string(val)] = struct{}{}
		case 18:
			var l lane
			err := fields(val, func(num protowire.Number, _ uint64, val []byte) error {
				switch num {
				case 1:
					l.obs, l.hasObs = append([]byte{}, val...), true
				case 2:
					l.obsRecord = string(val)
				}
				return nil
			})
			s.lanes = append(s.lanes, l)
			return err
		case 19:
			pending = append(pending, string(val))
		case 20:
			s.havePending = v != 0
		case 21:
			obsWire = val
		case 22:
			actWire = val
		case 23:
			s.episodesRecorded = zz(v)
		case 24:
			s.stepsRecorded = zz(v)
		case 25:
			s.droppedSteps = zz(v)
		case 26:
			var kind string
			var n int64
			err := fields(val, func(num protowire.Number, v uint64, val []byte) error {
				switch num {
				case 1:
					kind = string(val)
				case 2:
					n = zz(v)
				}
				return nil
			})
			s.problems[problemKind(kind)] = n
			return err
		case 27:
			var l logRow
			err := fields(val, func(num protowire.Number, v uint64, val []byte) error {
				switch num {
				case 1:
					l.time = nanos(v)
				case 2:
					l.level = string(val)
				case 3:
					l.message = string(val)
				case 4:
					src := string(val)
					l.source = &src
				}
				return nil
			})
			s.logs = append(s.logs, l)
			return err
		case 28:
			var t telemetryRow
			err := fields(val, func(num protowire.Number, v uint64, val []byte) error {
				switch num {
				case 1:
					t.time = nanos(v)
				case 2:
					t.horizon = string(val)
				case 3:
					t.row.Op = string(val)
				case 4:
					t.row.Component = string(val)
				case 5:
					t.row.Metric = string(val)
				case 6:
					t.row.Kind = events.MetricKind(zz(v))
				case 7:
					t.row.Count = uint64(zz(v))
				case 8:
					t.row.Avg = math.Float64frombits(v)
				case 9:
					t.row.P50 = math.Float64frombits(v)
				case 10:
					t.row.P95 = math.Float64frombits(v)
				case 11:
					t.row.P99 = math.Float64frombits(v)
				}
				return nil
			})
			s.telemetry = append(s.telemetry, t)
			return err
		case 29:
			s.writes = int(zz(v))
		case 30:
			s.numEnvs = int32(zz(v))
		case 32:
			s.rowDone = v != 0
		case 33:
			s.logRows = zz(v)
		case 34:
			s.teleRows = zz(v)
		case snapshotSeqField:
			s.seq = v
		case snapshotClocksField:
			s.clocks = uint8(v & uint64(clockEvent|clockRecorder))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, l := range s.logs {
		s.logBytes += logRowBytes + len(l.message)
	}
	s.logBytes += logRowBytes * len(s.telemetry)
	if s.havePending {
		s.pending = make([]*episode, len(pending))
		for i, rid := range pending {
			if rid == "" {
				continue
			}
			if s.pending[i] = s.episodes[rid]; s.pending[i] == nil {
				return nil, fmt.Errorf("%w: session %s: pending step of %q, which is not open", errBadSnapshot, s.id, rid)
			}
		}
	}
	for _, w := range []struct {
		wire []byte
		obs  bool
	}{{obsWire, true}, {actWire, false}} {
		if w.wire == nil {
			continue
		}
		spec := &spacesv1.SpaceSpec{}
		if err := proto.Unmarshal(w.wire, spec); err != nil {
			return nil, fmt.Errorf("%w: session %s: space: %v", errBadSnapshot, s.id, err)
		}
		if _, ok := (&assembler{out: discard{}}).layoutFor(s, spec, w.obs); !ok {
			return nil, fmt.Errorf("%w: session %s: a space that does not compile", errBadSnapshot, s.id)
		}
	}
	return s, nil
}

func parseEpisode(b []byte) (*episode, error) {
	ep := &episode{}
	err := fields(b, func(num protowire.Number, v uint64, val []byte) error {
		switch num {
		case 1:
			ep.id = string(val)
		case 2:
			ep.recordID = string(val)
		case 3:
			ep.index = zz(v)
		case 4:
			ep.envIndex = int32(zz(v))
		case 5:
			ep.autoReset = v != 0
		case 6:
			ep.startedAt = nanos(v)
		case 7:
			ep.lastAt = nanos(v)
		case 8:
			ep.nextStep = zz(v)
		case 9:
			ep.stepsRecorded = zz(v)
		case 10:
			ep.rewardSum = math.Float64frombits(v)
		case 12:
			ep.replayFrom = v
			if v == 0 {
				return fmt.Errorf("%w: episode replayed from position 0", errBadSnapshot)
			}
		case 11:
			r := stepRow{obsLen: -1}
			err := fields(val, func(num protowire.Number, v uint64, val []byte) error {
				switch num {
				case 1:
					r.step = zz(v)
				case 2:
					r.sessionStep = zz(v)
				case 3:
					r.obsOff, r.obsLen = len(ep.arena), len(val)
					ep.arena = append(ep.arena, val...)
				case 4:
					r.actOff, r.actLen = len(ep.arena), len(val)
					ep.arena = append(ep.arena, val...)
				case 5:
					r.reward = math.Float64frombits(v)
				case 6:
					f := zz(v)
					r.isFirst, r.isLast, r.terminated, r.truncated = f&1 != 0, f&2 != 0, f&4 != 0, f&8 != 0
				case 7:
					r.recordedAt = stampOf(nanos(v))
				}
				return nil
			})
			ep.rows = append(ep.rows, r)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ep.recordID == "" {
		return nil, fmt.Errorf("%w: an episode without a record id", errBadSnapshot)
	}
	return ep, nil
}

// discard is an output that drops everything; parseSession compiles the
// spaces through the assembler's cache with it.
type discard struct{}

func (discard) stepsFull(*session, *episode)           {}
func (discard) episodeDone(*session, *episode, string) {}
func (discard) sessionDone(*session)                   {}
func (discard) newSession(*session, events.Event)      {}
func (discard) problem(*session, problemKind, string)  {}

// restore makes sessions, decoded from a snapshot as of position from-1,
// the assembler's state; from is the first log position they are built
// from on. Episodes whose rows the snapshot left to the log keep their
// replayFrom until catchUp rebuilds them.
func (a *assembler) restore(sessions []*session, from uint64) {
	for _, s := range sessions {
		s.firstPos = from
		for _, ep := range s.episodes {
			ep.firstPos = from
			if ep.replayFrom != 0 {
				ep.firstPos = ep.replayFrom
			}
			a.open++
		}
		a.sessions[s.rec()] = s
	}
}
