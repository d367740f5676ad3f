package events

import (
	"math"
	"reflect"
	"slices"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/runtime/protoimpl"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Infos maps (spacesv1.MetaMap) without reflection
//
// rlmesh 0.1 sends an infos map with every StepCompleted and with reset
// observations; a recorder encodes each for its log and copies it for its
// assembly. Through the protobuf runtime's reflection both cost more than
// the rest of the step event together (a 16-lane vector layout is 36
// messages), so metaSize, appendMetaMap and cloneMetaMap walk the three
// message types directly:
//
//   - metaSize and appendMetaMap write exactly the bytes of
//     proto.MarshalOptions{Deterministic: true}: fields in number order,
//     map entries sorted by key with key and value always present, a set
//     oneof member always written (zero values included), an unset one
//     not at all.
//   - cloneMetaMap returns what proto.Clone returns: a deep copy, bytes
//     copied, a nil map or list staying nil.
//
// A map they do not walk returns ok false, and the caller takes the
// protobuf runtime's path, which behaves as it always did: one with
// unknown fields (kept by the runtime), a string that is not UTF-8 (an
// error from Marshal), a nil map value, list item or oneof member (which
// the runtime turns into empty messages), or one nested deeper than
// maxMetaDepth.
// TestMetaMapMatchesProto compares them with the runtime.

// maxMetaDepth bounds the nesting metaSize and cloneMetaMap walk.
const maxMetaDepth = 32

// Wire field numbers of spaces.proto's MetaValue, MetaList and MetaMap.
// They are the schema's: do not change.
const (
	metaValueInteger = 1
	metaValueNumber  = 2
	metaValueText    = 3
	metaValueBool    = 4
	metaValueBytes   = 5
	metaValueList    = 6
	metaValueMap     = 7
	metaValueNull    = 8
	metaListItems    = 1
	metaMapEntries   = 1
	metaEntryKey     = 1
	metaEntryValue   = 2
)

// metaSize returns the encoded size of m (not nil), or ok false when it
// must be encoded by the protobuf runtime.
func metaSize(m *spacesv1.MetaMap) (n int, ok bool) {
	if !metaMapOK(m, 0) {
		return 0, false
	}
	return metaMapSize(m), true
}

// hasUnknown reports whether m holds unknown fields. It reads the
// generated struct's unknownFields slice at an offset found once by
// reflection (unknownAt): through ProtoReflect().GetUnknown() the check
// cost more than encoding a 16-lane infos map. Should the generated code
// ever lack the field, every message counts as having unknown fields and
// the protobuf runtime does the work.
func hasUnknown[M *spacesv1.MetaMap | *spacesv1.MetaValue | *spacesv1.MetaList | *spacesv1.MetaNull](m M) bool {
	var off uintptr
	var ok bool
	switch any(m).(type) {
	case *spacesv1.MetaMap:
		off, ok = unknownOffsets.mapOff, unknownOffsets.mapOK
	case *spacesv1.MetaValue:
		off, ok = unknownOffsets.valueOff, unknownOffsets.valueOK
	case *spacesv1.MetaList:
		off, ok = unknownOffsets.listOff, unknownOffsets.listOK
	case *spacesv1.MetaNull:
		off, ok = unknownOffsets.nullOff, unknownOffsets.nullOK
	}
	if !ok {
		return true
	}
	return len(*(*[]byte)(unsafe.Add(unsafe.Pointer(m), off))) != 0
}

// unknownOffsets are the offsets of the four message types' unknownFields.
var unknownOffsets = struct {
	mapOff, valueOff, listOff, nullOff uintptr
	mapOK, valueOK, listOK, nullOK     bool
}{}

func init() {
	u := &unknownOffsets
	u.mapOff, u.mapOK = unknownAt(reflect.TypeFor[spacesv1.MetaMap]())
	u.valueOff, u.valueOK = unknownAt(reflect.TypeFor[spacesv1.MetaValue]())
	u.listOff, u.listOK = unknownAt(reflect.TypeFor[spacesv1.MetaList]())
	u.nullOff, u.nullOK = unknownAt(reflect.TypeFor[spacesv1.MetaNull]())
}

// unknownAt returns the offset of t's unknownFields field, which the
// protobuf generator declares as protoimpl.UnknownFields ([]byte).
func unknownAt(t reflect.Type) (uintptr, bool) {
	f, ok := t.FieldByName("unknownFields")
	if !ok || f.Type != reflect.TypeFor[protoimpl.UnknownFields]() || f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Uint8 {
		return 0, false
	}
	return f.Offset, true
}

// metaMapOK reports whether m is one the functions below walk: without
// unknown fields, strings that are not UTF-8 or a nil map value, list
// item or oneof member (the runtime encodes and clones those as empty
// messages), nested at most maxMetaDepth deep.
func metaMapOK(m *spacesv1.MetaMap, depth int) bool {
	if depth > maxMetaDepth || hasUnknown(m) {
		return false
	}
	for k, v := range m.Entries {
		if v == nil || !utf8.ValidString(k) || !metaValueOK(v, depth+1) {
			return false
		}
	}
	return true
}

func metaValueOK(v *spacesv1.MetaValue, depth int) bool {
	if depth > maxMetaDepth || hasUnknown(v) {
		return false
	}
	switch k := v.Kind.(type) {
	case nil:
		return true
	case *spacesv1.MetaValue_Integer:
		return k != nil
	case *spacesv1.MetaValue_Number:
		return k != nil
	case *spacesv1.MetaValue_Text:
		return k != nil && utf8.ValidString(k.Text)
	case *spacesv1.MetaValue_Bool:
		return k != nil
	case *spacesv1.MetaValue_Bytes:
		return k != nil
	case *spacesv1.MetaValue_List:
		if k == nil || k.List == nil || hasUnknown(k.List) {
			return false
		}
		for _, it := range k.List.Items {
			if it == nil || !metaValueOK(it, depth+1) {
				return false
			}
		}
		return true
	case *spacesv1.MetaValue_Map:
		return k != nil && k.Map != nil && metaMapOK(k.Map, depth+1)
	case *spacesv1.MetaValue_Null:
		return k != nil && k.Null != nil && !hasUnknown(k.Null)
	}
	return false
}

// metaMapSize is the size of the body of m, which metaMapOK accepted;
// metaValueSize and metaListSize likewise.
func metaMapSize(m *spacesv1.MetaMap) int {
	n := 0
	for k, v := range m.Entries {
		n += 1 + protowire.SizeBytes(metaEntrySize(k, metaValueSize(v)))
	}
	return n
}

func metaEntrySize(k string, vn int) int {
	return 1 + protowire.SizeBytes(len(k)) + 1 + protowire.SizeBytes(vn)
}

func metaValueSize(v *spacesv1.MetaValue) int {
	switch k := v.Kind.(type) {
	case *spacesv1.MetaValue_Integer:
		return 1 + protowire.SizeVarint(uint64(k.Integer))
	case *spacesv1.MetaValue_Number:
		return 1 + 8
	case *spacesv1.MetaValue_Text:
		return 1 + protowire.SizeBytes(len(k.Text))
	case *spacesv1.MetaValue_Bool:
		return 1 + 1
	case *spacesv1.MetaValue_Bytes:
		return 1 + protowire.SizeBytes(len(k.Bytes))
	case *spacesv1.MetaValue_List:
		return 1 + protowire.SizeBytes(metaListSize(k.List))
	case *spacesv1.MetaValue_Map:
		return 1 + protowire.SizeBytes(metaMapSize(k.Map))
	case *spacesv1.MetaValue_Null:
		return 1 + protowire.SizeBytes(0)
	}
	return 0
}

func metaListSize(l *spacesv1.MetaList) int {
	n := 0
	for _, it := range l.Items {
		n += 1 + protowire.SizeBytes(metaValueSize(it))
	}
	return n
}

// appendMetaMap appends the body of m, which metaSize accepted.
func appendMetaMap(b []byte, m *spacesv1.MetaMap) []byte {
	switch len(m.Entries) {
	case 0:
		return b
	case 1:
		for k, v := range m.Entries {
			b = appendMetaEntry(b, k, v)
		}
		return b
	}
	keys := make([]string, 0, len(m.Entries))
	for k := range m.Entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendMetaEntry(b, k, m.Entries[k])
	}
	return b
}

