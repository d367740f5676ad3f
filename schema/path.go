package schema

import (
	"fmt"
	"strings"
)

// PathSep separates the segments of a leaf path, and the side of a typed
// steps column from its leaf path.
const PathSep = "."

// EscapeKey returns the path segment of Dict key: the key with each "%"
// written "%25" and each "." written "%2E". Every other byte is kept, so a
// key with neither comes back unchanged (and unallocated).
func EscapeKey(key string) string {
	n := 0
	for i := 0; i < len(key); i++ {
		if key[i] == '%' || key[i] == '.' {
			n++
		}
	}
	if n == 0 {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 2*n)
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '%':
			b.WriteString("%25")
		case '.':
			b.WriteString("%2E")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// UnescapeKey reverses EscapeKey for one path segment. It accepts only
// what EscapeKey writes: "%" must start "%25" or "%2E" (upper-case hex),
// and the segment must hold no unescaped "."; anything else is an error
// wrapping ErrBadPath. Accepting any other spelling would give one key two
// column names.
func UnescapeKey(seg string) (string, error) {
	i := strings.IndexAny(seg, "%.")
	if i < 0 {
		return seg, nil
	}
	b := make([]byte, 0, len(seg))
	b = append(b, seg[:i]...)
	for ; i < len(seg); i++ {
		switch c := seg[i]; {
		case c == '.':
			return "", fmt.Errorf("%w: unescaped %q at byte %d of segment %q", ErrBadPath, PathSep, i, seg)
		case c != '%':
			b = append(b, c)
		case strings.HasPrefix(seg[i:], "%25"):
			b = append(b, '%')
			i += 2
		case strings.HasPrefix(seg[i:], "%2E"):
			b = append(b, '.')
			i += 2
		default:
			return "", fmt.Errorf("%w: bad escape at byte %d of segment %q (want %%25 or %%2E)", ErrBadPath, i, seg)
		}
	}
	return string(b), nil
}

// JoinPath returns the leaf path of the given segments (Dict keys and
// Tuple indices, from the root down): each segment escaped with EscapeKey,
// joined with ".". No segments give "", the path of a space that is
// itself fundamental. Segments should be non-empty, as Dict keys and
// indices are; SplitPath rejects the empty segments an empty one leaves.
func JoinPath(segments ...string) string {
	var path string
	for _, s := range segments {
		path = appendPath(path, s)
	}
	return path
}

// appendPath appends one segment to a leaf path.
func appendPath(path, seg string) string {
	if path == "" {
		return EscapeKey(seg)
	}
	return path + PathSep + EscapeKey(seg)
}

// SplitPath splits a leaf path into its segments, unescaped: the Dict keys
// by their real names and the Tuple indices in decimal. It is the inverse
// of JoinPath for non-empty segments. The path "" has no segments (nil).
// A path with an empty segment (a leading, trailing or doubled ".") or a
// malformed escape is an error wrapping ErrBadPath.
func SplitPath(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	segs := strings.Split(path, PathSep)
	for i, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("%w: empty segment %d in %q", ErrBadPath, i, path)
		}
		k, err := UnescapeKey(s)
		if err != nil {
			return nil, fmt.Errorf("path %q: %w", path, err)
		}
		segs[i] = k
	}
	return segs, nil
}

// ColumnName returns the name of the typed steps column of a leaf: side
// (ColObservation or ColAction) for the leaf of a single-leaf space (path
// ""), side + "." + path for any other.
func ColumnName(side, path string) string {
	if path == "" {
		return side
	}
	return side + PathSep + path
}

// SplitColumnName reverses ColumnName: it returns the side
// (ColObservation or ColAction) of a typed steps column and the segments
// of its leaf path, unescaped (nil for a single-leaf space's column). A
// name that is not a typed column name, or whose path is malformed, is an
// error wrapping ErrBadPath.
func SplitColumnName(name string) (side string, segments []string, err error) {
	for _, side := range []string{ColObservation, ColAction} {
		if name == side {
			return side, nil, nil
		}
		path, ok := strings.CutPrefix(name, side+PathSep)
		if !ok {
			continue
		}
		if path == "" {
			return "", nil, fmt.Errorf("%w: column %q has an empty leaf path", ErrBadPath, name)
		}
		segs, err := SplitPath(path)
		if err != nil {
			return "", nil, fmt.Errorf("column %q: %w", name, err)
		}
		return side, segs, nil
	}
	return "", nil, fmt.Errorf("%w: %q is not a typed steps column (want %s, %s or either followed by %q and a leaf path)",
		ErrBadPath, name, ColObservation, ColAction, PathSep)
}
