package events

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

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
	}{
		{name: "empty", input: nil},
		{name: "good only", input: good, wantN: goodN},
		{name: "zero-length message has no kind", input: cat(good, []byte{0}),
			wantN: goodN, wantErr: ErrUnknownKind, wantOff: off},
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
			wantN: goodN, wantErr: ErrUnknownKind, wantOff: off},
		{name: "future kind field", input: cat(good, frame([]byte{0xb2, 0x01, 0x00})), // field 22, empty message
			wantN: goodN, wantErr: ErrUnknownKind, wantOff: off},
		{name: "unknown log level", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Level: 9}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off},
		{name: "unspecified log level", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off},
		{name: "unknown horizon", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{Horizon: 3}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off},
		{name: "unknown metric kind", input: cat(good, frame(mustMarshal(t, &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{
			Horizon: 1, Rows: []*eventsv1.TelemetryRow{{Kind: 1}, {Kind: 0}}}}}))),
			wantN: goodN, wantErr: ErrUnknownEnum, wantOff: off},
		{name: "read error", input: good, readErr: errIO,
			wantN: goodN, wantErr: errIO, wantOff: off},
		{name: "read error mid body", input: cat(good, []byte{5, 1}), readErr: errIO,
			wantN: goodN, wantErr: errIO, wantOff: off},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src io.Reader = bytes.NewReader(tt.input)
			if tt.readErr != nil {
				src = &failingReader{b: tt.input, err: tt.readErr}
			}
			sr := NewStreamReader(src, tt.max)
			n := 0
			for sr.Next() {
				if sr.Event() == nil {
					t.Fatalf("message %d: nil event", n)
				}
				n++
			}
			if sr.Next() {
				t.Fatal("Next after the end returned true")
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
				return
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