func appendMetaEntry(b []byte, k string, v *spacesv1.MetaValue) []byte {
	vn := metaValueSize(v)
	b = protowire.AppendTag(b, metaMapEntries, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(metaEntrySize(k, vn)))
	b = protowire.AppendTag(b, metaEntryKey, protowire.BytesType)
	b = protowire.AppendString(b, k)
	b = protowire.AppendTag(b, metaEntryValue, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(vn))
	return appendMetaValue(b, v)
}

// appendMetaValue appends the body of v.
func appendMetaValue(b []byte, v *spacesv1.MetaValue) []byte {
	switch k := v.Kind.(type) {
	case *spacesv1.MetaValue_Integer:
		b = protowire.AppendTag(b, metaValueInteger, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(k.Integer))
	case *spacesv1.MetaValue_Number:
		b = protowire.AppendTag(b, metaValueNumber, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(k.Number))
	case *spacesv1.MetaValue_Text:
		b = protowire.AppendTag(b, metaValueText, protowire.BytesType)
		b = protowire.AppendString(b, k.Text)
	case *spacesv1.MetaValue_Bool:
		b = protowire.AppendTag(b, metaValueBool, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(k.Bool))
	case *spacesv1.MetaValue_Bytes:
		b = protowire.AppendTag(b, metaValueBytes, protowire.BytesType)
		b = protowire.AppendBytes(b, k.Bytes)
	case *spacesv1.MetaValue_List:
		n := metaListSize(k.List)
		b = protowire.AppendTag(b, metaValueList, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(n))
		for _, it := range k.List.Items {
			in := metaValueSize(it)
			b = protowire.AppendTag(b, metaListItems, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(in))
			b = appendMetaValue(b, it)
		}
	case *spacesv1.MetaValue_Map:
		n := metaMapSize(k.Map)
		b = protowire.AppendTag(b, metaValueMap, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(n))
		b = appendMetaMap(b, k.Map)
	case *spacesv1.MetaValue_Null:
		b = protowire.AppendTag(b, metaValueNull, protowire.BytesType)
		b = protowire.AppendVarint(b, 0)
	}
	return b
}

