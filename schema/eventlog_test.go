package schema

import (
	"bufio"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/events"
)

// eventLogSeeds returns the messages of testdata/eventlog.txt, one a line.
func eventLogSeeds(t testing.TB) []string {
	t.Helper()
	f, err := os.Open("testdata/eventlog.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEventLogRoundTrip(t *testing.T) {
	route := events.RuntimeEnvContext{EnvID: "r", EnvComponentID: "env", ModelComponentID: "model"}
	tests := []struct {
		name string
		ev   events.Event
	}{
		{"env connected", &events.EnvConnected{SessionID: "s", Route: route, EnvID: "r"}},
		{"model connected", &events.ModelConnected{SessionID: "s", Route: route}},
		{"repeated completion", &events.EpisodeCompleted{SessionID: "s", Route: route, EpisodeID: "e1", EpisodeRecordID: "ep-000001",
			EpisodeIndex: 1, StepCount: 100, CumulativeReward: 0.1 + 0.2, Truncated: true, DurationMs: 40}},
		{"infinite reward", &events.EpisodeCompleted{SessionID: "s", Route: route, EpisodeRecordID: "ep-000002",
			CumulativeReward: math.Inf(-1), Truncated: true}},
		{"relay advisory", &events.RelayAdvisory{SessionID: "s", Route: route, Leg: events.LegEnvToModel,
			Severity: events.SeverityCaution, Message: "observation converted: float64 -> float32"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := EventLogMessage(tc.ev)
			if !ok {
				t.Fatal("not kept as a logs row")
			}
			got, err := ParseEventLog("s", route, msg)
			if err != nil {
				t.Fatalf("%q: %v", msg, err)
			}
			if !reflect.DeepEqual(got, tc.ev) {
				t.Fatalf("%q decodes to %+v, want %+v", msg, got, tc.ev)
			}
		})
	}
	if _, ok := EventLogMessage(&events.SessionStarted{}); ok {
		t.Error("SessionStarted kept as a logs row")
	}
	// NaN is not equal to itself: checked apart.
	msg, _ := EventLogMessage(&events.EpisodeCompleted{CumulativeReward: math.NaN(), Truncated: true})
	got, err := ParseEventLog("", events.RuntimeEnvContext{}, msg)
	if err != nil || !math.IsNaN(got.(*events.EpisodeCompleted).CumulativeReward) {
		t.Errorf("NaN reward: %q gives %+v, %v", msg, got, err)
	}
}

func TestParseEventLogRefuses(t *testing.T) {
	for _, msg := range []string{"", "EnvConnected", "EnvConnected {", "Teleported {}", `EpisodeCompleted {"step_count":"x"}`,
		`EpisodeCompleted {"cumulative_reward":"lots"}`, `RelayAdvisory {"leg":"sideways","severity":"info","message":""}`,
		`RelayAdvisory {"leg":"model_to_env","severity":"dire","message":""}`} {
		if ev, err := ParseEventLog("s", events.RuntimeEnvContext{}, msg); !errors.Is(err, ErrEventLog) {
			t.Errorf("%q: %+v, %v; want ErrEventLog", msg, ev, err)
		}
	}
	for _, msg := range eventLogSeeds(t) {
		if _, err := ParseEventLog("s", events.RuntimeEnvContext{}, msg); err != nil {
			t.Errorf("testdata %q: %v", msg, err)
		}
	}
}

// FuzzParseEventLog: any text either is refused with ErrEventLog or holds
// an event that encodes back to a message holding the same event.
func FuzzParseEventLog(f *testing.F) {
	for _, msg := range eventLogSeeds(f) {
		f.Add(msg)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		ev, err := ParseEventLog("s", events.RuntimeEnvContext{EnvID: "r"}, msg)
		if err != nil {
			if !errors.Is(err, ErrEventLog) {
				t.Fatalf("%q: %v, not ErrEventLog", msg, err)
			}
			return
		}
		again, ok := EventLogMessage(ev)
		if !ok {
			t.Fatalf("%q parsed to %T, which is not kept as a logs row", msg, ev)
		}
		ev2, err := ParseEventLog("s", events.RuntimeEnvContext{EnvID: "r"}, again)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", msg, again, err)
		}
		again2, _ := EventLogMessage(ev2)
		if again2 != again {
			t.Fatalf("%q: %q then %q", msg, again, again2)
		}
	})
}

