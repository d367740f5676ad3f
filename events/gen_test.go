package events

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// gen produces random events of every kind from a seeded generator.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

var genRunes = []rune("abcxyz019 _-./=%é߷中文🙂\u00a0\u200b\x00\t\n")

func (g *gen) str(maxLen int) string {
	n := g.r.IntN(maxLen + 1)
	var b strings.Builder
	for range n {
		b.WriteRune(genRunes[g.r.IntN(len(genRunes))])
	}
	return b.String()
}

func (g *gen) route() RuntimeEnvContext {
	if g.r.IntN(4) == 0 {
		return RuntimeEnvContext{}
	}
	r := RuntimeEnvContext{EnvID: g.str(12), EnvComponentID: g.str(12), ModelComponentID: g.str(12)}
	if g.r.IntN(3) == 0 {
		r.Lane = Some(uint32(g.u64()))
	}
	return r
}

// opt returns an absent Option or, half the time, a present one holding v
// (the zero value included: present and zero is not absent).
func opt[T any](g *gen, v T) Option[T] {
	if g.r.IntN(2) == 0 {
		return Option[T]{}
	}
	return Some(v)
}

func (g *gen) u64() uint64 {
	switch g.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return math.MaxUint64 - g.r.Uint64N(3)
	}
	return g.r.Uint64N(5000)
}

func (g *gen) bools(n int) []bool {
	if n == 0 || g.r.IntN(4) == 0 {
		return nil
	}
	b := make([]bool, n)
	for i := range b {
		b[i] = g.r.IntN(2) == 0
	}
	return b
}

func (g *gen) i64() int64 {
	switch g.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return math.MinInt64 + g.r.Int64N(3)
	case 2:
		return math.MaxInt64 - g.r.Int64N(3)
	}
	return g.r.Int64N(2000) - 1000
}

func (g *gen) i32() int32 { return int32(g.i64()) }

func (g *gen) f64() float64 {
	switch g.r.IntN(8) {
	case 0:
		return math.NaN()
	case 1:
		return math.Float64frombits(0x7ff8_0000_dead_beef) // NaN with a payload
	case 2:
		return math.Inf(1 - 2*g.r.IntN(2))
	case 3:
		return math.Copysign(0, -1)
	case 4:
		return 0
	}
	return g.r.NormFloat64() * 100
}

func (g *gen) ids(n int) []string {
	if n == 0 {
		return nil
	}
	s := make([]string, n)
	for i := range s {
		if g.r.IntN(5) > 0 {
			s[i] = fmt.Sprintf("ep-%06d", g.r.IntN(1000000))
		}
	}
	return s
}

func (g *gen) leaves() [][]byte {
	switch g.r.IntN(5) {
	case 0:
		return nil
	case 1:
		return [][]byte{}
	}
	l := make([][]byte, 1+g.r.IntN(4))
	for i := range l {
		if g.r.IntN(5) == 0 {
			l[i] = []byte{}
			continue
		}
		b := make([]byte, g.r.IntN(64))
		for j := range b {
			b[j] = byte(g.r.UintN(256))
		}
		l[i] = b
	}
	return l
}

func (g *gen) spec(depth int) *spacesv1.SpaceSpec {
	if g.r.IntN(6) == 0 {
		return nil
	}
	return g.specNonNil(depth)
}

