package events

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/events/eventsv1"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// protoMarshal is the reference encoding: ToProto's message marshalled by
// protobuf-go.
func protoMarshal(ev Event, t time.Time) ([]byte, error) {
	m, err := ToProto(ev, t)
	if err != nil {
		return nil, err
	}
	return marshalOpts.Marshal(m)
}

// protoUnmarshal is the reference decoding: proto.Unmarshal, then
// FromProto.
func protoUnmarshal(b []byte) (Event, time.Time, error) {
	m := &eventsv1.Event{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return FromProto(m)
}

// errClass names the sentinel an error wraps.
func errClass(err error) string {
	for _, s := range []error{ErrMalformed, ErrUnknownKind, ErrUnknownEnum} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err == nil {
		return "ok"
	}
	return "other: " + err.Error()
}

// agree checks that the Decoder and the reference decoding agree on in.
func agree(t *testing.T, d *Decoder, in []byte) (Event, error) {
	t.Helper()
	want, wantT, wantErr := protoUnmarshal(in)
	got, gotT, err := d.Decode(in)
	in = in[:min(len(in), 256)] // for messages
	if errClass(err) != errClass(wantErr) {
		t.Fatalf("input %x: Decoder error %v, proto path %v", in, err, wantErr)
	}
	if err != nil {
		if got != nil {
			t.Fatalf("input %x: event with error %v", in, err)
		}
		return nil, err
	}
	if d := diffEvents(want, got); d != "" {
		t.Fatalf("input %x: Decoder vs proto path: %s", in, d)
	}
	if !gotT.Equal(wantT) || gotT.Location() != wantT.Location() {
		t.Fatalf("input %x: time %v, proto path %v", in, gotT, wantT)
	}
	return got, nil
}

// TestAppendMarshalMatchesProto checks that the encoder writes exactly the
// bytes protobuf-go writes for ToProto's message, for every kind.
func TestAppendMarshalMatchesProto(t *testing.T) {
	n := 6000
	if testing.Short() {
		n = 1200
	}
	g := newGen(11)
	for i := range n {
		k := allKinds[i%len(allKinds)]
		ev, tm := g.event(k), g.time()
		want, err := protoMarshal(ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: reference: %v", i, k, err)
		}
		got, err := AppendMarshal([]byte("prefix"), ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: AppendMarshal: %v", i, k, err)
		}
		if !bytes.Equal(got[6:], want) || string(got[:6]) != "prefix" {
			t.Fatalf("#%d %v: bytes differ\n got %x\nwant %x", i, k, got[6:], want)
		}
	}
}

// TestAppendMarshalBenchEvents pins the encoder on the benchmark events.
func TestAppendMarshalBenchEvents(t *testing.T) {
	for _, ev := range append(cartpoleSteps(), imageObservation()) {
		want, err := protoMarshal(ev, benchTime)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // a cache miss, then a hit
			got, err := AppendMarshal(nil, ev, benchTime)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%v: bytes differ", ev.Kind())
			}
		}
	}
}

// TestAppendMarshalGrowsOnce checks that encoding into a buffer too small
// for the event allocates once more than encoding into one large enough,
// whatever the payload's size, and within a bounded overshoot. (Counting
// against a baseline keeps the test true under -race, which adds
// allocations of its own.)
func TestAppendMarshalGrowsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Event
		dst  int // capacity of the destination
	}{
		{"image into nil", imageObservation(), 0},
		{"image into a small buffer", imageObservation(), 4096},
		{"cartpole action into nil", cartpoleAction(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := AppendMarshal(nil, tc.ev, benchTime)
			if err != nil {
				t.Fatal(err)
			}
			encode := func(dst []byte) (float64, []byte) {
				var out []byte
				allocs := testing.AllocsPerRun(20, func() {
					out, _ = AppendMarshal(dst, tc.ev, benchTime)
				})
				return allocs, out
			}
			base, _ := encode(make([]byte, 0, 2*len(want)))
			allocs, out := encode(make([]byte, 0, tc.dst))
			if allocs != base+1 {
				t.Errorf("%v allocations into a buffer of %d, %v into one large enough; want one more", allocs, tc.dst, base)
			}
			if !bytes.Equal(out, want) {
				t.Fatal("bytes differ")
			}
			// Large allocations round up to whole pages.
			if over := cap(out) - len(out); over > maxEnvelopeOverhead+8192 {
				t.Errorf("capacity %d for %d bytes", cap(out), len(out))
			}
		})
	}
}

