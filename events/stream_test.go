package events

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/rlrec/rlrec/events/eventsv1"
)

type timedEvent struct {
	ev Event
	t  time.Time
}

func genSequence(seed uint64, n int) []timedEvent {
	g := newGen(seed)
	s := make([]timedEvent, n)
	for i := range s {
		s[i] = timedEvent{g.anyEvent(), g.time()}
	}
	return s
}

func writeStream(t testing.TB, seq []timedEvent) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewStreamWriter(&buf)
	for i, te := range seq {
		if err := w.WriteAt(te.ev, te.t); err != nil {
			t.Fatalf("write #%d: %v", i, err)
		}
	}
	return buf.Bytes()
}

// readStream reads every event of b, failing on any error.
func readStream(t testing.TB, r io.Reader, max int) []timedEvent {
	t.Helper()
	sr := NewStreamReader(r, max)
	var out []timedEvent
	for sr.Next() {
		if sr.Index() != len(out) {
			t.Fatalf("Index = %d, want %d", sr.Index(), len(out))
		}
		out = append(out, timedEvent{sr.Event(), sr.Time()})
	}
	if err := sr.Err(); err != nil {
		t.Fatalf("read: %v", err)
	}
	return out
}

func compareSequences(t testing.TB, want, got []timedEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffEvents(want[i].ev, got[i].ev); d != "" {
			t.Fatalf("event %d (%v): %s", i, want[i].ev.Kind(), d)
		}
		if !got[i].t.Equal(want[i].t) {
			t.Fatalf("event %d: time %v, want %v", i, got[i].t, want[i].t)
		}
	}
}

func TestStreamRoundTrip(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	seq := genSequence(2, n)
	b := writeStream(t, seq)
	// A reader smaller than the largest message exercises the chunked body
	// path; a one-byte-at-a-time source exercises short reads.
	got := readStream(t, bytes.NewReader(b), 0)
	compareSequences(t, seq, got)
	got = readStream(t, bufio.NewReaderSize(&oneByteReader{b}, 16), 0)
	compareSequences(t, seq, got)
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

// TestStreamProtodelimCompatible checks that the framing is protodelim's,
// both ways.
func TestStreamProtodelimCompatible(t *testing.T) {
	seq := genSequence(3, 300)
	b := writeStream(t, seq)
	br := bufio.NewReader(bytes.NewReader(b))
	var viaDelim bytes.Buffer
	for i := 0; ; i++ {
		m := &eventsv1.Event{}
		err := protodelim.UnmarshalOptions{MaxSize: -1}.UnmarshalFrom(br, m)
		if errors.Is(err, io.EOF) {
			if i != len(seq) {
				t.Fatalf("protodelim read %d messages, want %d", i, len(seq))
			}
			break
		}
		if err != nil {
			t.Fatalf("protodelim message %d: %v", i, err)
		}
		ev, tm, err := FromProto(m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if d := diffEvents(seq[i].ev, ev); d != "" || !tm.Equal(seq[i].t) {
			t.Fatalf("message %d: %s (time %v want %v)", i, d, tm, seq[i].t)
		}
		if _, err := (protodelim.MarshalOptions{}).MarshalTo(&viaDelim, m); err != nil {
			t.Fatal(err)
		}
	}
	compareSequences(t, seq, readStream(t, &viaDelim, 0))
}

// TestStreamEventsOwnMemory checks that decoded events do not alias the
// reader's buffer.
func TestStreamEventsOwnMemory(t *testing.T) {
	ev := &ActionReceived{SessionID: "s", EpisodeIDs: []string{"a", "b"}, Action: [][]byte{{1, 2, 3}}}
	var buf bytes.Buffer
	w := NewStreamWriter(&buf)
	for range 2 {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	sr := NewStreamReader(&buf, 0)
	var got []Event
	for sr.Next() {
		got = append(got, sr.Event())
	}
	if err := sr.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d events", len(got))
	}
	for i, g := range got {
		if d := diffEvents(ev, g); d != "" {
			t.Fatalf("event %d: %s", i, d)
		}
		if !sr.Time().IsZero() {
			t.Fatalf("time after end = %v", sr.Time())
		}
	}
}

// TestStreamRunNonce checks that a writer's run nonce reaches every later
// event and that the reader hands it back, and nil before it was set.
func TestStreamRunNonce(t *testing.T) {
	nonce := bytes.Repeat([]byte{7}, 16)
	var buf bytes.Buffer
	sw := NewStreamWriter(&buf)
	ev := &ModelConnected{SessionID: "s"}
	if err := sw.Write(ev); err != nil {
		t.Fatal(err)
	}
	sw.SetRunNonce(nonce)
	nonce[0] = 9 // the writer keeps its own copy
	for range 2 {
		if err := sw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	sr := NewStreamReader(&buf, 0)
	var got [][]byte
	for sr.Next() {
		got = append(got, sr.RunNonce())
	}
	if err := sr.Err(); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{7}, 16)
	if len(got) != 3 || got[0] != nil || !bytes.Equal(got[1], want) || !bytes.Equal(got[2], want) {
		t.Fatalf("nonces %x, want [nil %x %x]", got, want, want)
	}
}
