package events

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

func metaInt(v int64) *spacesv1.MetaValue {
	return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{Integer: v}}
}

func metaList(items ...*spacesv1.MetaValue) *spacesv1.MetaValue {
	return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_List{List: &spacesv1.MetaList{Items: items}}}
}

func metaOf(kv ...any) *spacesv1.MetaMap {
	m := &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{}}
	for i := 0; i < len(kv); i += 2 {
		m.Entries[kv[i].(string)] = kv[i+1].(*spacesv1.MetaValue)
	}
	return m
}

// laneInfos is a 16-lane vector infos map as rlmesh 0.1 sends it.
func laneInfos() *spacesv1.MetaMap {
	var items []*spacesv1.MetaValue
	for i := range 16 {
		items = append(items, metaInt(int64(i*37)))
	}
	return metaOf("elapsed_steps", metaList(items...))
}

func withUnknown[M proto.Message](m M) M {
	m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	return m
}

func deepMeta(depth int) *spacesv1.MetaMap {
	m := metaOf("leaf", metaInt(1))
	for range depth {
		m = metaOf("m", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Map{Map: m}})
	}
	return m
}

// TestMetaMapMatchesProto checks the direct encoding and copy of infos
// maps against the protobuf runtime: the same bytes as a deterministic
// Marshal and a copy equal to proto.Clone that shares nothing mutable,
// and the maps they leave to the runtime.
func TestMetaMapMatchesProto(t *testing.T) {
	cases := []struct {
		name string
		m    *spacesv1.MetaMap
		fast bool // encoded and copied directly
	}{
		{"empty", &spacesv1.MetaMap{}, true},
		{"empty entries", &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{}}, true},
		{"lane vector", laneInfos(), true},
		{"every kind, sorted keys", metaOf(
			"z", metaInt(-1),
			"a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: -0.5}},
			"m", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: "héllo"}},
			"b", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bool{Bool: true}},
			"y", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{Bytes: []byte{0, 1, 2}}},
			"n", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Null{Null: &spacesv1.MetaNull{}}},
			"u", &spacesv1.MetaValue{},
			"l", metaList(metaInt(1), &spacesv1.MetaValue{}, metaList()),
			"map", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Map{Map: laneInfos()}},
		), true},
		{"zero values of set members", metaOf(
			"i", metaInt(0),
			"f", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{}},
			"t", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{}},
			"b", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bool{}},
			"nil bytes", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{}},
			"empty bytes", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{Bytes: []byte{}}},
			"", metaInt(1),
		), true},
		{"long key and text", metaOf(strings.Repeat("k", 300), &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: strings.Repeat("v", 70000)}}), true},
		{"nested to the bound", deepMeta(maxMetaDepth/2 - 1), true},
		{"nested past the bound", deepMeta(maxMetaDepth), false},
		{"unknown fields in the map", withUnknown(laneInfos()), false},
		{"unknown fields in a value", metaOf("a", withUnknown(metaInt(1))), false},
		{"unknown fields in a list", metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_List{List: withUnknown(&spacesv1.MetaList{})}}), false},
		{"key not UTF-8", metaOf("\xff", metaInt(1)), false},
		{"text not UTF-8", metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: "\xc3"}}), false},
		{"nil value", &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{"a": nil}}, false},
		{"nil list item", metaOf("a", metaList(nil)), false},
		{"nil list", metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_List{}}), false},
		{"nil map", metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Map{}}), false},
		{"nil null", metaOf("a", &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Null{}}), false},
		{"nil member", metaOf("a", &spacesv1.MetaValue{Kind: (*spacesv1.MetaValue_Integer)(nil)}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkMetaMap(t, c.m, c.fast)
		})
	}
	g := newGen(31)
	for i := range 3000 {
		m := g.metaMap(3)
		if _, ok := metaSize(m); !ok {
			// The generator makes valid maps only.
			t.Fatalf("random map %d: left to the runtime: %v", i, m)
		}
		checkMetaMap(t, m, true)
	}
}