// TestAppendMarshalInvalidUTF8 checks that every string field is checked:
// an event with one bad string fails in both encoders and leaves dst.
func TestAppendMarshalInvalidUTF8(t *testing.T) {
	const bad = "ok\xff"
	src := bad
	goodSrc := "driver"
	route := RuntimeEnvContext{EnvID: "e"}
	tests := []struct {
		name string
		ev   Event
	}{
		{"session id", &ModelConnected{SessionID: bad}},
		{"route env id", &ModelConnected{Route: RuntimeEnvContext{EnvID: bad}}},
		{"route env component", &ModelConnected{Route: RuntimeEnvContext{EnvComponentID: bad}}},
		{"route model component", &ModelConnected{Route: RuntimeEnvContext{ModelComponentID: bad}}},
		{"env connected env id", &EnvConnected{EnvID: bad}},
		{"session started env id", &SessionStarted{EnvID: bad}},
		{"session ended reason", &SessionEnded{Reason: bad}},
		{"session failed reason", &SessionFailed{Reason: bad}},
		{"log message", &Log{Level: LogInfo, Message: bad, Source: &goodSrc}},
		{"log source", &Log{Level: LogInfo, Source: &src}},
		{"episode started id", &EpisodeStarted{Route: route, EpisodeID: bad}},
		{"episode started record id", &EpisodeStarted{EpisodeRecordID: bad}},
		{"episode completed id", &EpisodeCompleted{EpisodeID: bad}},
		{"episode completed record id", &EpisodeCompleted{EpisodeRecordID: bad}},
		{"final info", &EpisodeCompleted{FinalInfo: &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			bad: {Kind: &spacesv1.MetaValue_Integer{Integer: 1}}}}}},
		{"action episode id", &ActionReceived{EpisodeID: bad}},
		{"action record id", &ActionReceived{EpisodeRecordID: bad}},
		{"action ids", &ActionReceived{EpisodeIDs: []string{"a", bad}}},
		{"action record ids", &ActionReceived{EpisodeRecordIDs: []string{bad}}},
		{"action long ids", &ActionReceived{EpisodeIDs: []string{"01890a5d-ac96-774b-bcce-b302099a0000", "01890a5d-ac96-774b-bcce-b302099a000\xc3"}}},
		{"action long id, bad middle", &ActionReceived{EpisodeIDs: []string{"01890a5d-ac96-774b-b\xffce-b302099a0000"}}},
		{"long episode id", &ActionReceived{EpisodeID: "01890a5d-ac96-774b-bcce-b302099a000\xe2\x82"}},
		{"action space", &ActionReceived{ActionSpace: &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{Charset: bad}}}}},
		{"step id", &StepCompleted{EpisodeID: bad}},
		{"step record id", &StepCompleted{EpisodeRecordID: bad}},
		{"observation id", &ObservationEmitted{EpisodeID: bad}},
		{"observation record id", &ObservationEmitted{EpisodeRecordID: bad}},
		{"observation ids", &ObservationEmitted{EpisodeIDs: []string{bad}}},
		{"observation record ids", &ObservationEmitted{EpisodeRecordIDs: []string{"", bad}}},
		{"observation space", &ObservationEmitted{ObservationSpace: &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{Keys: []string{bad}}}}}},
		{"telemetry op", &TelemetrySnapshot{Snapshot: Snapshot{Horizon: HorizonWindow, Rows: []TelemetryRow{{Kind: MetricCount, Op: bad}}}}},
		{"telemetry component", &TelemetrySnapshot{Snapshot: Snapshot{Horizon: HorizonWindow, Rows: []TelemetryRow{{Kind: MetricCount}, {Kind: MetricCount, Component: bad}}}}},
		{"telemetry metric", &TelemetrySnapshot{Snapshot: Snapshot{Horizon: HorizonWindow, Rows: []TelemetryRow{{Kind: MetricCount, Metric: bad}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := protoMarshal(tt.ev, time.Time{}); err == nil {
				t.Fatal("reference encoder accepted the event")
			}
			dst := make([]byte, 4, 1024)
			copy(dst, "keep")
			b, err := AppendMarshal(dst, tt.ev, time.Time{})
			if err == nil || string(b) != "keep" {
				t.Fatalf("AppendMarshal = %q, %v, want dst unchanged and an error", b, err)
			}
		})
	}
}

