package recorder_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/events/eventsv1"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
)

// withRoute sets the route of every event of evs.
func withRoute(evs []events.Event, route events.RuntimeEnvContext) []events.Event {
	for _, ev := range evs {
		reflect.ValueOf(ev).Elem().FieldByName("Route").Set(reflect.ValueOf(route))
	}
	return evs
}

// ingestStream records the stream in b as rlrec ingest does: valid events
// with RecordAt, invalid ones with RecordInvalid, which it counts.
func ingestStream(t *testing.T, rec *recorder.Recorder, b []byte) (invalid, unnamed int) {
	t.Helper()
	ctx := context.Background()
	sr := events.NewStreamReader(bytes.NewReader(b), 0)
	for {
		for sr.Next() {
			if err := rec.RecordAt(ctx, sr.Event(), sr.Time()); err != nil {
				t.Fatalf("event %d: %v", sr.Index(), err)
			}
		}
		var bad *events.InvalidEventError
		if !errors.As(sr.Err(), &bad) {
			break
		}
		invalid++
		if err := rec.RecordInvalid(ctx, sr.Err(), bad.Time); errors.Is(err, recorder.ErrNoRecording) {
			unnamed++
		} else if err != nil {
			t.Fatalf("message %d: %v", sr.Index(), err)
		}
	}
	if err := sr.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return invalid, unnamed
}

// TestRecordInvalid records streams into which well-formed but invalid
// events are mixed: each one that names its recording is counted in that
// recording's sessions row, the others are left to the caller, and the
// rest of the stream records, live and after a crash.
func TestRecordInvalid(t *testing.T) {
	const sid = "s-invalid"
	route := events.RuntimeEnvContext{EnvID: "r1", EnvComponentID: "env", ModelComponentID: "model"}
	wireRoute := &eventsv1.RuntimeEnvContext{EnvId: "r1", EnvComponentId: "env", ModelComponentId: "model"}
	logLevel0 := &eventsv1.Event{SessionId: sid, Route: wireRoute, Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Message: "level 0"}}}
	horizon7 := &eventsv1.Event{SessionId: sid, Route: wireRoute, Kind: &eventsv1.Event_TelemetrySnapshot{
		TelemetrySnapshot: &eventsv1.TelemetrySnapshot{Horizon: 7}}}
	noKind := &eventsv1.Event{SessionId: sid, Route: wireRoute, TimeUnixNano: 1_700_000_000_000_000_000}
	noSession := &eventsv1.Event{Route: wireRoute, Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{}}}
	noEnvID := &eventsv1.Event{SessionId: sid, Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{}}}
	futureKind := func() []byte { // field 31: a kind this version does not know
		b, err := proto.Marshal(&eventsv1.Event{SessionId: sid, Route: wireRoute})
		if err != nil {
			t.Fatal(err)
		}
		return append(b, 0xfa, 0x01, 0x00)
	}

	cases := []struct {
		name    string
		bad     [][]byte // message bodies mixed in mid-session
		counted int64    // invalid_event in the sessions row
		unnamed int      // naming no recording
	}{
		{name: "log level unspecified", bad: bodies(t, logLevel0), counted: 1},
		{name: "telemetry horizon unknown", bad: bodies(t, horizon7), counted: 1},
		{name: "kind unset", bad: bodies(t, noKind), counted: 1},
		{name: "kind unknown", bad: [][]byte{futureKind()}, counted: 1},
		{name: "several", bad: bodies(t, logLevel0, horizon7, noKind, logLevel0), counted: 4},
		{name: "no session id", bad: bodies(t, noSession), unnamed: 1},
		{name: "no env id", bad: bodies(t, noEnvID), unnamed: 1},
		{name: "named and unnamed", bad: bodies(t, noSession, logLevel0, noEnvID), counted: 1, unnamed: 2},
	}
	for _, tc := range cases {
		for _, crash := range []bool{false, true} {
			name := tc.name + "/live"
			if crash {
				name = tc.name + "/crash"
			}
			t.Run(name, func(t *testing.T) {
				evs := withRoute(badScript(sid, func(string) []events.Event { return nil }), route)
				// badScript's events: six before the bad input, then the
				// rest of the episode and the session's end.
				const badAt = 6
				var stream bytes.Buffer
				w := events.NewStreamWriter(&stream)
				write := func(evs []events.Event) {
					for _, ev := range evs {
						if err := w.Write(ev); err != nil {
							t.Fatal(err)
						}
					}
				}
				write(evs[:badAt])
				for _, b := range tc.bad {
					stream.Write(protowire.AppendVarint(nil, uint64(len(b))))
					stream.Write(b)
				}
				tail := evs[badAt:]
				if crash {
					tail = tail[:len(tail)-2] // no SessionEnded, no final telemetry
				}
				write(tail)

				mem := vfs.NewMem()
				var logs roottest.SyncBuffer
				logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
				rec, err := recorder.Open(memRoot, fast, recorder.WithFS(mem), recorder.WithLogger(logger), recorder.WithSyncPolicy(recorder.SyncEach))
				if err != nil {
					t.Fatal(err)
				}
				invalid, unnamed := ingestStream(t, rec, stream.Bytes())
				if invalid != len(tc.bad) || unnamed != tc.unnamed {
					t.Fatalf("%d invalid events, %d naming no recording; want %d and %d", invalid, unnamed, len(tc.bad), tc.unnamed)
				}
				fsys := vfs.FS(mem)
				wantStatus := schema.SessionEnded
				if crash {
					crashed := mem.Crash()
					t.Cleanup(func() { rec.Close(context.Background()) })
					openClose(t, crashed)
					fsys, wantStatus = crashed, schema.SessionCrashed
				} else {
					if err := rec.Close(context.Background()); err != nil {
						t.Fatal(err)
					}
					if got := strings.Count(logs.String(), "problem=invalid_event"); int64(got) != tc.counted {
						t.Errorf("%d invalid events logged as counted, want %d:\n%s", got, tc.counted, logs.String())
					}
					if got := strings.Count(logs.String(), "names no recording"); got != tc.unnamed {
						t.Errorf("%d invalid events logged as naming no recording, want %d:\n%s", got, tc.unnamed, logs.String())
					}
				}
				tb := readTables(t, fsys, memRoot)
				sr := sessionOf(t, tb, sid)
				if sr.Status != wantStatus {
					t.Errorf("status %s, want %s", sr.Status, wantStatus)
				}
				summary := ""
				if sr.ProblemSummary != nil {
					summary = *sr.ProblemSummary
				}
				if tc.counted == 0 && (sr.Problems != 0 || summary != "") {
					t.Errorf("problems %d %q, want none", sr.Problems, summary)
				}
				if want := "invalid_event=" + strconv.FormatInt(tc.counted, 10); tc.counted > 0 && (sr.Problems != tc.counted || summary != want) {
					t.Errorf("problems %d %q, want %d %q", sr.Problems, summary, tc.counted, want)
				}
				if rows := tb.steps[[2]string{sid, "ep-000001"}]; len(rows) != 2 {
					t.Errorf("the good episode has %d steps, want 2", len(rows))
				}
			})
		}
	}
}

func bodies(t *testing.T, msgs ...*eventsv1.Event) [][]byte {
	t.Helper()
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}
