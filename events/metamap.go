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
//     copied, a nil map or list staying nil; refillMetaMap overwrites
//     such a copy in place with a map of the same shape (a StepCopy's
//     next infos), allocating nothing.
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
// must be encoded by the protobuf runtime. It checks and sizes in one
// walk.
func metaSize(m *spacesv1.MetaMap) (n int, ok bool) {
	return metaMapSizeOK(m, 0)
}

// metaMapSizeOK is metaMapSize of a map metaMapOK accepts, and ok false
// for one it does not; metaValueSizeOK likewise.
func metaMapSizeOK(m *spacesv1.MetaMap, depth int) (int, bool) {
	if depth > maxMetaDepth || hasUnknown(m) {
		return 0, false
	}
	n := 0
	for k, v := range m.Entries {
		if v == nil || !utf8.ValidString(k) {
			return 0, false
		}
		vn, ok := metaValueSizeOK(v, depth+1)
		if !ok {
			return 0, false
		}
		n += 1 + protowire.SizeBytes(metaEntrySize(k, vn))
	}
	return n, true
}

func metaValueSizeOK(v *spacesv1.MetaValue, depth int) (int, bool) {
	if depth > maxMetaDepth || hasUnknown(v) {
		return 0, false
	}
	switch k := v.Kind.(type) {
	case nil:
		return 0, true
	case *spacesv1.MetaValue_Integer:
		if k == nil {
			return 0, false
		}
		return 1 + protowire.SizeVarint(uint64(k.Integer)), true
	case *spacesv1.MetaValue_Number:
		return 1 + 8, k != nil
	case *spacesv1.MetaValue_Text:
		if k == nil || !utf8.ValidString(k.Text) {
			return 0, false
		}
		return 1 + protowire.SizeBytes(len(k.Text)), true
	case *spacesv1.MetaValue_Bool:
		return 1 + 1, k != nil
	case *spacesv1.MetaValue_Bytes:
		if k == nil {
			return 0, false
		}
		return 1 + protowire.SizeBytes(len(k.Bytes)), true
	case *spacesv1.MetaValue_List:
		if k == nil || k.List == nil || hasUnknown(k.List) {
			return 0, false
		}
		n := 0
		for _, it := range k.List.Items {
			if it == nil {
				return 0, false
			}
			in, ok := metaValueSizeOK(it, depth+1)
			if !ok {
				return 0, false
			}
			n += 1 + protowire.SizeBytes(in)
		}
		return 1 + protowire.SizeBytes(n), true
	case *spacesv1.MetaValue_Map:
		if k == nil || k.Map == nil {
			return 0, false
		}
		n, ok := metaMapSizeOK(k.Map, depth+1)
		return 1 + protowire.SizeBytes(n), ok
	case *spacesv1.MetaValue_Null:
		return 1 + protowire.SizeBytes(0), k != nil && k.Null != nil && !hasUnknown(k.Null)
	}
	return 0, false
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

// appendMetaMap appends the body of m, which metaSize accepted. Each
// list's and map's size is computed once, where its length is written.
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
	var small [8]string
	keys := small[:0]
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
	vn, inner := metaValueSizes(v)
	b = append(b, tag(metaMapEntries, wtBytes))
	b = appendUvarint(b, uint64(metaEntrySize(k, vn)))
	b = append(b, tag(metaEntryKey, wtBytes))
	b = append(appendUvarint(b, uint64(len(k))), k...)
	b = append(b, tag(metaEntryValue, wtBytes))
	b = appendUvarint(b, uint64(vn))
	return appendMetaValue(b, v, inner)
}

// metaValueSizes returns the size of the body of v and, when v holds a
// list or a map, the size of that list's or map's body.
func metaValueSizes(v *spacesv1.MetaValue) (n, inner int) {
	switch k := v.Kind.(type) {
	case *spacesv1.MetaValue_List:
		inner = metaListSize(k.List)
	case *spacesv1.MetaValue_Map:
		inner = metaMapSize(k.Map)
	default:
		return metaValueSize(v), 0
	}
	return 1 + protowire.SizeBytes(inner), inner
}

// appendMetaValue appends the body of v; inner is the size of its list's
// or map's body (metaValueSizes).
func appendMetaValue(b []byte, v *spacesv1.MetaValue, inner int) []byte {
	switch k := v.Kind.(type) {
	case *spacesv1.MetaValue_Integer:
		b = append(b, tag(metaValueInteger, wtVarint))
		b = appendUvarint(b, uint64(k.Integer))
	case *spacesv1.MetaValue_Number:
		b = append(b, tag(metaValueNumber, wtFixed64))
		b = protowire.AppendFixed64(b, math.Float64bits(k.Number))
	case *spacesv1.MetaValue_Text:
		b = append(b, tag(metaValueText, wtBytes))
		b = append(appendUvarint(b, uint64(len(k.Text))), k.Text...)
	case *spacesv1.MetaValue_Bool:
		b = append(b, tag(metaValueBool, wtVarint))
		b = appendUvarint(b, protowire.EncodeBool(k.Bool))
	case *spacesv1.MetaValue_Bytes:
		b = append(b, tag(metaValueBytes, wtBytes))
		b = append(appendUvarint(b, uint64(len(k.Bytes))), k.Bytes...)
	case *spacesv1.MetaValue_List:
		b = append(b, tag(metaValueList, wtBytes))
		b = appendUvarint(b, uint64(inner))
		for _, it := range k.List.Items {
			in, ii := metaValueSizes(it)
			b = append(b, tag(metaListItems, wtBytes))
			b = appendUvarint(b, uint64(in))
			b = appendMetaValue(b, it, ii)
		}
	case *spacesv1.MetaValue_Map:
		b = append(b, tag(metaValueMap, wtBytes))
		b = appendUvarint(b, uint64(inner))
		b = appendMetaMap(b, k.Map)
	case *spacesv1.MetaValue_Null:
		b = append(b, tag(metaValueNull, wtBytes))
		b = appendUvarint(b, 0)
	}
	return b
}

// cloneMetaMap returns a deep copy of m (not nil) and an estimate of its
// memory (its messages, oneof members, map entries, item lists and
// bytes), or ok false when m must be copied by the protobuf runtime.
func cloneMetaMap(m *spacesv1.MetaMap) (c *spacesv1.MetaMap, mem int, ok bool) {
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
