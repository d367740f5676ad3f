package events

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/events/eventsv1"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

func TestRoundTripProperty(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	g := newGen(1)
	for i := range n {
		k := allKinds[i%len(allKinds)]
		ev, tm := g.event(k), g.time()
		m, err := ToProto(ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: ToProto: %v", i, k, err)
		}
		got, gotT, err := FromProto(m)
		if err != nil {
			t.Fatalf("#%d %v: FromProto: %v", i, k, err)
		}
		if d := diffEvents(ev, got); d != "" {
			t.Fatalf("#%d %v proto round trip: %s", i, k, d)
		}
		if !gotT.Equal(tm) {
			t.Fatalf("#%d time %v, want %v", i, gotT, tm)
		}
		b, err := AppendMarshal(nil, ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: AppendMarshal: %v", i, k, err)
		}
		got, gotT, err = Unmarshal(b)
		if err != nil {
			t.Fatalf("#%d %v: Unmarshal: %v", i, k, err)
		}
		if d := diffEvents(ev, got); d != "" {
			t.Fatalf("#%d %v bytes round trip: %s", i, k, d)
		}
		if !gotT.Equal(tm) {
			t.Fatalf("#%d time %v, want %v", i, gotT, tm)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	src := "driver"
	tests := []struct {
		name    string
		ev      Event
		t       time.Time
		wantErr error
	}{
		{"nil event", nil, time.Time{}, ErrNilEvent},
		{"typed nil event", (*ActionReceived)(nil), time.Time{}, ErrNilEvent},
		{"unknown event type", otherEvent{}, time.Time{}, ErrUnknownKind},
		{"log level 0", &Log{Message: "x", Source: &src}, time.Time{}, ErrUnknownEnum},
		{"log level 5", &Log{Level: 5}, time.Time{}, ErrUnknownEnum},
		{"horizon 0", &TelemetrySnapshot{}, time.Time{}, ErrUnknownEnum},
		{"metric kind 4", &TelemetrySnapshot{Snapshot: Snapshot{Horizon: HorizonWindow, Rows: []TelemetryRow{{Kind: 4}}}}, time.Time{}, ErrUnknownEnum},
		{"time before 1678", &ModelConnected{}, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), ErrTimeOutOfRange},
		{"time after 2262", &ModelConnected{}, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), ErrTimeOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ToProto(tt.ev, tt.t); !errors.Is(err, tt.wantErr) {
				t.Errorf("ToProto = %v, want %v", err, tt.wantErr)
			}
			if b, err := AppendMarshal([]byte("keep"), tt.ev, tt.t); !errors.Is(err, tt.wantErr) || string(b) != "keep" {
				t.Errorf("AppendMarshal = %q, %v, want dst unchanged and %v", b, err, tt.wantErr)
			}
		})
	}
}

type otherEvent struct{}

func (otherEvent) Kind() Kind                          { return 99 }
func (otherEvent) Header() (string, RuntimeEnvContext) { return "", RuntimeEnvContext{} }

