package main

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/rlrec/rlrec/blob"
)

// jsonInt is an int64 of inspect's JSON: a number within ±(2^53-1), else
// a string of its digits, so that no reader that parses numbers as doubles
// rounds it (blob.AppendJSONInt, as replay writes them too).
type jsonInt int64

func (v jsonInt) MarshalJSON() ([]byte, error) { return blob.AppendJSONInt(nil, int64(v)), nil }

// jsonFloat is a float64 of inspect's JSON: NaN and the infinities are
// the strings "NaN", "Infinity" and "-Infinity" (as replay writes them;
// encoding/json refuses them), other values numbers as encoding/json
// writes them.
type jsonFloat float64

func (v jsonFloat) MarshalJSON() ([]byte, error) {
	if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
		return blob.AppendJSONFloat(nil, f, 64), nil
	}
	return json.Marshal(float64(v))
}

// finalInfoJSON returns the final_info column's JSON text as the JSON
// value inspect --json nests: the object itself, with integers outside
// ±(2^53-1) as strings. Text that is no JSON object (a damaged row) is
// nested as a JSON string; nil is null.
func finalInfoJSON(text *string) json.RawMessage {
	if text == nil {
		return nil
	}
	asString := func() json.RawMessage { return blob.AppendJSONString(nil, *text) }
	dec := json.NewDecoder(strings.NewReader(*text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return asString()
	}
	if _, ok := v.(map[string]any); !ok {
		return asString()
	}
	b, err := json.Marshal(safeNumbers(v))
	if err != nil {
		return asString()
	}
	return b
}

// safeNumbers replaces the integers of a decoded JSON value (UseNumber)
// that lie outside ±(2^53-1) by strings of their digits.
func safeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if strings.ContainsAny(s, ".eE") {
			return x
		}
		if i, err := strconv.ParseInt(s, 10, 64); err == nil && i >= -blob.MaxJSONSafeInt && i <= blob.MaxJSONSafeInt {
			return x
		}
		return s
	case []any:
		for i := range x {
			x[i] = safeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = safeNumbers(x[k])
		}
	}
	return v
}