func (g *gen) specNonNil(depth int) *spacesv1.SpaceSpec {
	s := &spacesv1.SpaceSpec{Dtype: spacesv1.DataType(g.r.IntN(13))}
	for range g.r.IntN(3) {
		s.Shape = append(s.Shape, g.r.Int64N(100))
	}
	k := g.r.IntN(7)
	if depth <= 0 {
		k = g.r.IntN(5)
	}
	switch k {
	case 0:
		box := &spacesv1.BoxSpec{}
		switch g.r.IntN(3) {
		case 0:
			box.Bounds = &spacesv1.BoxSpec_Unbounded{Unbounded: true}
		case 1:
			box.Bounds = &spacesv1.BoxSpec_Uniform{Uniform: &spacesv1.UniformBounds{Low: []byte{1, 2, 3, 4}, High: []byte{5, 6, 7, 8}}}
		default:
			box.Bounds = &spacesv1.BoxSpec_Elementwise{Elementwise: &spacesv1.ElementwiseBounds{Low: []byte{0}, High: []byte{9}}}
		}
		s.Spec = &spacesv1.SpaceSpec_Box{Box: box}
	case 1:
		s.Spec = &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: g.i64(), Start: g.i64()}}
	case 2:
		s.Spec = &spacesv1.SpaceSpec_MultiBinary{MultiBinary: &spacesv1.MultiBinarySpec{}}
	case 3:
		s.Spec = &spacesv1.SpaceSpec_MultiDiscrete{MultiDiscrete: &spacesv1.MultiDiscreteSpec{Nvec: []int64{2, 3, g.i64()}}}
	case 4:
		s.Spec = &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{MinLength: 0, MaxLength: 64, Charset: g.str(8)}}
	case 5:
		d := &spacesv1.DictSpec{}
		for i := range g.r.IntN(3) {
			d.Keys = append(d.Keys, fmt.Sprintf("%s%d", g.str(4), i))
			d.Spaces = append(d.Spaces, g.specNonNil(depth-1))
		}
		s.Spec = &spacesv1.SpaceSpec_Dict{Dict: d}
	case 6:
		t := &spacesv1.TupleSpec{}
		for range g.r.IntN(3) {
			t.Spaces = append(t.Spaces, g.specNonNil(depth-1))
		}
		s.Spec = &spacesv1.SpaceSpec_Tuple{Tuple: t}
	}
	return s
}

func (g *gen) metaValue(depth int) *spacesv1.MetaValue {
	k := g.r.IntN(7)
	if depth <= 0 {
		k = g.r.IntN(5)
	}
	switch k {
	case 0:
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{Integer: g.i64()}}
	case 1:
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: g.f64()}}
	case 2:
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: g.str(10)}}
	case 3:
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bool{Bool: g.r.IntN(2) == 0}}
	case 4:
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{Bytes: []byte(g.str(6))}}
	case 5:
		l := &spacesv1.MetaList{}
		for range g.r.IntN(4) {
			l.Items = append(l.Items, g.metaValue(depth-1))
		}
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_List{List: l}}
	}
	return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Map{Map: g.metaMap(depth - 1)}}
}

func (g *gen) metaMap(depth int) *spacesv1.MetaMap {
	m := &spacesv1.MetaMap{}
	n := g.r.IntN(5)
	if n > 0 {
		m.Entries = make(map[string]*spacesv1.MetaValue, n)
	}
	for i := range n {
		m.Entries[fmt.Sprintf("%s%d", g.str(6), i)] = g.metaValue(depth)
	}
	return m
}

func (g *gen) logLevel() LogLevel { return LogLevel(1 + g.r.IntN(4)) }