// TestAppendMarshalSpecCache checks that specs are cached by pointer and
// that the cache is safe for concurrent use: many goroutines, more specs
// than cache slots, every encoding checked against protobuf-go.
func TestAppendMarshalSpecCache(t *testing.T) {
	g := newGen(5)
	specs := make([]*spacesv1.SpaceSpec, 3*specCacheSize)
	want := make([][]byte, len(specs))
	for i := range specs {
		specs[i] = g.specNonNil(2)
		ev := &ActionReceived{SessionID: "s", ActionSpace: specs[i], Action: [][]byte{{byte(i)}}}
		var err error
		if want[i], err = protoMarshal(ev, benchTime); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			var buf []byte
			for range 2000 {
				// Mostly a few hot specs, sometimes a cold one.
				i := r.IntN(3)
				if r.IntN(10) == 0 {
					i = r.IntN(len(specs))
				}
				ev := &ActionReceived{SessionID: "s", ActionSpace: specs[i], Action: [][]byte{{byte(i)}}}
				var err error
				if buf, err = AppendMarshal(buf[:0], ev, benchTime); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(buf, want[i]) {
					errs <- fmt.Errorf("spec %d: bytes differ", i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A hot spec encodes without marshalling it again.
	ev := cartpoleAction()
	buf, err := AppendMarshal(nil, ev, benchTime)
	if err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() { buf, _ = AppendMarshal(buf[:0], ev, benchTime) }); a != 0 {
		t.Fatalf("AppendMarshal of a cartpole action: %v allocs, want 0", a)
	}
}

// TestDecoderRoundTrip checks that the Decoder returns every generated
// event unchanged, agrees with the proto path, and does not alias its
// input.
func TestDecoderRoundTrip(t *testing.T) {
	n := 6000
	if testing.Short() {
		n = 1200
	}
	g := newGen(12)
	var d Decoder
	for i := range n {
		k := allKinds[i%len(allKinds)]
		ev, tm := g.event(k), g.time()
		b, err := AppendMarshal(nil, ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: %v", i, k, err)
		}
		got := mustAgree(t, &d, b)
		if df := diffEvents(ev, got); df != "" {
			t.Fatalf("#%d %v: %s", i, k, df)
		}
		// Scribble over the input: the event must not change.
		for j := range b {
			b[j] ^= 0x5a
		}
		if df := diffEvents(ev, got); df != "" {
			t.Fatalf("#%d %v: event aliases its input: %s", i, k, df)
		}
	}
}

func mustAgree(t *testing.T, d *Decoder, b []byte) Event {
	t.Helper()
	ev, err := agree(t, d, b)
	if err != nil {
		t.Fatalf("decode %x: %v", b, err)
	}
	return ev
}

// TestDecoderLeaves checks the leaf slices: one shared buffer, each leaf's
// capacity capped so that appending to one cannot overwrite the next.
func TestDecoderLeaves(t *testing.T) {
	ev := &ActionReceived{Action: [][]byte{{1, 2}, nil, {3}}}
	b, err := AppendMarshal(nil, ev, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := new(Decoder).Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	leaves := got.(*ActionReceived).Action
	for i, l := range leaves {
		if l == nil || cap(l) != len(l) {
			t.Fatalf("leaf %d: nil %v, len %d cap %d", i, l == nil, len(l), cap(l))
		}
	}
	_ = append(leaves[0], 9)
	if leaves[2][0] != 3 {
		t.Fatal("appending to a leaf overwrote the next one")
	}
}

// TestDecoderSpecReuse checks that a Decoder returns the same spec pointer
// for unchanged spec bytes, per field, and that Unmarshal never shares.
func TestDecoderSpecReuse(t *testing.T) {
	steps := cartpoleSteps()
	act, obs := steps[0].(*ActionReceived), steps[2].(*ObservationEmitted)
	ab, err := AppendMarshal(nil, act, benchTime)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := AppendMarshal(nil, obs, benchTime)
	if err != nil {
		t.Fatal(err)
	}
	other := *act
	other.ActionSpace = &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 3}}}
	xb, err := AppendMarshal(nil, &other, benchTime)
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	decode := func(b []byte) Event {
		ev, _, err := d.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	a1 := decode(ab).(*ActionReceived).ActionSpace
	o1 := decode(ob).(*ObservationEmitted).ObservationSpace
	x1 := decode(xb).(*ActionReceived).ActionSpace
	a2 := decode(ab).(*ActionReceived).ActionSpace
	o2 := decode(ob).(*ObservationEmitted).ObservationSpace
	x2 := decode(xb).(*ActionReceived).ActionSpace
	if a1 != a2 || o1 != o2 || x1 != x2 {
		t.Fatal("unchanged spec bytes decoded to a new spec")
	}
	if a1 == x1 || !proto.Equal(a1, act.ActionSpace) || !proto.Equal(x1, other.ActionSpace) || !proto.Equal(o1, obs.ObservationSpace) {
		t.Fatal("wrong spec")
	}
	u1, _, err := Unmarshal(ab)
	if err != nil {
		t.Fatal(err)
	}
	u2, _, err := Unmarshal(ab)
	if err != nil {
		t.Fatal(err)
	}
	if u1.(*ActionReceived).ActionSpace == u2.(*ActionReceived).ActionSpace {
		t.Fatal("Unmarshal shared a spec between events")
	}
	// A warm decoder decodes a cartpole action in a few allocations.
	if a := testing.AllocsPerRun(100, func() { decode(ab) }); a > 5 {
		t.Fatalf("Decode of a cartpole action: %v allocs, want <= 5", a)
	}
}

// TestDecoderKeepsIDs checks that a Decoder hands out an unchanged id list
// as the same []string, a list with one id changed as a new list that
// keeps the other ids' strings, that each decodes to what was encoded, and
// that Unmarshal never shares; and that a warm decoder then allocates no
// string.
func TestDecoderKeepsIDs(t *testing.T) {
	steps := cartpoleSteps()
	act, obs := steps[0].(*ActionReceived), steps[2].(*ObservationEmitted)
	next := *act
	next.EpisodeRecordIDs = slices.Clone(act.EpisodeRecordIDs)
	next.EpisodeRecordIDs[3] = "ep-changed"
	var d Decoder
	decode := func(ev Event) Event {
		b, err := AppendMarshal(nil, ev, benchTime)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := d.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a1 := decode(act).(*ActionReceived)
	o1 := decode(obs).(*ObservationEmitted)
	a2 := decode(&next).(*ActionReceived)
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"action ids", a1.EpisodeIDs, act.EpisodeIDs},
		{"action record ids", a1.EpisodeRecordIDs, act.EpisodeRecordIDs},
		{"observation ids", o1.EpisodeIDs, obs.EpisodeIDs},
		{"observation record ids", o1.EpisodeRecordIDs, obs.EpisodeRecordIDs},
		{"changed record ids", a2.EpisodeRecordIDs, next.EpisodeRecordIDs},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: decoded %q, want %q", c.name, c.got, c.want)
		}
		if len(c.got) != cap(c.got) {
			t.Errorf("%s: capacity %d beyond its %d ids", c.name, cap(c.got), len(c.got))
		}
	}
	if &o1.EpisodeIDs[0] != &a1.EpisodeIDs[0] || &o1.EpisodeRecordIDs[0] != &a1.EpisodeRecordIDs[0] {
		t.Error("unchanged id lists decoded to new lists")
	}
	if &a2.EpisodeRecordIDs[0] == &a1.EpisodeRecordIDs[0] {
		t.Fatal("a changed id list decoded to the remembered one")
	}
	if unsafe.StringData(a2.EpisodeRecordIDs[0]) != unsafe.StringData(a1.EpisodeRecordIDs[0]) {
		t.Error("an unchanged id of a changed list was allocated again")
	}
	if a2.SessionID != a1.SessionID || unsafe.StringData(a2.SessionID) != unsafe.StringData(a1.SessionID) {
		t.Error("an unchanged session id was allocated again")
	}
	b, err := AppendMarshal(nil, act, benchTime)
	if err != nil {
		t.Fatal(err)
	}
	u1, _, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	u2, _, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if &u1.(*ActionReceived).EpisodeIDs[0] == &u2.(*ActionReceived).EpisodeIDs[0] {
		t.Fatal("Unmarshal shared an id list between events")
	}
	// The event, the leaves and their buffer: no string, no list.
	if a := testing.AllocsPerRun(100, func() { d.Decode(b) }); a > 3 {
		t.Fatalf("Decode of an unchanged cartpole action: %v allocs, want <= 3", a)
	}
}

