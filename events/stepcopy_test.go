package events

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// nilDiff reports the first slice or pointer that is nil in one event and
// not in the other (diffEvents treats nil and empty alike).
func nilDiff(path string, a, b reflect.Value) string {
	switch a.Kind() {
	case reflect.Interface, reflect.Pointer:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.IsNil() || a.Type().Elem().Kind() != reflect.Struct || a.Type().Implements(protoMessageType) {
			return ""
		}
		return nilDiff(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if d := nilDiff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.Type().Elem().Kind() == reflect.Slice {
			for i := range min(a.Len(), b.Len()) {
				if d := nilDiff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
					return d
				}
			}
		}
	}
	return ""
}

// TestStepCopyMatchesDecode checks that a StepCopier's copy of every
// generated step event, through recycled copies, equals what Decode returns
// for its AppendMarshal bytes, nil and empty alike, with its time; that it
// shares no memory with the event; that other kinds are not copied; and
// that an unchanged spec pointer copies to the same spec.
func TestStepCopyMatchesDecode(t *testing.T) {
	n := 6000
	if testing.Short() {
		n = 1200
	}
	g := newGen(21)
	var c StepCopier
	var d Decoder
	for i := range n {
		k := allKinds[i%len(allKinds)]
		ev, tm := g.event(k), g.time()
		b, err := AppendMarshal(nil, ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: %v", i, k, err)
		}
		want, wantAt, err := d.Decode(b)
		if err != nil {
			t.Fatalf("#%d %v: %v", i, k, err)
		}
		x := c.Copy(ev, tm)
		if k != KindActionReceived && k != KindStepCompleted && k != KindObservationEmitted {
			if x != nil {
				t.Fatalf("#%d: copied a %v", i, k)
			}
			continue
		}
		if x == nil {
			t.Fatalf("#%d: no copy of a %v", i, k)
		}
		if df := diffEvents(want, x.Event); df != "" {
			t.Fatalf("#%d %v: %s", i, k, df)
		}
		if df := nilDiff("event", reflect.ValueOf(want), reflect.ValueOf(x.Event)); df != "" {
			t.Fatalf("#%d %v: %s", i, k, df)
		}
		if x.At != wantAt {
			t.Fatalf("#%d %v: time %v, want %v", i, k, x.At, wantAt)
		}
		var leaves [][]byte
		switch e := x.Event.(type) {
		case *ActionReceived:
			leaves = e.Action
		case *ObservationEmitted:
			leaves = e.Observation
		}
		for j, l := range leaves {
			if cap(l) != len(l) {
				t.Fatalf("#%d %v: leaf %d has capacity %d beyond its %d bytes", i, k, j, cap(l), len(l))
			}
		}
		// Scribble over the event's payload: the copy must not change.
		switch e := ev.(type) {
		case *ActionReceived:
			scribble(e.Action)
		case *ObservationEmitted:
			scribble(e.Observation)
		case *StepCompleted:
			for j := range e.Rewards {
				e.Rewards[j]++
			}
		}
		if df := diffEvents(want, x.Event); df != "" {
			t.Fatalf("#%d %v: the copy aliases the event: %s", i, k, df)
		}
		c.Recycle(x)
	}

	act := cartpoleSteps()[0].(*ActionReceived)
	x1, x2 := c.Copy(act, time.Time{}), c.Copy(act, time.Time{})
	s1, s2 := x1.Event.(*ActionReceived).ActionSpace, x2.Event.(*ActionReceived).ActionSpace
	if s1 != s2 || s1 == act.ActionSpace {
		t.Fatalf("spec copies: %p and %p of %p, want one clone", s1, s2, act.ActionSpace)
	}
}

func scribble(leaves [][]byte) {
	for _, l := range leaves {
		for j := range l {
			l[j] ^= 0x5a
		}
	}
}

// TestStepCopyAllocations checks that a warm StepCopier copies a cartpole
// step without allocating.
func TestStepCopyAllocations(t *testing.T) {
	var c StepCopier
	steps := cartpoleSteps()
	step := func() {
		for _, ev := range steps {
			c.Recycle(c.Copy(ev, benchTime))
		}
	}
	step()
	if a := testing.AllocsPerRun(100, step); a != 0 {
		t.Fatalf("%v allocations per cartpole step, want 0", a)
	}
}

