package wal

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt is matched (errors.Is) by every *CorruptionError.
	ErrCorrupt = errors.New("wal: corrupt log")

	// ErrChecksum is the cause of a CorruptionError for a record whose
	// CRC-32C does not match.
	ErrChecksum = errors.New("wal: checksum mismatch")

	// ErrTruncated is the cause of a CorruptionError for a record or
	// segment header cut short by the end of the file.
	ErrTruncated = errors.New("wal: truncated record")

	// ErrBadRecord is the cause of a CorruptionError for a record with an
	// impossible type or length, or a payload that does not decode.
	ErrBadRecord = errors.New("wal: malformed record")

	// ErrBadHeader is the cause of a CorruptionError for a segment whose
	// header has a wrong magic, version or checksum.
	ErrBadHeader = errors.New("wal: bad segment header")

	// ErrGap is the cause of a CorruptionError for a segment whose first
	// Pos does not follow the records of the segment before it: the
	// segment before it ended early, or a segment is missing (the error
	// names the sealed segment that ended early, or the missing one), or
	// the segment's header claims positions already read.
	ErrGap = errors.New("wal: positions do not continue from the previous segment")

	// ErrSequence is the cause of a CorruptionError for a record whose
	// checksum is right but whose position is not the next one: a
	// duplicated record (an earlier position) or dropped records (a later
	// one).
	ErrSequence = errors.New("wal: record out of sequence")

	// ErrFailed is wrapped by every error a Log returns after a write or
	// fsync failed. The failure is sticky because a failed fsync cannot be
	// retried safely: close the log and open it again, which repairs it.
	ErrFailed = errors.New("wal: log failed after an I/O error, reopen it")

	// ErrClosed is returned by operations on a closed Log.
	ErrClosed = errors.New("wal: log closed")

	// ErrTooLarge is returned by Append for a payload over MaxRecordSize.
	ErrTooLarge = errors.New("wal: record too large")
)

// CorruptionError reports a damaged log: the segment file and the byte
// offset in it of the first record (or header, at offset 0) that could not
// be read. It matches ErrCorrupt with errors.Is and unwraps to its cause.
type CorruptionError struct {
	Segment string // path of the segment file
	Offset  int64  // byte offset of the damage in Segment
	// Last is true when Segment is the log's last segment.
	Last bool
	// Torn is true when the damage is a torn tail, what a crash leaves at
	// the end of the last segment: a record after which no record says
	// that it had been durable (see the package doc). Repair cuts a torn
	// tail; any other damage is corruption of data that was durable.
	Torn bool
	Err  error // the cause: ErrChecksum, ErrTruncated, ...
}

func (e *CorruptionError) Error() string {
	where := "sealed segment"
	if e.Last {
		where = "last segment"
	}
	what := "corrupt log"
	if e.Torn {
		what = "torn tail"
	}
	return fmt.Sprintf("wal: %s: %s %s at offset %d: %v", what, where, e.Segment, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }
