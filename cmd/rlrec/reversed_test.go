package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

// TestIngestReversed: a stream whose events come in reverse order is out
// of order, not a recording that ROOT already held: ingest must not say
// "already in ROOT" of the recording it wrote from the stream itself
// (recorder TestSessionStartedAfterItsFiles makes the timing sure).
func TestIngestReversed(t *testing.T) {
	stream := readTestStream(t)
	r := events.NewStreamReader(bytes.NewReader(stream), 0)
	var buf bytes.Buffer
	var evs []events.Event
	var times []time.Time
	for r.Next() {
		b, err := events.AppendMarshal(nil, r.Event(), r.Time())
		if err != nil {
			t.Fatal(err)
		}
		ev, _, err := events.Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		times = append(times, r.Time())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	w := events.NewStreamWriter(&buf)
	for i := len(evs) - 1; i >= 0; i-- {
		if err := w.WriteAt(evs[i], times[i]); err != nil {
			t.Fatal(err)
		}
	}
	in := filepath.Join(t.TempDir(), "reversed.bin")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "r")
	code, out, errs := runCmd(t, "ingest", "--out", root, in)
	if code != 1 || !strings.Contains(errs, "out of order") {
		t.Errorf("exit %d, want 1 saying the events came out of order:\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, "already in ROOT") {
		t.Errorf("a reversed stream is called a recording ROOT already held:\n%s%s", out, errs)
	}
}