// TestStepCopyKeepsIDs checks that copies share an unchanged id list and
// get a new one when an id changed, however the caller built its lists.
func TestStepCopyKeepsIDs(t *testing.T) {
	steps := cartpoleSteps()
	act, obs := steps[0].(*ActionReceived), steps[2].(*ObservationEmitted)
	var c StepCopier
	a1 := c.Copy(act, benchTime).Event.(*ActionReceived)
	same := *obs
	same.EpisodeRecordIDs = slices.Clone(obs.EpisodeRecordIDs) // equal, in another array
	o1 := c.Copy(&same, benchTime).Event.(*ObservationEmitted)
	if &o1.EpisodeRecordIDs[0] != &a1.EpisodeRecordIDs[0] || &o1.EpisodeIDs[0] != &a1.EpisodeIDs[0] {
		t.Fatal("an unchanged id list was copied anew")
	}
	if &a1.EpisodeRecordIDs[0] == &act.EpisodeRecordIDs[0] {
		t.Fatal("the copy holds the caller's list")
	}
	next := *act
	next.EpisodeRecordIDs = slices.Clone(act.EpisodeRecordIDs)
	next.EpisodeRecordIDs[5] = "ep-changed"
	a2 := c.Copy(&next, benchTime).Event.(*ActionReceived)
	if &a2.EpisodeRecordIDs[0] == &a1.EpisodeRecordIDs[0] || !slices.Equal(a2.EpisodeRecordIDs, next.EpisodeRecordIDs) {
		t.Fatalf("changed list copied as %q, want %q in a new list", a2.EpisodeRecordIDs, next.EpisodeRecordIDs)
	}
	if !slices.Equal(a1.EpisodeRecordIDs, act.EpisodeRecordIDs) {
		t.Fatal("a later copy changed an earlier one's list")
	}
	next.EpisodeRecordIDs[5] = "scribbled"
	if a2.EpisodeRecordIDs[5] != "ep-changed" {
		t.Fatal("the copy's list aliases the caller's")
	}
}

