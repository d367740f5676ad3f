package events

// Stream framing
//
// An event stream (a file given to `rlrec ingest`, the output of `rlrec
// replay`) is a sequence of eventsv1.Event messages, each preceded by its
// length in bytes as a base-128 varint, the framing of
// google.golang.org/protobuf/encoding/protodelim:
//
//	+----------------+--------------------------+----------------+-----
//	| varint len(m0) | m0: eventsv1.Event bytes | varint len(m1) | m1 ...
//	+----------------+--------------------------+----------------+-----
//
// There is no header, trailer or checksum: a stream is the concatenation of
// its messages, so streams concatenate, and an empty input is an empty
// stream. A stream ends cleanly only at a message boundary; input that ends
// inside a length prefix or a body is truncated. The length prefix is at
// most 10 bytes; a reader refuses (before allocating anything for it) a
// message longer than its maximum, DefaultMaxMessageBytes unless set.
//
// The reader and writer frame messages themselves rather than through
// protodelim.UnmarshalFrom / MarshalTo, so that the reader knows the byte
// offset of every message, allocates no more than the input actually holds
// when a length prefix lies, and the writer reuses one buffer and issues one
// Write per event; the bytes are the same (the tests check both ways).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/events/eventsv1"
)

// DefaultMaxMessageBytes is the largest message a StreamReader accepts
// when it is given no limit: 256 MiB, room for a few hundred lanes of
// camera images in one observation.
const DefaultMaxMessageBytes = 256 << 20

// maxVarintLen is the longest varint length prefix (a uint64).
const maxVarintLen = 10

// StreamWriter writes events to an io.Writer as a length-delimited stream.
// It does not buffer beyond w: each event is one w.Write call of its length
// prefix and message, so wrap w in a bufio.Writer (and flush it) for many
// small writes. It never closes w. After a failed write the stream may end
// inside a message, so every later write returns the same error. A
// StreamWriter is not safe for concurrent use.
type StreamWriter struct {
	w     io.Writer
	buf   []byte
	n     int
	err   error
	nonce []byte
}

// SetRunNonce makes every later event carry nonce as its run_nonce (the
// producing run's identity; nil for none). The writer keeps its own copy.
func (s *StreamWriter) SetRunNonce(nonce []byte) {
	s.nonce = append([]byte(nil), nonce...)
}

// NewStreamWriter returns a StreamWriter writing to w.
func NewStreamWriter(w io.Writer) *StreamWriter {
	return &StreamWriter{w: w}
}

// Write writes ev with no observation time (time_unix_nano 0); a recorder
// reading the stream then stamps it with its own clock (and its sessions
// row says so). Producers that know when the hook was called use WriteAt.
func (s *StreamWriter) Write(ev Event) error {
	return s.WriteAt(ev, time.Time{})
}

// WriteAt writes ev observed at t. An event that does not encode (see
// AppendMarshal) is not written and does not fail the stream.
func (s *StreamWriter) WriteAt(ev Event, t time.Time) error {
	return s.WriteStamped(ev, t, false)
}

// WriteStamped writes ev at t like WriteAt, with recorder_clock set when
// recorderClock is: t is a recorder's clock reading, not the producer's
// (rlrec replay of a recording whose clock was the recorder's).
func (s *StreamWriter) WriteStamped(ev Event, t time.Time, recorderClock bool) error {
	if s.err != nil {
		return s.err
	}
	// Marshal after a gap as long as the longest prefix, then put the
	// prefix right before the message: one buffer, one Write.
	if cap(s.buf) < maxVarintLen {
		s.buf = make([]byte, maxVarintLen, 4<<10)
	}
	buf, err := AppendMarshal(s.buf[:maxVarintLen], ev, t)
	if err != nil {
		return fmt.Errorf("event stream: message %d: %w", s.n, err)
	}
	if recorderClock {
		buf = AppendRecorderClock(buf)
	}
	buf = AppendRunNonce(buf, s.nonce)
	s.buf = buf
	size := len(buf) - maxVarintLen
	start := maxVarintLen - protowire.SizeVarint(uint64(size))
	protowire.AppendVarint(buf[start:start], uint64(size))
	if _, err := s.w.Write(buf[start:]); err != nil {
		s.err = fmt.Errorf("event stream: write message %d: %w", s.n, err)
		return s.err
	}
	s.n++
	return nil
}

