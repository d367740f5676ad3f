package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/events/eventsv1"
	"github.com/rlrec/rlrec/sim"
)

// TestIngestInvalidEvents ingests a simulated stream into which
// well-formed but invalid messages are mixed: the ingest goes on, each one
// naming its recording is counted in that recording's sessions row, the
// report on stderr counts them all, and damage still stops the ingest.
func TestIngestInvalidEvents(t *testing.T) {
	var sb bytes.Buffer
	cfg := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 6, Seed: 1, SessionID: "s-ingest"}
	if _, err := sim.RunSessions(context.Background(), sim.NewStreamHooks(events.NewStreamWriter(&sb)), []sim.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	good := sb.Bytes()
	// The route of the simulated session, for invalid events that name it.
	sr := events.NewStreamReader(bytes.NewReader(good), 0)
	if !sr.Next() {
		t.Fatal(sr.Err())
	}
	sid, route := sr.Event().Header()
	wireRoute := &eventsv1.RuntimeEnvContext{EnvId: route.EnvID, EnvComponentId: route.EnvComponentID, ModelComponentId: route.ModelComponentID}
	// The stream cut after its first 5 messages, where invalid ones go.
	var cut int
	for i, off := 0, 0; i < 5; i++ {
		size, n := protowire.ConsumeVarint(good[off:])
		off += n + int(size)
		cut = off
	}
	frame := func(m *eventsv1.Event) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return append(protowire.AppendVarint(nil, uint64(len(b))), b...)
	}
	logLevel0 := frame(&eventsv1.Event{SessionId: sid, Route: wireRoute, Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Message: "level 0"}}})
	horizon7 := frame(&eventsv1.Event{SessionId: sid, Route: wireRoute, Kind: &eventsv1.Event_TelemetrySnapshot{
		TelemetrySnapshot: &eventsv1.TelemetrySnapshot{Horizon: 7}}})
	noKind := frame(&eventsv1.Event{SessionId: sid, Route: wireRoute})
	unnamed := frame(&eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Level: eventsv1.LogLevel(9)}}})

	tests := []struct {
		name string
		bad  [][]byte
		// tail replaces the rest of the stream after the invalid messages
		// (nil: the rest of the good stream).
		tail    []byte
		code    int
		counted int // invalid_event in the sessions row
		stderr  []string
	}{
		{name: "log level 0", bad: [][]byte{logLevel0}, counted: 1,
			stderr: []string{"skipped 1 invalid event ", "1 counted in the sessions rows"}},
		{name: "telemetry horizon 7", bad: [][]byte{horizon7}, counted: 1,
			stderr: []string{"skipped 1 invalid event ", "1 counted in the sessions rows"}},
		{name: "kind unset", bad: [][]byte{noKind}, counted: 1,
			stderr: []string{"skipped 1 invalid event "}},
		{name: "naming no recording", bad: [][]byte{unnamed, unnamed}, counted: 0,
			stderr: []string{"skipped 2 invalid events", "2 naming no recording", "message 5 at byte", "message 6 at byte", "level 9"}},
		{name: "all of them", bad: [][]byte{logLevel0, unnamed, horizon7, noKind}, counted: 3,
			stderr: []string{"skipped 4 invalid events", "3 counted in the sessions rows", "1 naming no recording"}},
		{name: "truncated after an invalid event", bad: [][]byte{logLevel0}, tail: []byte{0x05, 0x0a}, code: 1, counted: 1,
			stderr: []string{"skipped 1 invalid event ", "truncated", "the 5 events before it are recorded"}},
		{name: "garbage after an invalid event", bad: [][]byte{logLevel0}, tail: []byte{0x02, 0xff, 0xff}, code: 1, counted: 1,
			stderr: []string{"skipped 1 invalid event ", "malformed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]byte(nil), good[:cut]...)
			for _, b := range tt.bad {
				in = append(in, b...)
			}
			if tt.tail != nil {
				in = append(in, tt.tail...)
			} else {
				in = append(in, good[cut:]...)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "in.events")
			if err := os.WriteFile(file, in, 0o644); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(dir, "root")
			code, out, errOut := runCmd(t, "ingest", "--out", root, file)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, errOut)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if tt.code == 0 && !strings.Contains(out, "skipped "+count(len(tt.bad), "invalid event")+".") {
				t.Errorf("stdout %q does not count the skipped events", out)
			}
			ds, err := dataset.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ds.Session(dataset.Recording{SessionID: sid, EnvID: route.EnvID})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Rows) != 1 {
				t.Fatalf("%d sessions rows", len(s.Rows))
			}
			row := s.Rows[0]
			summary := ""
			if row.ProblemSummary != nil {
				summary = *row.ProblemSummary
			}
			if want := "invalid_event=" + strconv.Itoa(tt.counted); (tt.counted > 0) != strings.Contains(summary, want) || row.Problems != int64(tt.counted) {
				t.Errorf("problems %d %q, want %d invalid events counted", row.Problems, summary, tt.counted)
			}
			if tt.code == 0 && (row.Status != "ended" || row.EpisodesRecorded == 0) {
				t.Errorf("session %s with %d episodes: the rest of the stream was not recorded", row.Status, row.EpisodesRecorded)
			}
		})
	}
}
