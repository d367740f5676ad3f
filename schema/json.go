package schema

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// ParseSpecJSON parses the protojson form of a SpaceSpec (as the runtime
// writes it and as rlrec stores it in file metadata) and validates it.
// Unknown fields are rejected. Errors wrap ErrSpecJSON or are a *SpecError.
func ParseSpecJSON(b []byte) (*spacesv1.SpaceSpec, error) {
	spec := &spacesv1.SpaceSpec{}
	if err := protojson.Unmarshal(b, spec); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpecJSON, err)
	}
	if err := Validate(spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// SpecJSON returns the protojson form of spec (lowerCamelCase field names,
// enum names, int64 as strings) with all insignificant whitespace removed,
// so the output is stable across runs (protojson alone varies its spacing
// on purpose). It does not validate spec.
func SpecJSON(spec *spacesv1.SpaceSpec) ([]byte, error) {
	raw, err := protojson.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("schema: marshal space spec: %w", err)
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	if err := json.Compact(&out, raw); err != nil {
		return nil, fmt.Errorf("schema: compact space spec JSON: %w", err)
	}
	return out.Bytes(), nil
}