// cloneMetaMap returns a deep copy of m (not nil), or ok false when it
// must be copied by the protobuf runtime.
func cloneMetaMap(m *spacesv1.MetaMap) (*spacesv1.MetaMap, bool) {
	c, _, ok := cloneMetaMapMem(m)
	return c, ok
}

// cloneMetaMapMem is cloneMetaMap, and estimates the memory of the copy:
// its messages, oneof members, map entries, item lists and bytes.
func cloneMetaMapMem(m *spacesv1.MetaMap) (c *spacesv1.MetaMap, mem int, ok bool) {
	if !metaMapOK(m, 0) {
		return nil, 0, false
	}
	c = cloneMap(m, &mem)
	return c, mem, true
}

// Memory estimates of cloneMap's allocations.
const (
	memMap   = int(unsafe.Sizeof(spacesv1.MetaMap{}))
	memValue = int(unsafe.Sizeof(spacesv1.MetaValue{}))
	memList  = int(unsafe.Sizeof(spacesv1.MetaList{}))
	// memEntry is a map entry's key header, value pointer and share of
	// the map's control words; memMember a oneof member.
	memEntry  = 16 + 8 + 8
	memMember = 16
)

func cloneMap(m *spacesv1.MetaMap, mem *int) *spacesv1.MetaMap {
	c := &spacesv1.MetaMap{}
	*mem += memMap
	if len(m.Entries) == 0 {
		return c
	}
	c.Entries = make(map[string]*spacesv1.MetaValue, len(m.Entries))
	for k, v := range m.Entries {
		c.Entries[k] = cloneValue(v, nil, mem)
		*mem += memEntry + memValue
	}
	return c
}

