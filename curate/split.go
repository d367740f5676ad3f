package curate

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
)

var (
	// ErrSplit is wrapped by the errors of ParseSplits.
	ErrSplit = errors.New("curate: bad split")
	// ErrNothing is wrapped by the error of a Copy whose filter selects
	// no episode.
	ErrNothing = errors.New("curate: nothing to copy")
)

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// Split is one part of a split by episode: a name (the directory of its
// ROOT under the destination) and the fraction of episodes it gets.
type Split struct {
	Name     string
	Fraction float64
}

// Splits is a split by episode, in the order it was given. The zero value
// is no split.
type Splits []Split

// ParseSplits parses "train=0.9,val=0.1": names of the form
// [A-Za-z0-9][A-Za-z0-9_-]*, unique, no table name of a ROOT; fractions
// in (0, 1] that add up to 1 (within 1e-9).
func ParseSplits(s string) (Splits, error) {
	var out Splits
	seen := map[string]bool{}
	sum := 0.0
	for _, part := range strings.Split(s, ",") {
		name, frac, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%w %q: want NAME=FRACTION pairs joined by commas (train=0.9,val=0.1)", ErrSplit, part)
		}
		if err := checkSplitName(name); err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: %q named twice", ErrSplit, name)
		}
		seen[name] = true
		f, err := strconv.ParseFloat(frac, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return nil, fmt.Errorf("%w: fraction %q of %s: want a number above 0 and at most 1", ErrSplit, frac, name)
		}
		sum += f
		out = append(out, Split{Name: name, Fraction: f})
	}
	if math.Abs(sum-1) > 1e-9 {
		return nil, fmt.Errorf("%w: the fractions add up to %s; they must add up to 1", ErrSplit, strconv.FormatFloat(sum, 'g', -1, 64))
	}
	return out, nil
}

func checkSplitName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: a split needs a name (train=0.9)", ErrSplit)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '_' && c != '-')) {
			return fmt.Errorf("%w: name %q: want letters, digits, '_' and '-', starting with a letter or digit (it names a directory)", ErrSplit, name)
		}
	}
	if _, ok := hive.Lookup(name); ok {
		return fmt.Errorf("%w: name %q is a table name of a ROOT; choose another", ErrSplit, name)
	}
	return nil
}

// String renders the split as ParseSplits reads it.
func (ss Splits) String() string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Name + "=" + strconv.FormatFloat(s.Fraction, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// SplitPoint is the point in [0, 1) that places an episode in a split:
// the first 8 bytes of the SHA-256 of
//
//	"rlrec.split.v1" | seed (8 bytes, big-endian) |
//	for session_id, env_id, episode_record_id: uvarint(len) | bytes
//
// read as a big-endian uint64, its top 53 bits divided by 2^53. It depends
// on the seed and the episode's identity alone, so an episode lands in the
// same split whatever else the source holds or the filter selects.
func SplitPoint(seed uint64, rec dataset.Recording, episodeRecordID string) float64 {
	h := sha256.New()
	h.Write([]byte("rlrec.split.v1"))
	var b [binary.MaxVarintLen64]byte
	binary.BigEndian.PutUint64(b[:8], seed)
	h.Write(b[:8])
	for _, s := range []string{rec.SessionID, rec.EnvID, episodeRecordID} {
		h.Write(b[:binary.PutUvarint(b[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	sum := h.Sum(nil)
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// Assign returns the index of the split an episode goes to: the first
// whose running total of fractions exceeds its SplitPoint (the last for
// a point that rounding leaves above the total).
func (ss Splits) Assign(seed uint64, rec dataset.Recording, episodeRecordID string) int {
	u := SplitPoint(seed, rec, episodeRecordID)
	c := 0.0
	for i, s := range ss {
		c += s.Fraction
		if u < c {
			return i
		}
	}
	return len(ss) - 1
}