// wire builds messages by hand for the decoder tests.
type wire []byte

func (w wire) tag(num int, typ protowire.Type) wire {
	return protowire.AppendTag(w, protowire.Number(num), typ)
}
func (w wire) varint(num int, v uint64) wire {
	return protowire.AppendVarint(w.tag(num, protowire.VarintType), v)
}
func (w wire) fixed64(num int, v uint64) wire {
	return protowire.AppendFixed64(w.tag(num, protowire.Fixed64Type), v)
}
func (w wire) fixed32(num int, v uint32) wire {
	return protowire.AppendFixed32(w.tag(num, protowire.Fixed32Type), v)
}
func (w wire) bytes(num int, b []byte) wire {
	return protowire.AppendBytes(w.tag(num, protowire.BytesType), b)
}
func (w wire) str(num int, s string) wire { return w.bytes(num, []byte(s)) }
func (w wire) msg(num int, m wire) wire   { return w.bytes(num, m) }
func (w wire) raw(b ...byte) wire         { return append(w, b...) }

// deepSpec is a SpaceSpec nested through tuples, levels messages deep
// (SpaceSpec, TupleSpec, SpaceSpec, ...), the innermost empty. It is
// written outside in, from the sizes of the levels.
func deepSpec(levels int) wire {
	field := func(i int) protowire.Number { // of level i's child in level i
		if i%2 == 1 { // a SpaceSpec: its tuple
			return 21
		}
		return 1 // a TupleSpec: its spaces
	}
	size := make([]int, levels+2) // size[i]: the body of level i
	for i := levels - 1; i >= 1; i-- {
		size[i] = protowire.SizeTag(field(i)) + protowire.SizeBytes(size[i+1])
	}
	var m wire
	for i := 1; i < levels; i++ {
		m = protowire.AppendTag(m, field(i), protowire.BytesType)
		m = protowire.AppendVarint(m, uint64(size[i+1]))
	}
	return m
}

