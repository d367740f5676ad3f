package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// ParseFinalInfo parses the final_info column (the JSON text the recorder
// renders from the runtime's MetaMap) back into a MetaMap. JSON loses some
// of the MetaValue kinds, so the mapping is a choice:
//
//   - a number without '.', 'e' or 'E' that fits int64 is an integer,
//     any other number a double (the recorder renders a double of integral
//     value, e.g. 2.0, as "2", so it comes back as the integer 2);
//   - the strings "NaN", "Infinity" and "-Infinity" are doubles (the
//     recorder's rendering of those doubles);
//   - other strings are text (bytes were rendered as base64 text and come
//     back as that text);
//   - null is a MetaValue with no kind.
//
// Each choice renders back to the same JSON text, and derives the same
// success value (a bool, an integer != 0 or a double != 0), so an episodes
// row rebuilt from the parsed map equals the original.
func ParseFinalInfo(js string) (*spacesv1.MetaMap, error) {
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("final_info is not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("final_info has data after its object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("final_info is not a JSON object")
	}
	return metaMap(obj)
}

func metaMap(obj map[string]any) (*spacesv1.MetaMap, error) {
	m := &spacesv1.MetaMap{Entries: make(map[string]*spacesv1.MetaValue, len(obj))}
	for k, v := range obj {
		mv, err := metaValue(v)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		m.Entries[k] = mv
	}
	return m, nil
}

func metaValue(v any) (*spacesv1.MetaValue, error) {
	switch x := v.(type) {
	case nil:
		return &spacesv1.MetaValue{}, nil
	case bool:
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bool{Bool: x}}, nil
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{Integer: i}}, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: f}}, nil
	case string:
		switch x {
		case "NaN":
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: math.NaN()}}, nil
		case "Infinity":
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: math.Inf(1)}}, nil
		case "-Infinity":
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: math.Inf(-1)}}, nil
		}
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: x}}, nil
	case []any:
		l := &spacesv1.MetaList{Items: make([]*spacesv1.MetaValue, len(x))}
		for i, item := range x {
			mv, err := metaValue(item)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			l.Items[i] = mv
		}
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_List{List: l}}, nil
	case map[string]any:
		m, err := metaMap(x)
		if err != nil {
			return nil, err
		}
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Map{Map: m}}, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}