// cloneValue copies v into into (a new value when nil).
func cloneValue(v *spacesv1.MetaValue, into *spacesv1.MetaValue, mem *int) *spacesv1.MetaValue {
	if into == nil {
		into = &spacesv1.MetaValue{}
	}
	*mem += memMember
	switch k := v.Kind.(type) {
	case *spacesv1.MetaValue_Integer:
		into.Kind = &spacesv1.MetaValue_Integer{Integer: k.Integer}
	case *spacesv1.MetaValue_Number:
		into.Kind = &spacesv1.MetaValue_Number{Number: k.Number}
	case *spacesv1.MetaValue_Text:
		into.Kind = &spacesv1.MetaValue_Text{Text: k.Text}
	case *spacesv1.MetaValue_Bool:
		into.Kind = &spacesv1.MetaValue_Bool{Bool: k.Bool}
	case *spacesv1.MetaValue_Bytes:
		var bs []byte
		if k.Bytes != nil {
			bs = append([]byte{}, k.Bytes...)
			*mem += cap(bs)
		}
		into.Kind = &spacesv1.MetaValue_Bytes{Bytes: bs}
	case *spacesv1.MetaValue_List:
		into.Kind = &spacesv1.MetaValue_List{List: cloneList(k.List, mem)}
	case *spacesv1.MetaValue_Map:
		into.Kind = &spacesv1.MetaValue_Map{Map: cloneMap(k.Map, mem)}
	case *spacesv1.MetaValue_Null:
		into.Kind = &spacesv1.MetaValue_Null{Null: &spacesv1.MetaNull{}}
	}
	return into
}

// cloneList copies a list, its items in one allocation (and, for a list
// of integers, the usual vector layout of per-lane infos, their oneof
// members in one more).
func cloneList(l *spacesv1.MetaList, mem *int) *spacesv1.MetaList {
	c := &spacesv1.MetaList{}
	*mem += memList
	if len(l.Items) == 0 {
		return c
	}
	c.Items = make([]*spacesv1.MetaValue, len(l.Items))
	vals := make([]spacesv1.MetaValue, len(l.Items))
	*mem += len(l.Items) * (8 + memValue)
	ints := 0
	for _, it := range l.Items {
		if _, ok := it.Kind.(*spacesv1.MetaValue_Integer); ok {
			ints++
		}
	}
	var members []spacesv1.MetaValue_Integer
	if ints > 0 {
		members = make([]spacesv1.MetaValue_Integer, 0, ints)
	}
	for i, it := range l.Items {
		if k, ok := it.Kind.(*spacesv1.MetaValue_Integer); ok {
			members = append(members, spacesv1.MetaValue_Integer{Integer: k.Integer})
			vals[i].Kind = &members[len(members)-1]
			*mem += 8
		} else {
			cloneValue(it, &vals[i], mem)
		}
		c.Items[i] = &vals[i]
	}
	return c
}

// refillMetaMap overwrites dst, a clone cloneMap made (and only its
// copy's), with src when src is one cloneMetaMap clones and has dst's
// shape: the same keys, a list of the same length where dst has one, a
// map where dst has one. The result is then what cloneMetaMap(src)
// returns. It returns false when src does not fit (dst is then partly
// overwritten and must be cloned anew). The runtime sends a route's infos
// in one shape (a vector env's per-lane lists), so a copier that keeps its
// last clone makes it again without allocating.
func refillMetaMap(dst, src *spacesv1.MetaMap) bool {
	return refillMap(dst, src, 0)
}