// StreamReader reads a length-delimited event stream, like a
// bufio.Scanner:
//
//	r := events.NewStreamReader(f, 0)
//	for r.Next() {
//		handle(r.Event(), r.Time())
//	}
//	if err := r.Err(); err != nil {
//		// err is a *StreamError naming the bad message's index and offset.
//	}
//
// The reader stops at the first error. A message that is well-formed
// protobuf but no valid event (its cause is an *InvalidEventError: an
// unknown or missing kind, an unknown enum value) stops Next like any
// error but leaves the stream readable, so a caller that skips such
// events calls Next again:
//
//	for {
//		for r.Next() {
//			handle(r.Event(), r.Time())
//		}
//		var bad *events.InvalidEventError
//		if !errors.As(r.Err(), &bad) {
//			break // the end (Err nil), or damage
//		}
//		skip(bad)
//	}
//
// Events it returns share no memory with its buffers and may be kept. A
// StreamReader is not safe for concurrent use.
type StreamReader struct {
	br  *bufio.Reader
	max int

	buf   []byte
	msg   eventsv1.Event
	ev    Event
	t     time.Time
	rclk  bool
	nonce []byte
	body  []byte // the current message's bytes (Message)
	index int    // index of the current message, -1 before the first
	off   int64  // offset of the current message
	next  int64  // offset of the next message
	err   error
	done  bool
}

// NewStreamReader returns a reader of the stream in r that refuses messages
// longer than maxMessageBytes (DefaultMaxMessageBytes when
// maxMessageBytes <= 0). It reads r through a bufio.Reader (r itself when
// it is one) and may read past the last message it returns.
func NewStreamReader(r io.Reader, maxMessageBytes int) *StreamReader {
	if maxMessageBytes <= 0 {
		maxMessageBytes = DefaultMaxMessageBytes
	}
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &StreamReader{br: br, max: maxMessageBytes, index: -1}
}

// Next reads the next event. It returns false at the end of the stream or
// at an error; Err tells which. After an error whose cause is an
// *InvalidEventError, Next may be called again: it goes on with the
// message after the invalid one. After any other error, and at the end,
// it keeps returning false.
func (s *StreamReader) Next() bool {
	if s.done {
		return false
	}
	s.ev, s.t, s.rclk, s.nonce, s.body, s.err = nil, time.Time{}, false, nil, nil, nil
	s.index++
	s.off = s.next
	ev, t, n, err := s.read()
	if bad := (*InvalidEventError)(nil); errors.As(err, &bad) {
		// Only this message is bad: the next one follows it.
		s.next += int64(n)
		s.err = &StreamError{Index: s.index, Offset: s.off, Err: bad}
		return false
	}
	if err != nil {
		s.done = true
		if err != io.EOF {
			s.err = &StreamError{Index: s.index, Offset: s.off, Err: err}
		}
		return false
	}
	s.next += int64(n)
	s.ev, s.t, s.rclk, s.nonce = ev, t, s.msg.GetRecorderClock(), nilIfEmpty(s.msg.GetRunNonce())
	return true
}