// TestUnfinishedActionRoundTrip: an unfinished action's logs message holds
// it exactly, an empty payload stays distinct from a missing observation,
// and it is told apart from the other events kept in the logs table.
func TestUnfinishedActionRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		u    UnfinishedAction
		want string
	}{
		{"with observation", UnfinishedAction{EpisodeID: "e", EpisodeRecordID: "ep-000004", EnvIndex: 2, Step: 26, EpisodeStep: 9,
			Observation: []byte{0x0a, 0x01, 0x07}, Action: []byte{0x0a, 0x01, 0x01}},
			`ActionReceived {"episode_id":"e","episode_record_id":"ep-000004","env_index":2,"step":26,"episode_step":9,"observation":"CgEH","action":"CgEB"}`},
		{"no observation", UnfinishedAction{EpisodeRecordID: "ep-000001", Action: []byte{0x0a, 0x00}},
			`ActionReceived {"episode_id":"","episode_record_id":"ep-000001","env_index":0,"step":0,"episode_step":0,"observation":null,"action":"CgA="}`},
		{"empty observation and action", UnfinishedAction{EpisodeRecordID: "ep-000001", Observation: []byte{}, Action: []byte{}},
			`ActionReceived {"episode_id":"","episode_record_id":"ep-000001","env_index":0,"step":0,"episode_step":0,"observation":"","action":""}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.u.Message()
			if msg != tc.want {
				t.Fatalf("message %s\nwant        %s", msg, tc.want)
			}
			got, err := ParseUnfinishedAction(msg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.u) {
				t.Fatalf("%s decodes to %+v, want %+v", msg, got, tc.u)
			}
			if err := CheckEventLog(msg); err != nil {
				t.Fatalf("CheckEventLog: %v", err)
			}
		})
	}
	for _, msg := range append(eventLogSeeds(t), `ActionReceived {"step":1}`, `ActionReceived [`, "ActionReceived") {
		if _, err := ParseUnfinishedAction(msg); !errors.Is(err, ErrEventLog) {
			t.Errorf("%q: %v, want ErrEventLog", msg, err)
		}
	}
	if err := CheckEventLog(`ActionReceived {"step":1}`); !errors.Is(err, ErrEventLog) {
		t.Errorf("an unfinished action without its action: %v, want ErrEventLog", err)
	}
}

// FuzzParseUnfinishedAction: any text either is refused with ErrEventLog
// or holds an unfinished action whose message parses to the same action.
func FuzzParseUnfinishedAction(f *testing.F) {
	b, err := os.ReadFile("testdata/unfinished.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, msg := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f.Add(msg)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		u, err := ParseUnfinishedAction(msg)
		if err != nil {
			if !errors.Is(err, ErrEventLog) {
				t.Fatalf("%q: %v, not ErrEventLog", msg, err)
			}
			return
		}
		again := u.Message()
		u2, err := ParseUnfinishedAction(again)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", msg, again, err)
		}
		if !reflect.DeepEqual(u, u2) || u2.Message() != again {
			t.Fatalf("%q: %+v then %+v", msg, u, u2)
		}
	})
}

// TestRelayAdvisoryLog checks the level of an advisory's logs row and that
// a lane survives the round trip.
func TestRelayAdvisoryLog(t *testing.T) {
	tests := []struct {
		name  string
		ev    *events.RelayAdvisory
		level string
	}{
		{"info", &events.RelayAdvisory{SessionID: "s", Leg: events.LegModelToEnv, Severity: events.SeverityInfo, Message: "m"}, "info"},
		{"caution on a lane", &events.RelayAdvisory{SessionID: "s", Route: events.RuntimeEnvContext{EnvID: "r", Lane: events.Some(uint32(0))},
			Leg: events.LegEnvToModel, Severity: events.SeverityCaution, Message: "m"}, "warn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EventLogLevel(tc.ev); got != tc.level {
				t.Errorf("level %q, want %q", got, tc.level)
			}
			msg, ok := EventLogMessage(tc.ev)
			if !ok {
				t.Fatal("not kept")
			}
			route := tc.ev.Route
			route.Lane = events.Option[uint32]{}
			got, err := ParseEventLog("s", route, msg)
			if err != nil || !reflect.DeepEqual(got, tc.ev) {
				t.Fatalf("%q decodes to %+v, %v; want %+v", msg, got, err, tc.ev)
			}
		})
	}
	if got := EventLogLevel(&events.ModelConnected{}); got != "info" {
		t.Errorf("ModelConnected level %q", got)
	}
}