func TestFromProtoErrors(t *testing.T) {
	tests := []struct {
		name    string
		m       *eventsv1.Event
		wantErr error
	}{
		{"nil message", nil, ErrNilEvent},
		{"no kind", &eventsv1.Event{SessionId: "s"}, ErrUnknownKind},
		{"log level unspecified", &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{}}}, ErrUnknownEnum},
		{"log level 5", &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Level: 5}}}, ErrUnknownEnum},
		{"log level negative", &eventsv1.Event{Kind: &eventsv1.Event_Log{Log: &eventsv1.Log{Level: -1}}}, ErrUnknownEnum},
		{"nil log message", &eventsv1.Event{Kind: &eventsv1.Event_Log{}}, ErrUnknownEnum},
		{"horizon unspecified", &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{}}}, ErrUnknownEnum},
		{"horizon 3", &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{Horizon: 3}}}, ErrUnknownEnum},
		{"metric kind unspecified", &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{
			Horizon: 2, Rows: []*eventsv1.TelemetryRow{{Kind: 3}, {}}}}}, ErrUnknownEnum},
		{"relay leg unspecified", &eventsv1.Event{Kind: &eventsv1.Event_RelayAdvisory{RelayAdvisory: &eventsv1.RelayAdvisory{Severity: 1}}}, ErrUnknownEnum},
		{"relay leg 3", &eventsv1.Event{Kind: &eventsv1.Event_RelayAdvisory{RelayAdvisory: &eventsv1.RelayAdvisory{Leg: 3, Severity: 1}}}, ErrUnknownEnum},
		{"relay leg 257", &eventsv1.Event{Kind: &eventsv1.Event_RelayAdvisory{RelayAdvisory: &eventsv1.RelayAdvisory{Leg: 257, Severity: 1}}}, ErrUnknownEnum},
		{"advisory severity unspecified", &eventsv1.Event{Kind: &eventsv1.Event_RelayAdvisory{RelayAdvisory: &eventsv1.RelayAdvisory{Leg: 1}}}, ErrUnknownEnum},
		{"advisory severity negative", &eventsv1.Event{Kind: &eventsv1.Event_RelayAdvisory{RelayAdvisory: &eventsv1.RelayAdvisory{Leg: 1, Severity: -1}}}, ErrUnknownEnum},
		{"metric kind 4", &eventsv1.Event{Kind: &eventsv1.Event_TelemetrySnapshot{TelemetrySnapshot: &eventsv1.TelemetrySnapshot{
			Horizon: 2, Rows: []*eventsv1.TelemetryRow{{Kind: 4}}}}}, ErrUnknownEnum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, _, err := FromProto(tt.m)
			if !errors.Is(err, tt.wantErr) || ev != nil {
				t.Fatalf("FromProto = %v, %v, want nil, %v", ev, err, tt.wantErr)
			}
			if tt.m == nil {
				return
			}
			b, err := proto.Marshal(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := Unmarshal(b); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Unmarshal = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if _, _, err := Unmarshal([]byte{0xff}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Unmarshal garbage = %v, want ErrMalformed", err)
	}
}

// TestConvertPresence pins the nil/empty rules of the wire form.
func TestConvertPresence(t *testing.T) {
	empty := ""
	tests := []struct {
		name  string
		ev    Event
		check func(m *eventsv1.Event) bool
	}{
		{"nil action is absent", &ActionReceived{}, func(m *eventsv1.Event) bool { return m.GetActionReceived().Action == nil }},
		{"empty action is present", &ActionReceived{Action: [][]byte{}}, func(m *eventsv1.Event) bool { return m.GetActionReceived().Action != nil }},
		{"nil observation is absent", &ObservationEmitted{}, func(m *eventsv1.Event) bool { return m.GetObservationEmitted().Observation == nil }},
		{"empty observation is present", &ObservationEmitted{Observation: [][]byte{}}, func(m *eventsv1.Event) bool { return m.GetObservationEmitted().Observation != nil }},
		{"nil source is absent", &Log{Level: LogWarn}, func(m *eventsv1.Event) bool { return m.GetLog().Source == nil }},
		{"empty source is present", &Log{Level: LogWarn, Source: &empty}, func(m *eventsv1.Event) bool { return m.GetLog().Source != nil }},
		{"nil final info is absent", &EpisodeCompleted{}, func(m *eventsv1.Event) bool { return m.GetEpisodeCompleted().FinalInfo == nil }},
		{"empty final info is present", &EpisodeCompleted{FinalInfo: &spacesv1.MetaMap{}}, func(m *eventsv1.Event) bool { return m.GetEpisodeCompleted().FinalInfo != nil }},
		{"zero time is 0", &ModelConnected{}, func(m *eventsv1.Event) bool { return m.TimeUnixNano == 0 }},
		{"absent lane is absent", &Log{Level: LogInfo, Route: RuntimeEnvContext{EnvID: "e"}}, func(m *eventsv1.Event) bool { return m.GetRoute().Lane == nil }},
		{"lane 0 is present", &Log{Level: LogInfo, Route: RuntimeEnvContext{Lane: Some(uint32(0))}}, func(m *eventsv1.Event) bool { return m.GetRoute() != nil && m.GetRoute().Lane != nil }},
		{"absent seed and trial", &EpisodeStarted{}, func(m *eventsv1.Event) bool {
			return m.GetEpisodeStarted().Seed == nil && m.GetEpisodeStarted().TrialIndex == nil
		}},
		{"seed 0 and trial 0 are present", &EpisodeStarted{Seed: Some(int64(0)), TrialIndex: Some(uint64(0))}, func(m *eventsv1.Event) bool {
			return m.GetEpisodeStarted().Seed != nil && m.GetEpisodeStarted().TrialIndex != nil
		}},
		{"success false is present", &EpisodeCompleted{Success: Some(false)}, func(m *eventsv1.Event) bool { return m.GetEpisodeCompleted().Success != nil }},
		{"absent success and times", &EpisodeCompleted{}, func(m *eventsv1.Event) bool {
			c := m.GetEpisodeCompleted()
			return c.Success == nil && c.Seed == nil && c.TrialIndex == nil && c.PredictMs == nil && c.StepMs == nil
		}},
		{"episode times 0 are present", &EpisodeCompleted{PredictMs: Some(0.0), StepMs: Some(0.0)}, func(m *eventsv1.Event) bool {
			return m.GetEpisodeCompleted().PredictMs != nil && m.GetEpisodeCompleted().StepMs != nil
		}},
		{"nil raw action is absent", &ActionReceived{Action: [][]byte{{1}}}, func(m *eventsv1.Event) bool { return m.GetActionReceived().RawAction == nil }},
		{"empty raw action is present", &ActionReceived{RawAction: [][]byte{}}, func(m *eventsv1.Event) bool { return m.GetActionReceived().RawAction != nil }},
		{"nil raw observation and infos are absent", &ObservationEmitted{}, func(m *eventsv1.Event) bool {
			return m.GetObservationEmitted().RawObservation == nil && m.GetObservationEmitted().Infos == nil
		}},
		{"empty raw observation and infos are present", &ObservationEmitted{RawObservation: [][]byte{}, Infos: &spacesv1.MetaMap{}}, func(m *eventsv1.Event) bool {
			return m.GetObservationEmitted().RawObservation != nil && m.GetObservationEmitted().Infos != nil
		}},
		{"nil step infos and times are absent", &StepCompleted{}, func(m *eventsv1.Event) bool {
			c := m.GetStepCompleted()
			return c.Infos == nil && c.PredictMs == nil && c.StepMs == nil
		}},
		{"empty step infos and zero times are present", &StepCompleted{Infos: &spacesv1.MetaMap{}, PredictMs: Some(0.0), StepMs: Some(0.0)}, func(m *eventsv1.Event) bool {
			c := m.GetStepCompleted()
			return c.Infos != nil && c.PredictMs != nil && c.StepMs != nil
		}},
		{"all-false flags are kept", &StepCompleted{Rewards: []float64{0, 0}, Terminated: []bool{false, false}, Truncated: []bool{false, false}, AutoresetRoll: []bool{false, false}}, func(m *eventsv1.Event) bool {
			c := m.GetStepCompleted()
			return len(c.Terminated) == 2 && len(c.Truncated) == 2 && len(c.AutoresetRoll) == 2
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := AppendMarshal(nil, tt.ev, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			m := &eventsv1.Event{}
			if err := proto.Unmarshal(b, m); err != nil {
				t.Fatal(err)
			}
			if !tt.check(m) {
				t.Fatalf("wire message %v", m)
			}
			got, _, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffEvents(tt.ev, got); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestAppendMarshalDeterministic checks that equal events (FinalInfo maps
// included) give equal bytes, and that dst is appended to.
func TestAppendMarshalDeterministic(t *testing.T) {
	g := newGen(7)
	for i := range 200 {
		ev := g.event(KindEpisodeCompleted)
		a, err := AppendMarshal([]byte("x"), ev, time.Unix(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			b, err := AppendMarshal([]byte("x"), ev, time.Unix(1, 2))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatalf("#%d: encodings differ", i)
			}
		}
		if a[0] != 'x' {
			t.Fatal("dst prefix lost")
		}
	}
}