// read reads one message and returns it with its framed length; io.EOF
// means a clean end before the message. For a message that is no valid
// event the error is an *InvalidEventError, and the length is returned
// too.
func (s *StreamReader) read() (Event, time.Time, int, error) {
	var pre [maxVarintLen]byte
	n := 0
	for {
		b, err := s.br.ReadByte()
		if err != nil {
			if err == io.EOF {
				if n == 0 {
					return nil, time.Time{}, 0, io.EOF
				}
				return nil, time.Time{}, 0, fmt.Errorf("input ends inside the length prefix after %d bytes: %w", n, ErrTruncated)
			}
			return nil, time.Time{}, 0, fmt.Errorf("read length prefix: %w", err)
		}
		pre[n] = b
		n++
		if b < 0x80 {
			break
		}
		if n == maxVarintLen {
			return nil, time.Time{}, 0, fmt.Errorf("length prefix longer than %d bytes: %w", maxVarintLen, ErrMalformed)
		}
	}
	size, vn := protowire.ConsumeVarint(pre[:n])
	if vn < 0 {
		return nil, time.Time{}, 0, fmt.Errorf("length prefix: %v: %w", protowire.ParseError(vn), ErrMalformed)
	}
	if size > uint64(s.max) {
		return nil, time.Time{}, 0, fmt.Errorf("length %d exceeds the limit of %d bytes (raise the reader's maximum if the stream is trusted): %w", size, s.max, ErrMessageTooLarge)
	}
	body, err := s.readBody(int(size))
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	s.body = body
	s.msg.Reset()
	if err := proto.Unmarshal(body, &s.msg); err != nil {
		return nil, time.Time{}, 0, fmt.Errorf("decode %d-byte body: %w: %w", size, ErrMalformed, err)
	}
	ev, t, err := FromProto(&s.msg)
	if err != nil {
		if errors.Is(err, ErrUnknownKind) || errors.Is(err, ErrUnknownEnum) {
			return nil, time.Time{}, n + int(size), invalidEvent(&s.msg, err)
		}
		return nil, time.Time{}, 0, err
	}
	return ev, t, n + int(size), nil
}

// invalidEvent describes the message m, which FromProto refused with err.
func invalidEvent(m *eventsv1.Event, err error) *InvalidEventError {
	bad := &InvalidEventError{SessionID: m.GetSessionId(), Route: routeFromProto(m.GetRoute()),
		Time: nanosToTime(m.GetTimeUnixNano()), Err: err}
	r := m.ProtoReflect()
	if fd := r.WhichOneof(r.Descriptor().Oneofs().ByName("kind")); fd != nil {
		bad.Kind = Kind(fd.Number())
	}
	return bad
}

// readBody reads size bytes into the reader's buffer. The buffer grows with
// the bytes actually read, not with the claimed size, so a lying length
// prefix on short input costs little memory.
func (s *StreamReader) readBody(size int) ([]byte, error) {
	const minChunk = 64 << 10
	b := s.buf[:0]
	for len(b) < size {
		if len(b) == cap(b) {
			c := min(size, max(2*cap(b), minChunk))
			nb := make([]byte, len(b), c)
			copy(nb, b)
			b = nb
		}
		end := min(size, cap(b))
		k, err := io.ReadFull(s.br, b[len(b):end])
		b = b[:len(b)+k]
		if err != nil {
			s.buf = b[:0]
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("input ends after %d of %d body bytes: %w", len(b), size, ErrTruncated)
			}
			return nil, fmt.Errorf("read body: %w", err)
		}
	}
	s.buf = b[:0]
	return b, nil
}

// Event returns the event Next read, or nil when Next returned false.
func (s *StreamReader) Event() Event { return s.ev }

// Time returns when the current event was observed, the zero time when the
// stream did not say.
func (s *StreamReader) Time() time.Time { return s.t }

// RecorderClock reports whether the current event's time is a recorder's
// clock reading (its recorder_clock field): an event recorded without a
// time, replayed.
func (s *StreamReader) RecorderClock() bool { return s.rclk }

// RunNonce returns the current event's run_nonce field (the producing
// run's identity), nil when it had none.
func (s *StreamReader) RunNonce() []byte { return s.nonce }

// Message returns the bytes of the current message as the stream holds
// them, without its length prefix: those of the event Next returned, or of
// the invalid event its error names. They are valid until the next call
// of Next.
func (s *StreamReader) Message() []byte { return s.body }

// Index returns the 0-based index of the current message in the stream.
func (s *StreamReader) Index() int { return s.index }

// Err returns the error that stopped the reader: nil at a clean end of the
// stream (or while it reads on), otherwise a *StreamError.
func (s *StreamReader) Err() error { return s.err }
