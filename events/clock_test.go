package events

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestRecorderClockField: the recorder_clock field travels through the
// stream writer and reader and the decoder, and only when set.
func TestRecorderClockField(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	ev := &Log{SessionID: "s", Level: LogInfo, Message: "m"}
	var buf bytes.Buffer
	w := NewStreamWriter(&buf)
	for _, flag := range []bool{false, true, false} {
		if err := w.WriteStamped(ev, at, flag); err != nil {
			t.Fatal(err)
		}
	}
	r := NewStreamReader(&buf, 0)
	var got []bool
	for r.Next() {
		if !r.Time().Equal(at) {
			t.Fatalf("time %v, want %v", r.Time(), at)
		}
		got = append(got, r.RecorderClock())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] || !got[1] || got[2] {
		t.Fatalf("recorder_clock %v, want [false true false]", got)
	}
	msg, err := AppendMarshal(nil, ev, at)
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	if _, _, err := d.Decode(AppendRecorderClock(append([]byte(nil), msg...))); err != nil || !d.RecorderClock() {
		t.Fatalf("decoder: recorder clock %v, %v", d.RecorderClock(), err)
	}
	if _, _, err := d.Decode(msg); err != nil || d.RecorderClock() {
		t.Fatalf("decoder: recorder clock %v after a message without it, %v", d.RecorderClock(), err)
	}
}

// timedHooks records how each event came.
type timedHooks struct {
	NoopHooks
	at      []time.Time
	methods int
}

func (h *timedHooks) RecordAt(_ context.Context, _ Event, t time.Time) error {
	h.at = append(h.at, t)
	return nil
}

func (h *timedHooks) OnLog(context.Context, *Log) error { h.methods++; return nil }

// TestDispatchAt: a TimedHooks gets the time through RecordAt; the zero
// time, and hooks that take no time, get the method.
func TestDispatchAt(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := &timedHooks{}
	ctx := context.Background()
	if err := DispatchAt(ctx, h, &Log{}, at); err != nil {
		t.Fatal(err)
	}
	if err := DispatchAt(ctx, h, &Log{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if len(h.at) != 1 || !h.at[0].Equal(at) || h.methods != 1 {
		t.Fatalf("RecordAt times %v, method calls %d; want [%v] and 1", h.at, h.methods, at)
	}
	if err := DispatchAt(ctx, h, nil, at); err == nil {
		t.Fatal("a nil event was dispatched")
	}
	var plain struct{ NoopHooks }
	if err := DispatchAt(ctx, plain, &Log{}, at); err != nil {
		t.Fatal(err)
	}
}
