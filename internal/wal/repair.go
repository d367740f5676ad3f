package wal

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/rlrec/rlrec/internal/vfs"
)

// RepairReport says what Repair found and what it cut.
type RepairReport struct {
	Segments int   // segment files read
	Records  int64 // intact records kept
	// NextPos is the position the next appended record gets.
	NextPos Pos

	// Cut is true when Repair cut the log. The fields below describe the
	// cut; they are zero otherwise.
	Cut bool
	// Segment and Offset locate the first damaged byte; the log now ends
	// just before it.
	Segment string
	Offset  int64
	// BytesCut counts the bytes removed, across all files.
	BytesCut int64
	// RecordsCut counts intact records found after the damage and lost
	// with it. It is 0 for a plain torn tail: a torn tail held nothing that
	// had been reported durable.
	RecordsCut int64
	// SegmentsRemoved lists segment files removed whole.
	SegmentsRemoved []string
	// Salvaged is true when the damage was in a sealed segment and
	// Options.Salvage allowed the cut.
	Salvaged bool
	// Cause is the damage found, a *CorruptionError.
	Cause error
}

// Repair checks every record of the log in dir and cuts a torn or corrupt
// tail of the last segment, logging what it cut with logger (nil: silent).
// Corruption in a sealed segment is returned as a *CorruptionError and the
// log is left alone, unless salvage is true: then the log is cut at the
// damage too and everything after it is reported lost. A cut is made
// durable (file fsync, directory fsync) before Repair returns.
func Repair(fsys vfs.FS, dir string, salvage bool, logger *slog.Logger) (RepairReport, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var rep RepairReport
	r, err := NewReader(fsys, dir)
	if err != nil {
		return rep, err
	}
	defer r.Close()
	r.verify = true
	for r.Next() {
		rep.Records++
	}
	rep.Segments = r.idx + 1
	rep.NextPos = r.next
	if rep.NextPos == 0 {
		rep.NextPos = 1
	}
	var ce *CorruptionError
	if !errors.As(r.Err(), &ce) {
		return rep, r.Err()
	}
	if !ce.Last && !salvage {
		return rep, ce
	}
	rep.Cut, rep.Salvaged, rep.Cause = true, !ce.Last, ce
	rep.Segment, rep.Offset = ce.Segment, ce.Offset

	// The damaged segment is the loaded one, or one before it when the
	// loaded segment does not continue it (or is missing: then nothing is
	// cut but the segments after it).
	cut := r.idx
	buf, found := r.buf, true
	for cut >= 0 && r.segs[cut].path != ce.Segment {
		cut--
	}
	switch {
	case cut < 0:
		cut, found = r.idx-1, false
	case cut != r.idx:
		if buf, err = readFile(fsys, ce.Segment, nil); err != nil {
			return rep, err
		}
	}
	if found {
		rep.RecordsCut = countIntact(buf, int(ce.Offset)+1)
		rep.BytesCut = int64(len(buf)) - ce.Offset
		// Cut the damaged segment, then remove every later one.
		if ce.Offset < segmentHeaderSize {
			if err := fsys.Remove(ce.Segment); err != nil {
				return rep, fmt.Errorf("wal: remove damaged segment %s: %w", ce.Segment, err)
			}
			rep.SegmentsRemoved = append(rep.SegmentsRemoved, ce.Segment)
		} else if ce.Offset < int64(len(buf)) {
			if err := truncateFile(fsys, ce.Segment, ce.Offset); err != nil {
				return rep, err
			}
		}
	}
	for _, s := range r.segs[cut+1:] {
		if st, err := fsys.Stat(s.path); err == nil {
			rep.BytesCut += st.Size()
		}
		if buf, err := readFile(fsys, s.path, nil); err == nil && len(buf) >= segmentHeaderSize {
			rep.RecordsCut += countIntact(buf, segmentHeaderSize)
		}
		if err := fsys.Remove(s.path); err != nil {
			return rep, fmt.Errorf("wal: remove segment %s after the damage: %w", s.path, err)
		}
		rep.SegmentsRemoved = append(rep.SegmentsRemoved, s.path)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return rep, fmt.Errorf("wal: sync log directory %s: %w", dir, err)
	}
	attrs := []any{
		slog.String("segment", rep.Segment), slog.Int64("offset", rep.Offset),
		slog.Int64("bytes_cut", rep.BytesCut), slog.Int64("records_cut", rep.RecordsCut),
		slog.Int("segments_removed", len(rep.SegmentsRemoved)), slog.Int64("records_kept", rep.Records),
		slog.String("cause", ce.Err.Error()),
	}
	switch {
	case rep.Salvaged:
		logger.Error("wal: salvaged a corrupt log by cutting it at the damage; records after it are lost", attrs...)
	case rep.RecordsCut > 0:
		logger.Warn("wal: cut a corrupt tail of the last segment that still held intact records", attrs...)
	default:
		logger.Info("wal: cut a torn tail of the last segment left by a crash", attrs...)
	}
	return rep, nil
}

func truncateFile(fsys vfs.FS, name string, size int64) error {
	f, err := fsys.OpenAppend(name)
	if err != nil {
		return fmt.Errorf("wal: open segment to cut it: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("wal: cut segment %s at %d: %w", name, size, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("wal: sync cut segment %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("wal: close cut segment %s: %w", name, err)
	}
	return nil
}

// countIntact looks for the first offset at or after from where an intact
// record starts and counts the chain of intact records from there. It tells
// a torn tail (nothing intact after the damage) from a damaged record in
// the middle of good ones.
func countIntact(b []byte, from int) int64 {
	for o := max(from, 0); o+recordHeaderSize <= len(b); o++ {
		_, end, bad := checkRecord(b, o)
		if bad != recordOK {
			continue
		}
		n := int64(1)
		for end < len(b) {
			if _, end, bad = checkRecord(b, end); bad != recordOK {
				break
			}
			n++
		}
		return n
	}
	return 0
}

// segmentState is what Open needs to know about the last segment.
func lastSegment(fsys vfs.FS, dir string) (segmentRef, Pos, int64, bool, error) {
	segs, err := listSegments(fsys, dir)
	if err != nil || len(segs) == 0 {
		return segmentRef{}, 0, 0, false, err
	}
	s := segs[len(segs)-1]
	var hdr [segmentHeaderSize]byte
	first, err := readHeader(fsys, s.path, hdr[:])
	if err != nil {
		return s, 0, 0, false, fmt.Errorf("wal: read header of %s: %w", s.path, err)
	}
	st, err := fsys.Stat(s.path)
	if err != nil {
		return s, 0, 0, false, fmt.Errorf("wal: stat %s: %w", s.path, err)
	}
	return s, first, st.Size(), true, nil
}
