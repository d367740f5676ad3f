package schema

import (
	"errors"
	"fmt"
)

// Sentinel errors. Validation failures are returned as a *SpecError wrapping
// one of these; match them with errors.Is.
var (
	// ErrNilSpec is returned for a nil spec (at the root or as a Dict or
	// Tuple child).
	ErrNilSpec = errors.New("schema: nil space spec")
	// ErrNoKind is returned for a spec with none of box, discrete,
	// multi_binary, multi_discrete, text, dict or tuple set.
	ErrNoKind = errors.New("schema: space has no kind set")
	// ErrUnknownDType is returned for a DataType value outside the
	// rlmesh.spaces.v1 enum (0..12), wherever it appears.
	ErrUnknownDType = errors.New("schema: unknown data type")
	// ErrNoDType is returned for a Box, Discrete or MultiDiscrete space
	// whose dtype is DATA_TYPE_UNSPECIFIED.
	ErrNoDType = errors.New("schema: space needs a data type")
	// ErrDTypeKind is returned for a dtype the space kind cannot hold:
	// Discrete and MultiDiscrete need an integer dtype.
	ErrDTypeKind = errors.New("schema: data type not allowed for this space kind")
	// ErrShape is returned for a negative dimension, or a shape that
	// contradicts the space kind (a Discrete with a shape, a MultiDiscrete
	// shape whose element count is not len(nvec)).
	ErrShape = errors.New("schema: bad shape")
	// ErrTooLarge is returned when a leaf's element count or per-lane byte
	// size exceeds MaxLeafBytes.
	ErrTooLarge = errors.New("schema: leaf too large")
	// ErrDictKeys is returned for a Dict whose keys and spaces differ in
	// count.
	ErrDictKeys = errors.New("schema: dict keys and spaces differ in count")
	// ErrDuplicateKey is returned for a Dict that declares a key twice.
	ErrDuplicateKey = errors.New("schema: duplicate dict key")
	// ErrBadKey is returned for an empty Dict key. Any non-empty key is
	// accepted, "." and "%" included: leaf paths escape them.
	ErrBadKey = errors.New("schema: bad dict key")
	// ErrTooDeep is returned for Dict/Tuple nesting deeper than MaxDepth.
	ErrTooDeep = errors.New("schema: spaces nested too deeply")
	// ErrBadPath is returned by SplitPath, UnescapeKey and SplitColumnName
	// for a leaf path or column name that JoinPath and ColumnName cannot
	// have written: an empty segment, an unescaped "." inside a segment,
	// or a "%" not starting "%25" or "%2E".
	ErrBadPath = errors.New("schema: malformed leaf path")
	// ErrSpecJSON is returned by ParseSpecJSON for input that is not the
	// protojson form of a SpaceSpec.
	ErrSpecJSON = errors.New("schema: bad space spec JSON")
)

// SpecError is a validation failure at one place in a space spec.
type SpecError struct {
	// Path is the place in the spec where validation failed, in leaf-path
	// notation (dict keys, escaped as by EscapeKey, and tuple indices
	// joined by "."; see SplitPath); "" is the root.
	Path string
	// Err is one of the sentinel errors above, possibly wrapped with detail.
	Err error
}

func (e *SpecError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%v (at the root space)", e.Err)
	}
	return fmt.Sprintf("%v (at space %q)", e.Err, e.Path)
}

func (e *SpecError) Unwrap() error { return e.Err }

// specErr builds a *SpecError at path wrapping sentinel with a detail.
func specErr(path string, sentinel error, format string, args ...any) error {
	if format == "" {
		return &SpecError{Path: path, Err: sentinel}
	}
	return &SpecError{Path: path, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
