package hive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxValueLen is the longest escaped partition value kept whole; longer
// ones are cut (see the package doc). With the longest key,
// "episode_record_id=", a segment stays within 235 bytes. It is part of the
// on-disk layout: do not change it.
const MaxValueLen = 200

// hashDigits is the number of hex digits of the SHA-256 that follow a cut
// value. Part of the on-disk layout: do not change it.
const hashDigits = 16

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

// Escape percent-encodes value s (see the package doc), without cutting
// long values. A value whose escaped form would end in ".tmp" gets that
// dot escaped ("%2Etmp"): readers and verify skip every name that ends in
// ".tmp" as a temp file, so an id such as "run.tmp" would make its
// partition invisible. Decoding gives the value back.
func Escape(s string) string {
	e := escape(s)
	if strings.HasSuffix(e, tmpSuffix) {
		return e[:len(e)-len(tmpSuffix)] + "%2E" + tmpSuffix[1:]
	}
	return e
}

func escape(s string) string {
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

// EncodeValue returns the directory form of a partition value: Escape(s),
// cut and hashed when longer than MaxValueLen.
func EncodeValue(s string) string {
	e := Escape(s)
	if len(e) <= MaxValueLen {
		return e
	}
	cut := MaxValueLen
	// Do not split a %XX escape: back up to its '%'.
	if i := strings.LastIndexByte(e[cut-2:cut], '%'); i >= 0 {
		cut = cut - 2 + i
	}
	sum := sha256.Sum256([]byte(s))
	return e[:cut] + "~" + hex.EncodeToString(sum[:hashDigits/2])
}

// Cut reports whether an encoded value is a cut one (longer than
// MaxValueLen), whose value is in the files' metadata only.
func Cut(encoded string) bool { return len(encoded) > MaxValueLen }

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

// Unescape decodes a percent-encoded value. It accepts lower-case hex
// digits and unescaped bytes as other writers may produce them; it fails
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

// Segment returns the directory name key=EncodeValue(value).
func Segment(key, value string) string { return key + "=" + EncodeValue(value) }

// ParseSegment parses a key=value directory name. It returns the decoded
// value and whether it is exact: false for a cut value (see the package
// doc), whose returned value is the cut text as a dataset scan shows it.
func ParseSegment(name, key string) (value string, exact bool, err error) {
	v, ok := strings.CutPrefix(name, key+"=")
	if !ok {
		return "", false, fmt.Errorf("%w: %q is not a %s= directory", ErrNotPartition, name, key)
	}
	dec, err := Unescape(v)
	if err != nil {
		return "", false, err
	}
	return dec, !Cut(v), nil
}