// TestDecoderWireRules pins protobuf-go's decoding rules on hand-made
// inputs: each must decode as the proto path decodes it, with the
// expected outcome.
func TestDecoderWireRules(t *testing.T) {
	act := func(m wire) wire { return wire{}.msg(18, m) }
	tests := []struct {
		name    string
		in      wire
		wantErr error // nil: accepted
	}{
		{"empty input", wire{}, ErrUnknownKind},
		{"empty kind", wire{}.msg(11, nil), nil},
		{"header only", wire{}.str(1, "s").varint(3, 5), ErrUnknownKind},
		{"wrong wire type skipped", wire{}.varint(1, 7).fixed32(2, 1).bytes(3, []byte{1}).msg(12, wire{}.varint(1, 3)), nil},
		{"kind with wrong wire type skipped", wire{}.varint(18, 1).msg(11, nil), nil},
		{"kind with wrong wire type only", wire{}.varint(18, 1), ErrUnknownKind},
		{"unknown fields", wire{}.varint(99, 1).fixed32(4, 2).msg(18, wire{}.str(50, "x").fixed64(1, 3)), nil},
		{"unknown group", wire{}.tag(7, protowire.StartGroupType).varint(1, 1).tag(7, protowire.EndGroupType).msg(11, nil), nil},
		{"unknown group unterminated", wire{}.tag(7, protowire.StartGroupType).varint(1, 1), ErrMalformed},
		{"group with wrong end", wire{}.tag(7, protowire.StartGroupType).tag(8, protowire.EndGroupType).msg(11, nil), ErrMalformed},
		{"stray end group", wire{}.msg(11, nil).tag(7, protowire.EndGroupType), ErrMalformed},
		{"stray end group in kind", wire{}.msg(11, wire{}.tag(7, protowire.EndGroupType)), ErrMalformed},
		{"group in kind", wire{}.msg(11, wire{}.tag(1, protowire.StartGroupType).tag(1, protowire.EndGroupType)), nil},
		{"reserved wire type 6", wire{}.msg(11, nil).raw(1<<3 | 6), ErrMalformed},
		{"reserved wire type 7", wire{}.msg(11, nil).raw(1<<3|7, 0), ErrMalformed},
		{"field number 0", wire{}.raw(0x02, 0x00).msg(11, nil), ErrMalformed},
		{"field number max", wire{}.varint(int(protowire.MaxValidNumber), 1).msg(11, nil), nil},
		{"field number above max", wire{}.msg(11, nil).raw(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3)...).raw(0), ErrMalformed},
		{"field number above max in group", wire{}.tag(7, protowire.StartGroupType).raw(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3)...).raw(0).tag(7, protowire.EndGroupType).msg(11, nil), nil},
		{"truncated varint", wire{}.msg(11, nil).raw(3<<3, 0x80), ErrMalformed},
		{"overlong varint", wire{}.msg(11, nil).raw(3<<3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02), ErrMalformed},
		{"ten-byte varint", wire{}.msg(11, nil).raw(3<<3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), nil},
		{"truncated bytes", wire{}.msg(11, nil).raw(1<<3|2, 5, 'a'), ErrMalformed},
		{"truncated fixed64", wire{}.msg(11, nil).raw(9<<3|1, 1, 2), ErrMalformed},
		{"last session id wins", wire{}.str(1, "a").msg(11, nil).str(1, "b"), nil},
		{"route merges", wire{}.msg(2, wire{}.str(1, "e").str(2, "c")).msg(2, wire{}.str(2, "d").str(3, "m")).msg(11, nil), nil},
		{"invalid UTF-8 session id", wire{}.str(1, "\xff").msg(11, nil), ErrMalformed},
		{"invalid UTF-8 overwritten", wire{}.str(1, "\xff").str(1, "ok").msg(11, nil), ErrMalformed},
		{"invalid UTF-8 in route", wire{}.msg(2, wire{}.str(3, "\xc3")).msg(11, nil), ErrMalformed},
		{"invalid UTF-8 in discarded kind", wire{}.msg(15, wire{}.str(2, "\xff")).msg(11, nil), ErrMalformed},
		{"invalid UTF-8 in unknown field", wire{}.str(4, "\xff").msg(11, wire{}.str(9, "\xff")), nil},
		{"kind merges", act(wire{}.str(1, "a").str(3, "x")).msg(18, wire{}.str(3, "y").varint(5, 4)), nil},
		{"kind replaced", act(wire{}.str(1, "a").str(3, "x")).msg(19, wire{}.varint(3, 2)), nil},
		{"kind replaced and back", act(wire{}.str(1, "a").str(3, "x")).msg(19, wire{}.varint(3, 2)).msg(18, wire{}.str(4, "z")), nil},
		{"value merges", act(wire{}.msg(8, wire{}.bytes(1, []byte{1}))).msg(18, wire{}.msg(8, wire{}.bytes(1, nil).bytes(1, []byte{2, 3}))), nil},
		{"empty value", act(wire{}.msg(8, nil)), nil},
		{"value unknown field", act(wire{}.msg(8, wire{}.varint(1, 1).bytes(2, []byte{1}))), nil},
		{"value malformed", act(wire{}.msg(8, wire{}.raw(1<<3|2, 9))), ErrMalformed},
		{"spec merges", act(wire{}.msg(7, wire{}.varint(1, 2)).msg(7, wire{}.varint(1, 3).varint(2, 9))), nil},
		{"spec malformed", act(wire{}.msg(7, wire{}.raw(0xff))), ErrMalformed},
		{"spec malformed in discarded kind", act(wire{}.msg(7, wire{}.raw(0xff))).msg(11, nil), ErrMalformed},
		{"spec invalid UTF-8", wire{}.msg(20, wire{}.msg(9, wire{}.msg(14, wire{}.str(3, "\xff")))), ErrMalformed},
		{"spec at the recursion limit", act(wire{}.msg(7, deepSpec(protowire.DefaultRecursionLimit-2))), nil},
		{"spec past the recursion limit", act(wire{}.msg(7, deepSpec(protowire.DefaultRecursionLimit-1))), ErrMalformed},
		{"final info merges", wire{}.msg(17, wire{}.msg(10, wire{}.msg(1, wire{}.str(1, "k").msg(2, wire{}.varint(1, 1)))).msg(10, wire{}.msg(1, wire{}.str(1, "j")))), nil},
		{"final info malformed", wire{}.msg(17, wire{}.msg(10, wire{}.raw(0x0a, 0x05))), ErrMalformed},
		{"final info malformed in discarded kind", wire{}.msg(17, wire{}.msg(10, wire{}.raw(0x0a, 0x05))).msg(11, nil), ErrMalformed},
		{"empty final info", wire{}.msg(17, wire{}.msg(10, nil)), nil},
		{"rewards unpacked", wire{}.msg(19, wire{}.fixed64(5, 1).fixed64(5, 0x7ff8000000000001)), nil},
		{"rewards packed and unpacked", wire{}.msg(19, wire{}.bytes(5, make([]byte, 16)).fixed64(5, 1<<63)), nil},
		{"rewards packed short", wire{}.msg(19, wire{}.bytes(5, make([]byte, 12))), ErrMalformed},
		{"rewards empty packed", wire{}.msg(19, wire{}.bytes(5, nil)), nil},
		{"int32 truncated", wire{}.msg(16, wire{}.varint(4, 1<<32|5)), nil},
		{"int32 negative", wire{}.msg(16, wire{}.varint(4, 1<<64-1)), nil},
		{"bool from large varint", wire{}.msg(16, wire{}.varint(5, 1<<40)), nil},
		{"uint32 truncated", wire{}.msg(20, wire{}.varint(8, 1<<33|7)), nil},
		{"log level truncated", wire{}.msg(15, wire{}.varint(1, 1<<32|2)), nil},
		{"log level 0", wire{}.msg(15, wire{}.str(2, "m")), ErrUnknownEnum},
		{"log level huge", wire{}.msg(15, wire{}.varint(1, 1<<63)), ErrUnknownEnum},
		{"log level negative", wire{}.msg(15, wire{}.varint(1, 1<<64-1)), ErrUnknownEnum},
		{"log level last wins", wire{}.msg(15, wire{}.varint(1, 9).varint(1, 3)), nil},
		{"log empty source", wire{}.msg(15, wire{}.varint(1, 1).str(3, "")), nil},
		{"log source invalid UTF-8", wire{}.msg(15, wire{}.varint(1, 1).str(3, "\xe2\x82")), ErrMalformed},
		{"log level invalid but malformed later", wire{}.msg(15, nil).raw(0xff), ErrMalformed},
		{"log level from discarded kind", wire{}.msg(15, wire{}.varint(1, 9)).msg(11, nil), nil},
		{"horizon 0", wire{}.msg(21, nil), ErrUnknownEnum},
		{"horizon ok, row kind 0", wire{}.msg(21, wire{}.varint(1, 2).msg(2, wire{}.str(1, "op"))), ErrUnknownEnum},
		{"rows", wire{}.msg(21, wire{}.varint(1, 1).msg(2, wire{}.str(1, "op").varint(4, 3).varint(5, 7).fixed64(9, 1)).msg(2, wire{}.varint(4, 1<<32|1).str(3, "m"))), nil},
		{"row invalid UTF-8", wire{}.msg(21, wire{}.varint(1, 1).msg(2, wire{}.str(2, "\xff").varint(4, 1))), ErrMalformed},
		{"row malformed", wire{}.msg(21, wire{}.varint(1, 1).msg(2, wire{}.raw(0x08))), ErrMalformed},
		{"lane present zero", wire{}.msg(2, wire{}.str(1, "e").varint(4, 0)).msg(11, nil), nil},
		{"lane truncated", wire{}.msg(2, wire{}.varint(4, 1<<33|3)).msg(11, nil), nil},
		{"lane kept by a merged route", wire{}.msg(2, wire{}.varint(4, 2)).msg(2, wire{}.str(1, "e")).msg(11, nil), nil},
		{"lane wrong wire type", wire{}.msg(2, wire{}.fixed64(4, 2)).msg(11, nil), nil},
		{"seed and trial present zero", wire{}.msg(16, wire{}.varint(6, 0).varint(7, 0)), nil},
		{"seed negative", wire{}.msg(16, wire{}.varint(6, 1<<64-3)), nil},
		{"completed options", wire{}.msg(17, wire{}.varint(11, 0).varint(12, 5).varint(13, 1<<63).fixed64(14, 0).fixed64(15, 1<<63)), nil},
		{"success from large varint", wire{}.msg(17, wire{}.varint(11, 1<<40)), nil},
		{"predict ms wrong wire type", wire{}.msg(17, wire{}.varint(14, 1)), nil},
		{"raw action", act(wire{}.msg(8, wire{}.bytes(1, []byte{1})).msg(9, wire{}.bytes(1, []byte{2, 3}))), nil},
		{"raw action empty", act(wire{}.msg(9, nil)), nil},
		{"raw action merges", act(wire{}.msg(9, wire{}.bytes(1, []byte{1}))).msg(18, wire{}.msg(9, wire{}.bytes(1, []byte{2}))), nil},
		{"raw action malformed", act(wire{}.msg(9, wire{}.raw(1<<3|2, 9))), ErrMalformed},
		{"raw observation and infos", wire{}.msg(20, wire{}.msg(11, wire{}.bytes(1, []byte{7})).msg(12, wire{}.msg(1, wire{}.str(1, "k").msg(2, wire{}.varint(4, 1))))), nil},
		{"observation infos empty", wire{}.msg(20, wire{}.msg(12, nil)), nil},
		{"observation infos malformed", wire{}.msg(20, wire{}.msg(12, wire{}.raw(0x0a, 0x05))), ErrMalformed},
		{"step infos merge", wire{}.msg(19, wire{}.msg(6, wire{}.msg(1, wire{}.str(1, "a").msg(2, wire{}.varint(1, 1))))).msg(19, wire{}.msg(6, wire{}.msg(1, wire{}.str(1, "b")))), nil},
		{"step infos malformed in discarded kind", wire{}.msg(19, wire{}.msg(6, wire{}.raw(0x0a, 0x05))).msg(11, nil), ErrMalformed},
		{"flags packed", wire{}.msg(19, wire{}.bytes(7, []byte{1, 0, 1}).bytes(8, []byte{0, 0, 0}).bytes(9, []byte{0, 1, 0})), nil},
		{"flags unpacked", wire{}.msg(19, wire{}.varint(7, 1).varint(7, 0).varint(9, 1<<40)), nil},
		{"flags packed and unpacked", wire{}.msg(19, wire{}.bytes(8, []byte{1}).varint(8, 0).bytes(8, []byte{0x80, 0x01})), nil},
		{"flags packed malformed", wire{}.msg(19, wire{}.bytes(7, []byte{0x80})), ErrMalformed},
		{"flags empty packed", wire{}.msg(19, wire{}.bytes(9, nil)), nil},
		{"step times", wire{}.msg(19, wire{}.fixed64(10, 0).fixed64(11, 0x4000000000000000)), nil},
		{"relay advisory", wire{}.msg(22, wire{}.varint(1, 1).varint(2, 2).str(3, "converted")), nil},
		{"relay advisory leg 0", wire{}.msg(22, wire{}.varint(2, 1)), ErrUnknownEnum},
		{"relay advisory severity 3", wire{}.msg(22, wire{}.varint(1, 2).varint(2, 3)), ErrUnknownEnum},
		{"relay advisory leg truncated", wire{}.msg(22, wire{}.varint(1, 1<<32|1).varint(2, 1)), nil},
		{"relay advisory invalid UTF-8", wire{}.msg(22, wire{}.varint(1, 1).varint(2, 1).str(3, "\xff")), ErrMalformed},
		{"run nonce", wire{}.bytes(6, []byte{1, 2, 3}).msg(11, nil), nil},
		{"negative time", wire{}.varint(3, 1<<64-5).msg(11, nil), nil},
		{"time last wins", wire{}.varint(3, 5).varint(3, 6).msg(11, nil), nil},
	}
	var d Decoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agree(t, &d, tt.in)
			if errClass(err) != errClass(tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			// The same input through a fresh decoder and Unmarshal.
			agree(t, new(Decoder), tt.in)
			if _, _, err := Unmarshal(tt.in); errClass(err) != errClass(tt.wantErr) {
				t.Fatalf("Unmarshal error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestDecoderMutations checks the Decoder against the proto path on
// damaged encodings of generated events: bit flips, byte changes,
// truncations, insertions and splices.
func TestDecoderMutations(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 3000
	}
	g := newGen(13)
	r := rand.New(rand.NewPCG(13, 31))
	var d Decoder
	var prev []byte
	for i := range n {
		b, err := AppendMarshal(nil, g.event(allKinds[i%len(allKinds)]), g.time())
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + r.IntN(3) {
			if len(b) == 0 {
				break
			}
			j := r.IntN(len(b))
			switch r.IntN(6) {
			case 0:
				b[j] ^= 1 << r.IntN(8)
			case 1:
				b[j] = byte(r.UintN(256))
			case 2:
				b = b[:j]
			case 3:
				b = append(b[:j], append([]byte{byte(r.UintN(256))}, b[j:]...)...)
			case 4:
				b = append(b[:j:j], b[j+1:]...)
			case 5:
				if len(prev) > 0 {
					k := r.IntN(len(prev))
					b = append(b[:j:j], prev[k:]...)
				}
			}
		}
		agree(t, &d, b)
		prev = b
	}
}

// FuzzDecoder checks that the Decoder never panics and agrees with
// proto.Unmarshal followed by FromProto on what it accepts and rejects
// (by sentinel) and on the event it returns.
func FuzzDecoder(f *testing.F) {
	b := addStreamSeeds(f)
	sr := NewStreamReader(bytes.NewReader(b), 0)
	for sr.Next() {
		m, err := AppendMarshal(nil, sr.Event(), sr.Time())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m)
	}
	for _, ev := range append(cartpoleSteps(), imageObservation()) {
		m, err := AppendMarshal(nil, ev, benchTime)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m)
	}
	var d Decoder
	f.Fuzz(func(t *testing.T, in []byte) {
		agree(t, &d, in)
	})
}

