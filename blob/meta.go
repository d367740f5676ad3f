package blob

import (
	"encoding/base64"
	"slices"
	"strconv"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Success derives an episode's success from its final_info (a MetaMap, the
// runtime's metadata) as the runtime does: key "is_success", else
// "success"; a bool as is, an integer != 0, a number != 0.0. ok is false
// when neither key holds such a value.
func Success(info *spacesv1.MetaMap) (value, ok bool) {
	if info == nil {
		return false, false
	}
	for _, key := range []string{"is_success", "success"} {
		v, found := info.GetEntries()[key]
		if !found {
			continue
		}
		switch k := v.GetKind().(type) {
		case *spacesv1.MetaValue_Bool:
			return k.Bool, true
		case *spacesv1.MetaValue_Integer:
			return k.Integer != 0, true
		case *spacesv1.MetaValue_Number:
			return k.Number != 0, true
		}
	}
	return false, false
}

// MetaJSON renders a MetaMap (the runtime's metadata, such as an
// episode's final_info) as JSON text: an object with keys sorted, integers and numbers as JSON numbers (NaN and
// infinities as the strings "NaN", "Infinity", "-Infinity"), text as a
// string, bytes as a base64 string, lists as arrays, maps as objects, and
// null (rlmesh 0.1's MetaValue.null, field 8, or a value with no kind,
// which is how 0.1 emitters encode null) as null. A nil map renders as "" (a null final_info column).
func MetaJSON(m *spacesv1.MetaMap) string {
	if m == nil {
		return ""
	}
	return string(appendMetaMap(nil, m))
}

// AppendMetaJSON appends MetaJSON(m) to dst (nothing for a nil m) and
// returns the extended slice.
func AppendMetaJSON(dst []byte, m *spacesv1.MetaMap) []byte {
	if m == nil {
		return dst
	}
	return appendMetaMap(dst, m)
}

func appendMetaMap(dst []byte, m *spacesv1.MetaMap) []byte {
	entries := m.GetEntries()
	dst = append(dst, '{')
	if len(entries) == 1 {
		// One entry (a step's infos often have one: rlmesh's
		// elapsed_steps): nothing to order.
		for k, v := range entries {
			dst = appendMetaEntry(dst, k, v)
		}
		return append(dst, '}')
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMetaEntry(dst, k, entries[k])
	}
	return append(dst, '}')
}

func appendMetaEntry(dst []byte, k string, v *spacesv1.MetaValue) []byte {
	dst = AppendJSONString(dst, k)
	dst = append(dst, ':')
	return appendMetaValue(dst, v)
}

func appendMetaValue(dst []byte, v *spacesv1.MetaValue) []byte {
	switch k := v.GetKind().(type) {
	case *spacesv1.MetaValue_Integer:
		return strconv.AppendInt(dst, k.Integer, 10)
	case *spacesv1.MetaValue_Number:
		return AppendJSONFloat(dst, k.Number, 64)
	case *spacesv1.MetaValue_Text:
		return AppendJSONString(dst, k.Text)
	case *spacesv1.MetaValue_Bool:
		return strconv.AppendBool(dst, k.Bool)
	case *spacesv1.MetaValue_Bytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, k.Bytes)
		return append(dst, '"')
	case *spacesv1.MetaValue_List:
		dst = append(dst, '[')
		for i, item := range k.List.GetItems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendMetaValue(dst, item)
		}
		return append(dst, ']')
	case *spacesv1.MetaValue_Map:
		return appendMetaMap(dst, k.Map)
	case *spacesv1.MetaValue_Null:
		// rlmesh 0.1's explicit null (field 8).
	}
	// null: the explicit null, an unset kind (how rlmesh 0.1 emitters
	// encode null), or a kind newer than this package.
	return append(dst, "null"...)
}