func checkMetaMap(t *testing.T, m *spacesv1.MetaMap, fast bool) {
	t.Helper()
	n, ok := metaSize(m)
	if ok != fast {
		t.Fatalf("metaSize ok = %v, want %v", ok, fast)
	}
	c, _, cok := cloneMetaMap(m)
	if cok != fast {
		t.Fatalf("cloneMetaMap ok = %v, want %v", cok, fast)
	}
	if !fast {
		return
	}
	want, err := marshalOpts.Marshal(m)
	if err != nil {
		t.Fatalf("reference Marshal: %v", err)
	}
	got := appendMetaMap([]byte("pre"), m)
	if n != len(want) || !bytes.Equal(got[3:], want) || string(got[:3]) != "pre" {
		t.Fatalf("size %d, bytes\n %x\nwant size %d,\n %x", n, got[3:], len(want), want)
	}
	if !proto.Equal(c, proto.Clone(m)) {
		t.Fatalf("clone %v, want %v", c, m)
	}
	if w, err := marshalOpts.Marshal(c); err != nil || !bytes.Equal(w, want) {
		t.Fatalf("the clone encodes as %x (%v), want %x", w, err, want)
	}
	// The copy shares nothing the caller may change: clobber the
	// original and the copy still encodes as before.
	clobberMeta(m)
	if w, _ := marshalOpts.Marshal(c); !bytes.Equal(w, want) {
		t.Fatalf("the clone changed with the original: %x, want %x", w, want)
	}
}

func clobberMeta(m *spacesv1.MetaMap) {
	keys := slices.Collect(maps.Keys(m.Entries))
	for _, k := range keys {
		clobberValue(m.Entries[k])
	}
	if m.Entries != nil {
		m.Entries["added!"] = metaInt(7)
	}
}

func clobberValue(v *spacesv1.MetaValue) {
	switch k := v.Kind.(type) {
	case *spacesv1.MetaValue_Integer:
		k.Integer++
	case *spacesv1.MetaValue_Bytes:
		for i := range k.Bytes {
			k.Bytes[i]++
		}
	case *spacesv1.MetaValue_List:
		for _, it := range k.List.Items {
			clobberValue(it)
		}
		k.List.Items = append(k.List.Items, metaInt(5))
	case *spacesv1.MetaValue_Map:
		clobberMeta(k.Map)
	}
}

// BenchmarkMetaMap compares encoding and copying a 16-lane infos map
// directly with the protobuf runtime; copy/refill is a whole StepCompleted
// copied by a warm StepCopier, which overwrites its last infos clone.
func BenchmarkMetaMap(b *testing.B) {
	m := laneInfos()
	b.Run("encode/direct", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			n, _ := metaSize(m)
			buf = appendMetaMap(append(buf[:0], byte(n)), m)
		}
	})
	b.Run("encode/proto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalOpts.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy/direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cloneMetaMap(m)
		}
	})
	b.Run("copy/refill", func(b *testing.B) {
		// A recycled step copy overwrites its last clone.
		var c StepCopier
		ev := &StepCompleted{SessionID: "s", Infos: m}
		c.Recycle(c.Copy(ev, benchTime))
		b.ReportAllocs()
		for b.Loop() {
			c.Recycle(c.Copy(ev, benchTime))
		}
	})
	b.Run("copy/proto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			proto.Clone(m)
		}
	})
}

// TestMetaUnknownOffsets: the generated message types have the
// unknownFields slice hasUnknown reads (else every infos map would take
// the protobuf runtime's slower path), and it is the one the runtime
// fills.
func TestMetaUnknownOffsets(t *testing.T) {
	u := unknownOffsets
	if !u.mapOK || !u.valueOK || !u.listOK || !u.nullOK {
		t.Fatalf("unknownFields not found: %+v", u)
	}
	for _, c := range []struct {
		name string
		has  func() bool
	}{
		{"map", func() bool { return hasUnknown(withUnknown(&spacesv1.MetaMap{})) }},
		{"value", func() bool { return hasUnknown(withUnknown(&spacesv1.MetaValue{})) }},
		{"list", func() bool { return hasUnknown(withUnknown(&spacesv1.MetaList{})) }},
		{"null", func() bool { return hasUnknown(withUnknown(&spacesv1.MetaNull{})) }},
	} {
		if !c.has() {
			t.Errorf("%s: unknown fields set through the runtime not seen", c.name)
		}
	}
	if hasUnknown(&spacesv1.MetaValue{}) || hasUnknown(laneInfos()) {
		t.Error("unknown fields seen in messages without any")
	}
}
