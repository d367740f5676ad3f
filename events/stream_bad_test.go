package events

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/events/eventsv1"
)

// frame returns body with its varint length prefix.
func frame(body []byte) []byte {
	return append(protowire.AppendVarint(nil, uint64(len(body))), body...)
}

func mustMarshal(t testing.TB, m *eventsv1.Event) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type failingReader struct {
	b   []byte
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, r.err
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func TestStreamReaderBadInput(t *testing.T) {
	good := writeStream(t, []timedEvent{
		{ev: &SessionStarted{SessionID: "s1", EnvID: "CartPole-v1"}},
		{ev: &Log{SessionID: "s1", Level: LogInfo, Message: "env reset complete"}},
	})
	goodN := 2
	off := int64(len(good))
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	errIO := errors.New("disk on fire")

	tests := []struct {
		name    string
		input   []byte
		max     int
		readErr error // returned by the source after input, instead of io.EOF
		wantN   int   // events read before the error
		wantErr error // nil: clean end
		wantOff int64
		// invalid marks a well-formed message that is no valid event: the
		// reader reads on past it (the test appends one good message).
		invalid bool
	}{
		{name: "empty", input: nil},
		{name: "good only", input: good, wantN: goodN},
		{name: "zero-length message has no kind", input: cat(good, []byte{0}),
			wantN: goodN, wantErr: ErrUnknownKind, wantOff: off, invalid: true},
		{name: "truncated length varint", input: cat(good, []byte{0x80}),
			wantN: goodN, wantErr: ErrTruncated, wantOff: off},
		{name: "truncated long length varint", input: cat(good, []byte{0xff, 0xff, 0xff}),
			wantN: goodN, wantErr: ErrTruncated, wantOff: off},
		{name: "truncated body", input: cat(good, []byte{5, 0x0a, 0x01}),
			wantN: goodN, wantErr: ErrTruncated, wantOff: off},
		{name: "length without body", input: cat(good, []byte{5}),
			wantN: goodN, wantErr: ErrTruncated, wantOff: off},
		{name: "first message truncated", input: good[:len(good)-1],
			wantN: 1, wantErr: ErrTruncated, wantOff: int64(len(frame(mustMarshal(t, &eventsv1.Event{SessionId: "s1", Kind: &eventsv1.Event_SessionStarted{SessionStarted: &eventsv1.SessionStarted{EnvId: "CartPole-v1"}}}))))},
		{name: "garbage body", input: cat(good, frame([]byte{0xff, 0xff, 0xff, 0xff})),
			wantN: goodN, wantErr: ErrMalformed, wantOff: off},
		{name: "garbage wire type", input: cat(good, frame([]byte{0x0f, 0x01})),
			wantN: goodN, wantErr: ErrMalformed, wantOff: off},
		{name: "invalid utf-8 string", input: cat(good, frame([]byte{0x0a, 0x02, 0xc3, 0x28})),
			wantN: goodN, wantErr: ErrMalformed, wantOff: off},
		{name: "length varint too long", input: cat(good, bytes.Repeat([]byte{0xff}, 11)),
			wantN: goodN, wantErr: ErrMalformed, wantOff: off},
		{name: "length varint overflows", input: cat(good, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}),
			wantN: goodN, wantErr: ErrMalformed, wantOff: off},
		{name: "over limit", input: cat(good, protowire.AppendVarint(nil, 1025), []byte{1, 2, 3}), max: 1024,
			wantN: goodN, wantErr: ErrMessageTooLarge, wantOff: off},
		{name: "huge length", input: cat(good, protowire.AppendVarint(nil, 1<<62), []byte{1}),
			wantN: goodN, wantErr: ErrMessageTooLarge, wantOff: off},
		{name: "unknown kind", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{SessionId: "s1"}))),
			wantN: goodN, wantErr: ErrUnknownKind, wantOff: off, invalid: true},
		{name: "future kind field", input: cat(good, frame([]byte{0xba, 0x01, 0x00})), // field 23, empty message
			wantN: goodN, wantErr: ErrUnknownKind, wantOff: off, invalid: true},
		{name: "unknown log level", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Level: 9}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off, invalid: true},
		{name: "unspecified log level", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off, invalid: true},
		{name: "unknown horizon", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{Horizon: 3}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off, invalid: true},
		{name: "unknown metric kind", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{
			Horizon: 1, Rows: []*eventsv1.TelemetryRow{{Kind: 1}, {Kind: 0}}}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off, invalid: true},
		{name: "read error", input: good, readErr: errIO,
			wantN: goodN, wantErr: errIO, wantOff: off},
		{name: "read error mid body", input: cat(good, []byte{5, 1}), readErr: errIO,
			wantN: goodN, wantErr: errIO, wantOff: off},
	}
	tail := writeStream(t, []timedEvent{{ev: &SessionEnded{SessionID: "s1", Reason: "done"}}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := tt.input
			if tt.invalid {
				input = cat(input, tail)
			}
			var src io.Reader = bytes.NewReader(input)
			if tt.readErr != nil {
				src = &failingReader{b: input, err: tt.readErr}
			}
			sr := NewStreamReader(src, tt.max)
			n := 0
			for sr.Next() {
				if sr.Event() == nil {
					t.Fatalf("message %d: nil event", n)
				}
				n++
			}
			if sr.Event() != nil {
				t.Fatal("Event after the end is not nil")
			}
			if n != tt.wantN {
				t.Errorf("read %d events, want %d", n, tt.wantN)
			}
			err := sr.Err()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Err = %v, want nil", err)
				}
				if sr.Next() {
					t.Fatal("Next after the end returned true")
				}
				return
			}
			defer func() {
				// Damage stops the reader for good; an invalid event is
				// read past, to the message after it.
				more := 0
				for sr.Next() {
					more++
				}
				switch {
				case tt.invalid && (more != 1 || sr.Err() != nil):
					t.Errorf("after the invalid event: read %d more, Err %v; want 1 and nil", more, sr.Err())
				case !tt.invalid && (more != 0 || sr.Err() != err):
					t.Errorf("after the damage: read %d more, Err %v; want 0 and %v", more, sr.Err(), err)
				}
			}()
			var bad *InvalidEventError
			if errors.As(err, &bad) != tt.invalid {
				t.Errorf("Err = %v: *InvalidEventError %v, want %v", err, bad != nil, tt.invalid)
			}
			var se *StreamError
			if !errors.As(err, &se) {
				t.Fatalf("Err = %T %v, want *StreamError", err, err)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Err = %v, want it to wrap %v", err, tt.wantErr)
			}
			if se.Index != tt.wantN || se.Offset != tt.wantOff {
				t.Errorf("error at message %d byte %d, want message %d byte %d", se.Index, se.Offset, tt.wantN, tt.wantOff)
			}
			wantPrefix := fmt.Sprintf("event stream: message %d at byte %d: ", tt.wantN, tt.wantOff)
			if msg := err.Error(); len(msg) <= len(wantPrefix) || msg[:len(wantPrefix)] != wantPrefix {
				t.Errorf("message %q does not start with %q", msg, wantPrefix)
			}
		})
	}
}