// TestASCIIChecks checks the word-at-a-time ASCII tests against a byte
// loop, for every length up to 40 and every position of a high byte.
func TestASCIIChecks(t *testing.T) {
	for n := range 41 {
		for pos := -1; pos < n; pos++ {
			b := bytes.Repeat([]byte{'a'}, n)
			if pos >= 0 {
				b[pos] = 0x80
			}
			want := pos < 0
			if got := orBytes(0, string(b))&asciiMask == 0; got != want {
				t.Fatalf("orBytes len %d high byte at %d: ascii %v", n, pos, got)
			}
			if got := isASCII(b); got != want {
				t.Fatalf("isASCII len %d high byte at %d: %v", n, pos, got)
			}
		}
	}
}

func TestDecoderSequence(t *testing.T) {
	ev := &StepCompleted{SessionID: "s", Route: RuntimeEnvContext{EnvID: "e"}, Step: 3, Rewards: []float64{1, 2}}
	base, err := AppendMarshal(nil, ev, time.Unix(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		msg  []byte
		want uint64
	}{
		{"absent", base, 0},
		{"zero appends nothing", AppendSequence(append([]byte(nil), base...), 0), 0},
		{"one", AppendSequence(append([]byte(nil), base...), 1), 1},
		{"large", AppendSequence(append([]byte(nil), base...), 1<<40+3), 1<<40 + 3},
		{"last of two wins", AppendSequence(AppendSequence(append([]byte(nil), base...), 7), 9), 9},
	}
	var d Decoder
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, at, err := d.Decode(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if d.Sequence() != tc.want {
				t.Errorf("Sequence() = %d, want %d", d.Sequence(), tc.want)
			}
			if diff := diffEvents(ev, got); diff != "" || !at.Equal(time.Unix(5, 0)) {
				t.Errorf("event changed by the sequence field: %s (time %v)", diff, at)
			}
			// protobuf-go agrees, and FromProto ignores the field.
			var m eventsv1.Event
			if err := proto.Unmarshal(tc.msg, &m); err != nil {
				t.Fatal(err)
			}
			if m.GetSequence() != tc.want {
				t.Errorf("proto sequence = %d, want %d", m.GetSequence(), tc.want)
			}
		})
	}
}