func refillMap(dst, src *spacesv1.MetaMap, depth int) bool {
	if depth > maxMetaDepth || hasUnknown(src) || len(dst.Entries) != len(src.Entries) {
		return false
	}
	for k, v := range src.Entries {
		d, ok := dst.Entries[k]
		if !ok || v == nil || !utf8.ValidString(k) || !refillValue(d, v, depth+1) {
			return false
		}
	}
	return true
}

// refillValue overwrites dst with src (see refillMetaMap). A scalar of
// another kind than dst's gets a new oneof member.
func refillValue(dst, src *spacesv1.MetaValue, depth int) bool {
	if depth > maxMetaDepth || hasUnknown(src) {
		return false
	}
	switch k := src.Kind.(type) {
	case nil:
		dst.Kind = nil
	case *spacesv1.MetaValue_Integer:
		if k == nil {
			return false
		}
		if d, ok := dst.Kind.(*spacesv1.MetaValue_Integer); ok {
			d.Integer = k.Integer
		} else {
			dst.Kind = &spacesv1.MetaValue_Integer{Integer: k.Integer}
		}
	case *spacesv1.MetaValue_Number:
		if k == nil {
			return false
		}
		if d, ok := dst.Kind.(*spacesv1.MetaValue_Number); ok {
			d.Number = k.Number
		} else {
			dst.Kind = &spacesv1.MetaValue_Number{Number: k.Number}
		}
	case *spacesv1.MetaValue_Text:
		if k == nil || !utf8.ValidString(k.Text) {
			return false
		}
		if d, ok := dst.Kind.(*spacesv1.MetaValue_Text); ok {
			d.Text = k.Text
		} else {
			dst.Kind = &spacesv1.MetaValue_Text{Text: k.Text}
		}
	case *spacesv1.MetaValue_Bool:
		if k == nil {
			return false
		}
		if d, ok := dst.Kind.(*spacesv1.MetaValue_Bool); ok {
			d.Bool = k.Bool
		} else {
			dst.Kind = &spacesv1.MetaValue_Bool{Bool: k.Bool}
		}
	case *spacesv1.MetaValue_Bytes:
		if k == nil {
			return false
		}
		d, ok := dst.Kind.(*spacesv1.MetaValue_Bytes)
		if !ok {
			d = &spacesv1.MetaValue_Bytes{}
			dst.Kind = d
		}
		switch {
		case k.Bytes == nil:
			d.Bytes = nil
		case d.Bytes == nil:
			d.Bytes = append([]byte{}, k.Bytes...)
		default:
			d.Bytes = append(d.Bytes[:0], k.Bytes...)
		}
	case *spacesv1.MetaValue_List:
		d, ok := dst.Kind.(*spacesv1.MetaValue_List)
		if k == nil || k.List == nil || !ok || d.List == nil || hasUnknown(k.List) || len(k.List.Items) != len(d.List.Items) {
			return false
		}
		for i, it := range k.List.Items {
			if it == nil || !refillValue(d.List.Items[i], it, depth+1) {
				return false
			}
		}
	case *spacesv1.MetaValue_Map:
		d, ok := dst.Kind.(*spacesv1.MetaValue_Map)
		if k == nil || k.Map == nil || !ok || d.Map == nil || !refillMap(d.Map, k.Map, depth+1) {
			return false
		}
	case *spacesv1.MetaValue_Null:
		if k == nil || k.Null == nil || hasUnknown(k.Null) {
			return false
		}
		if _, ok := dst.Kind.(*spacesv1.MetaValue_Null); !ok {
			dst.Kind = &spacesv1.MetaValue_Null{Null: &spacesv1.MetaNull{}}
		}
	default:
		return false
	}
	return true
}