// TestStreamReaderLyingLengthAllocation checks that a length prefix within
// the limit but far beyond the input allocates in proportion to the input,
// and one over the limit allocates nothing for the body.
func TestStreamReaderLyingLengthAllocation(t *testing.T) {
	tests := []struct {
		name    string
		size    uint64
		max     int
		wantErr error
	}{
		{"within default limit", 200 << 20, 0, ErrTruncated},
		{"over limit", 1 << 40, 0, ErrMessageTooLarge},
		{"max uint64", 1<<64 - 1, 1 << 30, ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := append(protowire.AppendVarint(nil, tt.size), make([]byte, 100)...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			sr := NewStreamReader(bytes.NewReader(input), tt.max)
			if sr.Next() {
				t.Fatal("Next returned true")
			}
			runtime.ReadMemStats(&after)
			if !errors.Is(sr.Err(), tt.wantErr) {
				t.Fatalf("Err = %v, want %v", sr.Err(), tt.wantErr)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte input", got, len(input))
			}
		})
	}
}

func TestStreamWriterErrors(t *testing.T) {
	t.Run("bad event does not fail the stream", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewStreamWriter(&buf)
		if err := w.Write(&Log{Level: 0}); !errors.Is(err, ErrUnknownEnum) {
			t.Fatalf("Write bad level = %v, want ErrUnknownEnum", err)
		}
		if err := w.Write(&SessionFailed{SessionID: "s", Reason: "\xff"}); err == nil {
			t.Fatal("Write invalid UTF-8 succeeded")
		}
		if err := w.Write(&SessionFailed{SessionID: "s", Reason: "boom"}); err != nil {
			t.Fatal(err)
		}
		got := readStream(t, &buf, 0)
		compareSequences(t, []timedEvent{{ev: &SessionFailed{SessionID: "s", Reason: "boom"}}}, got)
	})
	t.Run("write error is sticky", func(t *testing.T) {
		w := NewStreamWriter(&failingWriter{after: 1})
		ev := &ModelConnected{SessionID: "s"}
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
		err1 := w.Write(ev)
		if !errors.Is(err1, errWriteFailed) {
			t.Fatalf("second Write = %v, want errWriteFailed", err1)
		}
		if err2 := w.Write(ev); err2 != err1 {
			t.Fatalf("third Write = %v, want the same error %v", err2, err1)
		}
	})
}