func TestDecoderRunNonce(t *testing.T) {
	ev := &StepCompleted{SessionID: "s", Route: RuntimeEnvContext{EnvID: "e", Lane: Some(uint32(3))}, Step: 3,
		Rewards: []float64{1}, Terminated: []bool{false}, Truncated: []bool{false}, AutoresetRoll: []bool{true}}
	base, err := AppendMarshal(nil, ev, time.Unix(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := bytes.Repeat([]byte{0xa1}, 16), bytes.Repeat([]byte{0x5c}, 16)
	with := func(nonces ...[]byte) []byte {
		b := append([]byte(nil), base...)
		for _, n := range nonces {
			b = AppendRunNonce(b, n)
		}
		return b
	}
	tests := []struct {
		name string
		msg  []byte
		want []byte
	}{
		{"absent", base, nil},
		{"empty appends nothing", with([]byte{}), nil},
		{"sixteen bytes", with(n1), n1},
		{"last of two wins", with(n1, n2), n2},
		{"absent again", base, nil},
	}
	var d Decoder
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := d.Decode(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(d.RunNonce(), tc.want) || (d.RunNonce() == nil) != (tc.want == nil) {
				t.Errorf("RunNonce() = %x, want %x", d.RunNonce(), tc.want)
			}
			if diff := diffEvents(ev, got); diff != "" {
				t.Errorf("event changed by the run nonce: %s", diff)
			}
			var m eventsv1.Event
			if err := proto.Unmarshal(tc.msg, &m); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.GetRunNonce(), tc.want) {
				t.Errorf("proto run_nonce = %x, want %x", m.GetRunNonce(), tc.want)
			}
		})
	}
	// The same nonce is handed out as the same slice.
	d.Decode(with(n1))
	first := d.RunNonce()
	d.Decode(with(n1))
	if &first[0] != &d.RunNonce()[0] {
		t.Error("an unchanged nonce was copied again")
	}
}
