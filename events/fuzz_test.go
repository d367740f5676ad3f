package events

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/sample.stream")

const sampleStream = "testdata/sample.stream"

// sampleSequence is the content of testdata/sample.stream: a few of every
// kind of event.
func sampleSequence() []timedEvent {
	g := newGen(42)
	var seq []timedEvent
	for range 3 {
		for _, k := range allKinds {
			seq = append(seq, timedEvent{g.event(k), g.time()})
		}
	}
	return seq
}

// TestSampleStream checks that the committed sample stream still decodes to
// the events it was made from: the wire format has not changed.
func TestSampleStream(t *testing.T) {
	seq := sampleSequence()
	if *update {
		if err := os.WriteFile(filepath.FromSlash(sampleStream), writeStream(t, seq), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.FromSlash(sampleStream))
	if err != nil {
		t.Fatalf("%v (run go test ./events -run TestSampleStream -update to create it)", err)
	}
	compareSequences(t, seq, readStream(t, bytes.NewReader(b), 0))
}

// sampleStreamV2 is a sample stream written before rlmesh 0.1's fields
// existed (the events of schema version 2 producers).
const sampleStreamV2 = "testdata/sample-v2.stream"

// TestSampleStreamV2 checks that a stream of older producers still
// decodes, event for event, and that every message re-encodes to exactly
// its bytes: none of the fields added since is set by decoding it.
func TestSampleStreamV2(t *testing.T) {
	b, err := os.ReadFile(filepath.FromSlash(sampleStreamV2))
	if err != nil {
		t.Fatal(err)
	}
	sr := NewStreamReader(bytes.NewReader(b), 0)
	var again bytes.Buffer
	sw := NewStreamWriter(&again)
	n := 0
	for sr.Next() {
		if sr.RunNonce() != nil {
			t.Fatalf("message %d: a run nonce in a stream that had none", n)
		}
		if err := sw.WriteAt(sr.Event(), sr.Time()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := sr.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 36 {
		t.Fatalf("%d events, want 36", n)
	}
	if !bytes.Equal(again.Bytes(), b) {
		t.Fatal("the re-encoded stream differs from the one older producers wrote")
	}
}

func addStreamSeeds(f *testing.F) []byte {
	b, err := os.ReadFile(filepath.FromSlash(sampleStream))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if old, err := os.ReadFile(filepath.FromSlash(sampleStreamV2)); err == nil {
		f.Add(old)
	}
	f.Add([]byte{})
	f.Add(b[:len(b)/2])
	f.Add([]byte{0x80})
	f.Add([]byte{0x02, 0x52, 0x00}) // an empty EnvConnected
	return b
}

// FuzzStreamReader checks that the reader never panics, that reading on
// past invalid events ends, and that the valid events of a stream it
// accepts whole re-encode to a stream that decodes to the same events.
func FuzzStreamReader(f *testing.F) {
	addStreamSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		sr := NewStreamReader(bytes.NewReader(in), 1<<20)
		var seq []timedEvent
		for skipped := 0; ; skipped++ {
			for sr.Next() {
				seq = append(seq, timedEvent{sr.Event(), sr.Time()})
			}
			var bad *InvalidEventError
			if !errors.As(sr.Err(), &bad) {
				break
			}
			if skipped > len(in) {
				t.Fatalf("%d invalid events in %d bytes", skipped, len(in))
			}
		}
		if sr.Err() != nil {
			if _, ok := sr.Err().(*StreamError); !ok {
				t.Fatalf("Err is %T, want *StreamError", sr.Err())
			}
			return
		}
		again := writeStream(t, seq)
		compareSequences(t, seq, readStream(t, bytes.NewReader(again), 1<<20))
	})
}

// FuzzUnmarshal checks that Unmarshal never panics, and that an event it
// accepts re-encodes to bytes that decode to the same event.
func FuzzUnmarshal(f *testing.F) {
	b := addStreamSeeds(f)
	sr := NewStreamReader(bytes.NewReader(b), 0)
	for sr.Next() {
		m, err := AppendMarshal(nil, sr.Event(), sr.Time())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ev, tm, err := Unmarshal(in)
		if err != nil {
			if ev != nil {
				t.Fatal("event with error")
			}
			return
		}
		out, err := AppendMarshal(nil, ev, tm)
		if err != nil {
			t.Fatalf("re-encode %v: %v", ev.Kind(), err)
		}
		ev2, tm2, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if d := diffEvents(ev, ev2); d != "" {
			t.Fatal(d)
		}
		if !tm.Equal(tm2) {
			t.Fatalf("time %v vs %v", tm, tm2)
		}
	})
}