// event returns a random event of kind k.
func (g *gen) event(k Kind) Event {
	sid, route := g.str(20), g.route()
	switch k {
	case KindEnvConnected:
		return &EnvConnected{SessionID: sid, Route: route, EnvID: g.str(10)}
	case KindModelConnected:
		return &ModelConnected{SessionID: sid, Route: route}
	case KindSessionStarted:
		return &SessionStarted{SessionID: sid, Route: route, EnvID: g.str(10)}
	case KindSessionEnded:
		return &SessionEnded{SessionID: sid, Route: route, Reason: g.str(30), TotalSteps: g.i64(), TotalEpisodes: g.i64()}
	case KindSessionFailed:
		return &SessionFailed{SessionID: sid, Route: route, Reason: g.str(30)}
	case KindLog:
		e := &Log{SessionID: sid, Route: route, Level: g.logLevel(), Message: g.str(40)}
		if g.r.IntN(2) == 0 {
			s := g.str(8)
			e.Source = &s
		}
		return e
	case KindEpisodeStarted:
		return &EpisodeStarted{SessionID: sid, Route: route, EpisodeID: g.str(36), EpisodeRecordID: g.str(9),
			EpisodeIndex: g.i64(), EnvIndex: g.i32(), StartedFromAutoReset: g.r.IntN(2) == 0,
			Seed: opt(g, g.i64()), TrialIndex: opt(g, g.u64())}
	case KindEpisodeCompleted:
		e := &EpisodeCompleted{SessionID: sid, Route: route, EpisodeID: g.str(36), EpisodeRecordID: g.str(9),
			EpisodeIndex: g.i64(), EnvIndex: g.i32(), StepCount: g.i64(), CumulativeReward: g.f64(),
			Terminated: g.r.IntN(2) == 0, Truncated: g.r.IntN(2) == 0, DurationMs: g.i64(),
			Success: opt(g, g.r.IntN(2) == 0), Seed: opt(g, g.i64()), TrialIndex: opt(g, g.u64()),
			PredictMs: opt(g, g.f64()), StepMs: opt(g, g.f64())}
		if g.r.IntN(3) > 0 {
			e.FinalInfo = g.metaMap(3)
		}
		return e
	case KindActionReceived:
		n := g.r.IntN(5)
		return &ActionReceived{SessionID: sid, Route: route, EpisodeID: g.str(36), EpisodeRecordID: g.str(9),
			EpisodeIDs: g.ids(n), EpisodeRecordIDs: g.ids(n), Step: g.i64(), EnvIndex: g.i32(),
			ActionSpace: g.spec(2), Action: g.leaves(), RawAction: g.leaves()}
	case KindStepCompleted:
		var rw []float64
		for range g.r.IntN(5) {
			rw = append(rw, g.f64())
		}
		e := &StepCompleted{SessionID: sid, Route: route, EpisodeID: g.str(36), EpisodeRecordID: g.str(9),
			Step: g.i64(), EnvIndex: g.i32(), Rewards: rw,
			Terminated: g.bools(len(rw)), Truncated: g.bools(len(rw)), AutoresetRoll: g.bools(len(rw)),
			PredictMs: opt(g, g.f64()), StepMs: opt(g, g.f64())}
		if g.r.IntN(3) == 0 {
			e.Infos = g.metaMap(2)
		}
		return e
	case KindObservationEmitted:
		n := g.r.IntN(5)
		e := &ObservationEmitted{SessionID: sid, Route: route, EpisodeID: g.str(36), EpisodeRecordID: g.str(9),
			EpisodeIDs: g.ids(n), EpisodeRecordIDs: g.ids(n), Step: g.i64(), EnvIndex: g.i32(),
			IsReset: g.r.IntN(2) == 0, NumEnvs: uint32(n), ObservationSpace: g.spec(2), Observation: g.leaves(),
			RawObservation: g.leaves()}
		if g.r.IntN(3) == 0 {
			e.Infos = g.metaMap(2)
		}
		return e
	case KindTelemetrySnapshot:
		s := Snapshot{Horizon: TelemetryHorizon(1 + g.r.IntN(2))}
		for range g.r.IntN(4) {
			s.Rows = append(s.Rows, TelemetryRow{Op: g.str(6), Component: g.str(6), Metric: g.str(6),
				Kind: MetricKind(1 + g.r.IntN(3)), Count: g.r.Uint64(), Avg: g.f64(), P50: g.f64(), P95: g.f64(), P99: g.f64()})
		}
		return &TelemetrySnapshot{SessionID: sid, Route: route, Snapshot: s}
	case KindRelayAdvisory:
		return &RelayAdvisory{SessionID: sid, Route: route, Leg: RelayLeg(1 + g.r.IntN(2)),
			Severity: AdvisorySeverity(1 + g.r.IntN(2)), Message: g.str(40)}
	}
	panic(fmt.Sprintf("gen: kind %v", k))
}

var allKinds = []Kind{
	KindEnvConnected, KindModelConnected, KindSessionStarted, KindSessionEnded, KindSessionFailed, KindLog,
	KindEpisodeStarted, KindEpisodeCompleted, KindActionReceived, KindStepCompleted, KindObservationEmitted,
	KindTelemetrySnapshot, KindRelayAdvisory,
}

func (g *gen) anyEvent() Event { return g.event(allKinds[g.r.IntN(len(allKinds))]) }