var errWriteFailed = errors.New("write failed")

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after == 0 {
		return 1, errWriteFailed
	}
	w.after--
	return len(p), nil
}

// TestStreamReaderInvalidEvent checks what an InvalidEventError tells of
// the message: its header, kind and time, whatever made it invalid.
func TestStreamReaderInvalidEvent(t *testing.T) {
	route := &eventsv1.RuntimeEnvContext{EnvId: "r1", EnvComponentId: "env", ModelComponentId: "model"}
	at := time.Unix(1700000000, 5).UTC()
	tests := []struct {
		name     string
		body     []byte
		wantKind Kind
		wantErr  error
		header   bool // the body carries session s1, route and time
	}{
		{name: "log level unspecified", body: mustMarshal(t, &eventsv1.Event{SessionId: "s1", Route: route, TimeUnixNano: at.UnixNano(),
			Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Message: "hi"}}}), wantKind: KindLog, wantErr: ErrUnknownEnum, header: true},
		{name: "telemetry horizon 7", body: mustMarshal(t, &eventsv1.Event{SessionId: "s1", Route: route, TimeUnixNano: at.UnixNano(),
			Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{Horizon: 7}}}), wantKind: KindTelemetrySnapshot, wantErr: ErrUnknownEnum, header: true},
		{name: "kind unset", body: mustMarshal(t, &eventsv1.Event{SessionId: "s1", Route: route, TimeUnixNano: at.UnixNano()}),
			wantErr: ErrUnknownKind, header: true},
		{name: "kind unknown to this version", body: append(mustMarshal(t, &eventsv1.Event{SessionId: "s1", Route: route, TimeUnixNano: at.UnixNano()}),
			0xfa, 0x01, 0x00), // field 31, empty message
			wantErr: ErrUnknownKind, header: true},
		{name: "no header", body: mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Level: 9}}}),
			wantKind: KindLog, wantErr: ErrUnknownEnum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sr := NewStreamReader(bytes.NewReader(frame(tt.body)), 0)
			if sr.Next() {
				t.Fatal("Next returned an invalid event")
			}
			var bad *InvalidEventError
			if !errors.As(sr.Err(), &bad) {
				t.Fatalf("Err = %v, want an *InvalidEventError", sr.Err())
			}
			if !errors.Is(bad, tt.wantErr) || bad.Kind != tt.wantKind {
				t.Errorf("kind %v cause %v, want %v and %v", bad.Kind, bad.Err, tt.wantKind, tt.wantErr)
			}
			want := InvalidEventError{}
			if tt.header {
				want = InvalidEventError{SessionID: "s1", Route: RuntimeEnvContext{EnvID: "r1", EnvComponentID: "env", ModelComponentID: "model"}, Time: at}
			}
			if bad.SessionID != want.SessionID || bad.Route != want.Route || !bad.Time.Equal(want.Time) {
				t.Errorf("header %q %+v %v, want %q %+v %v", bad.SessionID, bad.Route, bad.Time, want.SessionID, want.Route, want.Time)
			}
			if sr.Next() || sr.Err() != nil {
				t.Errorf("after the invalid event: Next true or Err %v at the end", sr.Err())
			}
		})
	}
}
