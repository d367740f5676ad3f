// Package hive builds the Hive-style partition paths of rlrec's output
// (ROOT/<table>/session_id=S[/episode_record_id=E]) and percent-encodes the
// partition values in them.
//
// # Encoding
//
// Every byte of a value outside A-Z a-z 0-9 '-' '_' '.' '~' becomes %XX with
// two uppercase hex digits; all other bytes are kept. This is the rule
// DuckDB's partitioned writer uses, and DuckDB's hive reader and pyarrow's
// default (segment_encoding="uri") decoding both reverse it, so any id
// round-trips through a dataset scan.
//
// Two values are special-cased: "." and ".." are written as "%2E" and
// "%2E%2E". Inside a key=value segment they could not name a parent
// directory anyway, but an escaped value is then a safe path segment on its
// own too, and both readers decode it back.
//
// The empty value encodes as "" and gives the segment "key=", still a
// single valid segment inside ROOT. DuckDB 1.5 reads it back as the empty
// string (checked, as were "..", "/", "%", spaces and UTF-8 ids); other
// readers may take it for null, so ids meant for querying should not be "".
package hive

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Partition keys. They are part of the on-disk layout: do not change them.
const (
	KeySessionID       = "session_id"
	KeyEpisodeRecordID = "episode_record_id"
)

const upperHex = "0123456789ABCDEF"

// unreserved reports whether byte c is kept as is.
func unreserved(c byte) bool {
	switch {
	case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return true
	case c == '-', c == '_', c == '.', c == '~':
		return true
	}
	return false
}

// Escape percent-encodes partition value s (see the package doc).
func Escape(s string) string {
	switch s {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Unescape decodes a percent-encoded partition value. It accepts lower-case
// hex digits and unescaped bytes as other writers may produce them; it fails
// only on a '%' that is not followed by two hex digits.
func Unescape(s string) (string, error) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w at byte %d of %q", ErrBadEscape, i, s)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("%w at byte %d of %q", ErrBadEscape, i, s)
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), nil
}

// Segment returns the directory name key=Escape(value).
func Segment(key, value string) string { return key + "=" + Escape(value) }

// Dir returns the partition directory of an episode-partitioned table
// (steps, episodes): root/table/session_id=S/episode_record_id=E. The
// episode segment is always present, also for E == "" ("episode_record_id="),
// so a file of an episode never lands in its session's directory.
func Dir(root, table, sessionID, episodeRecordID string) string {
	return filepath.Join(root, table, Segment(KeySessionID, sessionID), Segment(KeyEpisodeRecordID, episodeRecordID))
}

// SessionDir returns the partition directory of a session-partitioned table
// (sessions, logs, telemetry): root/table/session_id=S.
func SessionDir(root, table, sessionID string) string {
	return filepath.Join(root, table, Segment(KeySessionID, sessionID))
}