func (g *gen) time() time.Time {
	switch g.r.IntN(4) {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, math.MinInt64+1+g.r.Int64N(1e9)).UTC()
	}
	return time.Unix(0, g.r.Int64()).UTC()
}

// diffEvents reports the first difference between two events, treating
// proto messages with proto.Equal, floats by their bits, nil and empty
// repeated fields alike (the wire cannot tell them apart), and a nil leaf
// like an empty one. It returns "" when they are equal.
func diffEvents(a, b Event) string {
	return diffValue("event", reflect.ValueOf(a), reflect.ValueOf(b))
}

var protoMessageType = reflect.TypeFor[proto.Message]()

func diffValue(path string, a, b reflect.Value) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one is nil"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %v vs %v", path, a.Type(), b.Type())
	}
	if a.Type().Implements(protoMessageType) {
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if !proto.Equal(a.Interface().(proto.Message), b.Interface().(proto.Message)) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Interface(), b.Interface())
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Interface, reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return diffValue(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if d := diffValue(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.Type() == reflect.TypeFor[[][]byte]() && a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: leaf list nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				return fmt.Sprintf("%s: %x vs %x", path, a.Bytes(), b.Bytes())
			}
			return ""
		}
		for i := range a.Len() {
			if d := diffValue(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Float64, reflect.Float32:
		if math.Float64bits(a.Float()) != math.Float64bits(b.Float()) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Float(), b.Float())
		}
		return ""
	}
	if a.Interface() != b.Interface() {
		return fmt.Sprintf("%s: %#v vs %#v", path, a.Interface(), b.Interface())
	}
	return ""
}

// TestDiffEvents checks the comparison the round-trip tests rely on.
func TestDiffEvents(t *testing.T) {
	src := "s"
	nan1 := math.Float64frombits(0x7ff8_0000_0000_0002)
	tests := []struct {
		name string
		a, b Event
		same bool
	}{
		{"equal", &Log{Level: LogInfo, Source: &src}, &Log{Level: LogInfo, Source: &src}, true},
		{"source nil", &Log{Level: LogInfo, Source: &src}, &Log{Level: LogInfo}, false},
		{"nan bits", &StepCompleted{Rewards: []float64{math.NaN()}}, &StepCompleted{Rewards: []float64{nan1}}, false},
		{"nan same", &StepCompleted{Rewards: []float64{nan1}}, &StepCompleted{Rewards: []float64{nan1}}, true},
		{"negative zero", &StepCompleted{Rewards: []float64{0}}, &StepCompleted{Rewards: []float64{math.Copysign(0, -1)}}, false},
		{"payload nil vs empty", &ActionReceived{Action: nil}, &ActionReceived{Action: [][]byte{}}, false},
		{"leaf nil vs empty", &ActionReceived{Action: [][]byte{nil}}, &ActionReceived{Action: [][]byte{{}}}, true},
		{"leaf bytes", &ActionReceived{Action: [][]byte{{1}}}, &ActionReceived{Action: [][]byte{{2}}}, false},
		{"spec", &ActionReceived{ActionSpace: &spacesv1.SpaceSpec{}}, &ActionReceived{}, false},
		{"spec equal", &ActionReceived{ActionSpace: &spacesv1.SpaceSpec{Shape: []int64{1}}}, &ActionReceived{ActionSpace: &spacesv1.SpaceSpec{Shape: []int64{1}}}, true},
		{"kind", &SessionStarted{}, &EnvConnected{}, false},
		{"option absent vs zero", &EpisodeStarted{Seed: Some(int64(0))}, &EpisodeStarted{}, false},
		{"lane absent vs zero", &Log{Route: RuntimeEnvContext{Lane: Some(uint32(0))}}, &Log{}, false},
		{"raw nil vs empty", &ObservationEmitted{RawObservation: nil}, &ObservationEmitted{RawObservation: [][]byte{}}, false},
		{"infos", &StepCompleted{Infos: &spacesv1.MetaMap{}}, &StepCompleted{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diffEvents(tt.a, tt.b)
			if (d == "") != tt.same {
				t.Fatalf("diff = %q, want same=%v", d, tt.same)
			}
		})
	}
}