// TestStepCopyRefillsInfos checks the copies of infos maps that a
// recycled copy overwrites in place: after a copy of one map, the copy of
// the next equals proto.Clone of it, whatever its shape, and shares
// nothing the caller may change; a map of the same shape is copied into
// the same clone, and a warm copier copies a 16-lane infos without
// allocating.
func TestStepCopyRefillsInfos(t *testing.T) {
	var c StepCopier
	copyInfos := func(m *spacesv1.MetaMap) *spacesv1.MetaMap {
		x := c.Copy(&StepCompleted{SessionID: "s", Infos: m}, benchTime)
		c.Recycle(x)
		return x.Event.(*StepCompleted).Infos
	}
	refilled := 0
	check := func(t *testing.T, prev, m *spacesv1.MetaMap) {
		t.Helper()
		before := copyInfos(prev)
		want := proto.Clone(m)
		wire, err := marshalOpts.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got := copyInfos(m)
		if got == before {
			refilled++
		}
		if !proto.Equal(got, want) {
			t.Fatalf("copy %v, want %v", got, want)
		}
		if !metaMapOK(m, 0) {
			return // (clobberMeta walks only such maps)
		}
		clobberMeta(m)
		if w, _ := marshalOpts.Marshal(got); !bytes.Equal(w, wire) {
			t.Fatalf("the copy changed with the original: %x, want %x", w, wire)
		}
	}
	// Every case of TestMetaMapMatchesProto after a map of each shape:
	// those the copier walks refill or replace the clone, the others take
	// the protobuf runtime's path.
	shapes := []func() *spacesv1.MetaMap{
		laneInfos,
		func() *spacesv1.MetaMap { return metaOf("a", metaInt(1)) },
		func() *spacesv1.MetaMap {
			return metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{}}, "t", metaList(metaInt(1), &spacesv1.MetaValue{}))
		},
	}
	for _, tc := range []struct {
		name string
		m    func() *spacesv1.MetaMap
	}{
		{"lane vector", laneInfos},
		{"lane vector, other values", func() *spacesv1.MetaMap {
			m := laneInfos()
			m.Entries["elapsed_steps"].GetList().Items[3] = &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: "x"}}
			return m
		}},
		{"shorter list", func() *spacesv1.MetaMap { return metaOf("elapsed_steps", metaList(metaInt(1))) }},
		{"other key", func() *spacesv1.MetaMap { return metaOf("resets", metaList(metaInt(1))) }},
		{"empty", func() *spacesv1.MetaMap { return &spacesv1.MetaMap{} }},
		{"scalar kinds change", func() *spacesv1.MetaMap {
			return metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{Bytes: []byte{}}},
				"t", metaList(&spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Null{Null: &spacesv1.MetaNull{}}}, metaInt(2)))
		}},
		{"nil bytes after bytes", func() *spacesv1.MetaMap {
			return metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{}}, "t", metaList(metaInt(1), &spacesv1.MetaValue{}))
		}},
		{"unknown fields in a value", func() *spacesv1.MetaMap { return metaOf("a", withUnknown(metaInt(1))) }},
		{"unknown fields in a list item", func() *spacesv1.MetaMap {
			return metaOf("elapsed_steps", metaList(withUnknown(metaInt(1))))
		}},
		{"nil list item", func() *spacesv1.MetaMap { return metaOf("elapsed_steps", metaList(nil)) }},
		{"nil member", func() *spacesv1.MetaMap {
			return metaOf("a", &spacesv1.MetaValue{Kind: (*spacesv1.MetaValue_Integer)(nil)})
		}},
	} {
		for i, shape := range shapes {
			t.Run(fmt.Sprintf("%s after shape %d", tc.name, i), func(t *testing.T) {
				check(t, shape(), tc.m())
			})
		}
	}

	t.Run("random maps of one shape", func(t *testing.T) {
		g := newGen(41)
		refilled = 0
		for range 2000 {
			m := g.metaMap(3)
			next := proto.Clone(m).(*spacesv1.MetaMap)
			rerollMeta(g, next)
			check(t, m, next)
		}
		if refilled < 1900 {
			t.Fatalf("%d of 2000 maps of an unchanged shape refilled the clone", refilled)
		}
	})

	t.Run("in place", func(t *testing.T) {
		m := laneInfos()
		first := copyInfos(m)
		m.Entries["elapsed_steps"].GetList().Items[0].GetKind().(*spacesv1.MetaValue_Integer).Integer = 99
		if got := copyInfos(m); got != first || !proto.Equal(got, m) {
			t.Fatalf("copy %p %v, want %p refilled as %v", got, got, first, m)
		}
		if a := testing.AllocsPerRun(100, func() { copyInfos(m) }); a != 0 {
			t.Fatalf("%v allocations per warm infos copy, want 0", a)
		}
	})
}

// rerollMeta gives every scalar of m a new random value, of another kind
// now and then, keeping its keys, lists and maps.
func rerollMeta(g *gen, m *spacesv1.MetaMap) {
	for _, v := range m.Entries {
		rerollValue(g, v)
	}
}

func rerollValue(g *gen, v *spacesv1.MetaValue) {
	switch k := v.Kind.(type) {
	case *spacesv1.MetaValue_List:
		for _, it := range k.List.Items {
			rerollValue(g, it)
		}
	case *spacesv1.MetaValue_Map:
		rerollMeta(g, k.Map)
	default:
		if g.r.IntN(8) == 0 {
			*v = *g.metaValue(0)
			return
		}
		switch k := k.(type) {
		case *spacesv1.MetaValue_Integer:
			k.Integer = g.i64()
		case *spacesv1.MetaValue_Number:
			k.Number = g.f64()
		case *spacesv1.MetaValue_Text:
			k.Text = g.str(10)
		case *spacesv1.MetaValue_Bool:
			k.Bool = !k.Bool
		case *spacesv1.MetaValue_Bytes:
			k.Bytes = []byte(g.str(6))
		}
	}
}
