package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/internal/vfs"
)

// RepairReport says what Repair found and what it changed.
type RepairReport struct {
	Segments int   // segment files in the log after the repair
	Records  int64 // intact records kept
	// NextPos is the position the next appended record gets.
	NextPos Pos

	// Cut is true when Repair changed the log: it cut a torn tail, or
	// (Salvaged) repaired corruption. The fields below describe what it
	// found and did; they are zero otherwise.
	Cut bool
	// Segment and Offset locate the first damage found.
	Segment string
	Offset  int64
	// Torn is true when the damage was a torn tail, cut from the last
	// segment.
	Torn bool
	// Salvaged is true when the damage was corruption (not a torn tail)
	// and salvage let Repair drop the damaged bytes and keep every intact
	// record around them.
	Salvaged bool
	// BytesCut counts the bytes of damaged or dropped records removed,
	// across all files.
	BytesCut int64
	// RecordsCut counts intact records found and not kept. For a torn tail
	// these follow the damaged record and none of them had been durable
	// (a crash's unfinished write). After a salvage they are duplicates,
	// records of a torn tail found after the corruption, and records of a
	// formatV1 segment after damage in it (whose positions are not known).
	RecordsCut int64
	// RecordsLost counts the positions a salvage marked lost: records the
	// damage destroyed. Readers skip them (Reader.Lost counts them).
	RecordsLost int64
	// SegmentsRemoved lists segment files removed whole; SegmentsRewritten
	// those a salvage wrote anew without their damaged bytes.
	SegmentsRemoved   []string
	SegmentsRewritten []string
	// PendingMissing is the pending file a salvage found missing though
	// the log's expectation says a writer had it in use ("" if none).
	PendingMissing string
	// SegmentsMissing lists the segment files the log's manifest names
	// that were not there (see ManifestName): a salvage recovered what
	// the others hold, and their records are lost.
	SegmentsMissing []string
	// Cause is the first damage found, a *CorruptionError.
	Cause error

	// Restored counts the records a process that died had appended but
	// not yet written to a segment, which Repair found in the pending
	// file (see PendingName), appended to the log and synced.
	Restored int64
}

// Repair checks every record of the log in dir, logging what it finds and
// does with logger (nil: silent).
//
// A torn tail, damage at the end of the last segment after which no record
// says the damaged one had been durable, is what a crash leaves: Repair
// cuts it. Anything else is corruption of data that was durable (a bad
// record that a later record shows was durable, a bad segment header, a
// record out of sequence, a gap between segments, damage in a sealed
// segment): Repair returns it as a *CorruptionError and leaves the log
// alone, unless salvage is true. Then Repair rewrites each damaged segment
// without its damaged bytes, keeping every intact record after the damage
// too: it scans forward to the next record whose checksum is right and
// whose position continues, and records the positions in between as lost
// (a record of kind "lost", which readers skip). Every change is made
// durable (file fsync, rename, directory fsync) before Repair returns; a
// crash during a repair leaves the log as it was or repaired.
//
// Repair then restores the records a dead process left in the pending file
// (see PendingName): those the log does not hold are appended and synced.
func Repair(fsys vfs.FS, dir string, salvage bool, logger *slog.Logger) (RepairReport, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pendingLost, err := checkPending(fsys, dir)
	if err != nil {
		return RepairReport{}, err
	}
	if pendingLost != nil && !salvage {
		// Missing segments are named first: the larger loss.
		if err := CheckExpected(fsys, dir); err != nil {
			return RepairReport{}, err
		}
		return RepairReport{}, pendingLost
	}
	rep, err := repairLog(fsys, dir, salvage, logger)
	if err != nil {
		return rep, err
	}
	if pendingLost != nil {
		logger.Error("wal: salvaging a log whose pending file is missing: the records it held and had not written to a segment are lost", "cause", pendingLost.Err.Error())
		rep.PendingMissing = pendingLost.Segment
		rep.Cut, rep.Salvaged = true, true
		if rep.Cause == nil {
			rep.Segment, rep.Cause = pendingLost.Segment, pendingLost
		}
	}
	if err := restorePending(fsys, dir, &rep, logger); err != nil {
		return rep, err
	}
	return rep, nil
}

// repairLog is Repair of the segments alone.
func repairLog(fsys vfs.FS, dir string, salvage bool, logger *slog.Logger) (RepairReport, error) {
	missing, err := checkManifest(fsys, dir, salvage, logger)
	if err != nil {
		return RepairReport{}, err
	}
	rep, err := repairSegments(fsys, dir, salvage, logger)
	if err != nil || missing == nil && !rep.Salvaged {
		return rep, err
	}
	if missing != nil {
		rep.SegmentsMissing = missing.names
	}
	if missing != nil && !rep.Cut {
		rep.Cut, rep.Salvaged = true, true
		rep.Segment, rep.Offset, rep.Cause = missing.err.Segment, 0, missing.err
	}
	// The manifest names what is left.
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return rep, err
	}
	if len(segs) == 0 {
		err := fsys.Remove(filepath.Join(dir, ManifestName))
		if errors.Is(err, fs.ErrNotExist) {
			return rep, nil
		}
		if err == nil {
			err = fsys.SyncDir(dir)
		}
		return rep, err
	}
	return rep, writeManifest(fsys, dir, manifestOf(segs), false)
}

// missingReport is what checkManifest found missing.
type missingReport struct {
	names []string
	err   *CorruptionError
}

// checkManifest checks that every segment the log's manifest names is
// there. It returns the error unless salvage is set; then it logs it and
// returns what is missing for the report.
func checkManifest(fsys vfs.FS, dir string, salvage bool, logger *slog.Logger) (*missingReport, error) {
	m, ok, _, err := expectedManifest(fsys, dir)
	if err != nil || !ok {
		return nil, err
	}
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return nil, err
	}
	missing := missingSegments(m, segs)
	if len(missing) == 0 {
		return nil, nil
	}
	ce := missingError(dir, m, segs, missing)
	if !salvage {
		return nil, ce
	}
	mr := &missingReport{err: ce}
	for _, n := range missing {
		mr.names = append(mr.names, filepath.Join(dir, segmentName(n)))
	}
	logger.Error("wal: salvaging a log that lacks segments: their records are lost, the rest is kept", "missing", strings.Join(mr.names, ", "), "cause", ce.Err.Error())
	return mr, nil
}

// repairSegments is repairLog of the segments present.
func repairSegments(fsys vfs.FS, dir string, salvage bool, logger *slog.Logger) (RepairReport, error) {
	rep, r, err := check(fsys, dir)
	if r != nil {
		defer r.Close()
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		return rep, err
	}
	rep.Segment, rep.Offset, rep.Cause = ce.Segment, ce.Offset, ce
	switch {
	case ce.Torn:
		rep.Torn = true
		rep.RecordsCut = countIntact(r.buf, int(ce.Offset)+1, r.ver)
		rep.BytesCut = int64(len(r.buf)) - ce.Offset
		if err := truncateFile(fsys, ce.Segment, ce.Offset); err != nil {
			return rep, err
		}
	case !salvage:
		return rep, ce
	default:
		rep.Salvaged = true
		if err := salvageFrom(fsys, r.segs[r.idx:], r.starts[r.idx], &rep); err != nil {
			return rep, err
		}
	}
	rep.Cut = true
	if err := fsys.SyncDir(dir); err != nil {
		return rep, fmt.Errorf("wal: sync log directory %s: %w", dir, err)
	}
	after, r2, err := check(fsys, dir)
	if r2 != nil {
		r2.Close()
	}
	if err != nil {
		return rep, fmt.Errorf("wal: the log is still damaged after its repair: %w", err)
	}
	rep.Segments, rep.Records, rep.NextPos = after.Segments, after.Records, after.NextPos
	attrs := []any{
		slog.String("segment", rep.Segment), slog.Int64("offset", rep.Offset),
		slog.Int64("bytes_cut", rep.BytesCut), slog.Int64("records_cut", rep.RecordsCut),
		slog.Int64("records_lost", rep.RecordsLost), slog.Int("segments_rewritten", len(rep.SegmentsRewritten)),
		slog.Int("segments_removed", len(rep.SegmentsRemoved)), slog.Int64("records_kept", rep.Records),
		slog.String("cause", ce.Err.Error()),
	}
	if rep.Salvaged {
		logger.Error("wal: salvaged a corrupt log: dropped the damaged bytes, kept every intact record; the records lost are marked so", attrs...)
	} else {
		logger.Info("wal: cut a torn tail of the last segment left by a crash", attrs...)
	}
	return rep, nil
}

// check reads every record of the log in dir, checking framing and
// checksums only. It returns the Reader where it stopped, with its error.
func check(fsys vfs.FS, dir string) (RepairReport, *Reader, error) {
	var rep RepairReport
	r, err := NewReader(fsys, dir)
	if err != nil {
		return rep, nil, err
	}
	r.verify = true
	for r.Next() {
		rep.Records++
	}
	rep.Segments = len(r.segs)
	rep.NextPos = r.next
	if rep.NextPos == 0 {
		rep.NextPos = 1
	}
	return rep, r, r.Err()
}

// salvageFrom salvages segs, the first of which must start at expect (0:
// anywhere), and each later one where the one before it ends.
func salvageFrom(fsys vfs.FS, segs []segmentRef, expect Pos, rep *RepairReport) error {
	for i, s := range segs {
		b, err := readFile(fsys, s.path, nil)
		if err != nil {
			return err
		}
		res := salvageSegment(b, expect, i == len(segs)-1)
		rep.RecordsCut += res.dropped
		rep.RecordsLost += res.lost
		rep.BytesCut += res.bytesDropped
		if res.next == 0 {
			// The log's first segment, with no record left and no
			// position known: it is removed.
			if err := fsys.Remove(s.path); err != nil {
				return fmt.Errorf("wal: remove damaged segment %s: %w", s.path, err)
			}
			rep.SegmentsRemoved = append(rep.SegmentsRemoved, s.path)
			continue
		}
		expect = res.next
		if bytes.Equal(res.out, b) {
			continue
		}
		if err := rewriteFile(fsys, s.path, res.out); err != nil {
			return err
		}
		rep.SegmentsRewritten = append(rep.SegmentsRewritten, s.path)
	}
	return nil
}

type salvaged struct {
	out          []byte // the segment's new contents
	next         Pos    // the position after its records (0: none known)
	lost         int64  // positions marked lost
	dropped      int64  // intact records dropped
	bytesDropped int64
}

// salvageSegment returns a segment with the intact records of b, the
// positions between them that damage destroyed marked lost, starting at
// expect (0: at its first intact record). The result is formatV2; records
// of a formatV1 segment are framed anew. In the last segment, damage that
// is a torn tail ends the segment.
func salvageSegment(b []byte, expect Pos, last bool) salvaged {
	s := salvaged{next: expect}
	first := expect
	out := make([]byte, segmentHeaderSize, len(b)+recordHeaderSize+lostPayloadSize)
	// cover marks lost the positions up to pos, where the next record kept
	// is.
	cover := func(pos Pos) {
		if s.next == 0 {
			s.next, first = pos, pos
		}
		if pos > s.next {
			out = appendLostRecord(out, s.next, uint64(pos-s.next))
			s.lost += int64(pos - s.next)
			s.next = pos
		}
	}
	ver, hfirst, herr := parseSegmentHeader(b)
	if herr == nil && s.next == 0 {
		s.next, first = hfirst, hfirst
	}
	kept := false
	if herr == nil && ver == formatV1 {
		// Kept as it is when it is intact and where it should be.
		clean := hfirst == s.next
		pos := hfirst
		for off := segmentHeaderSize; off < len(b); pos++ {
			f, bad := checkRecord(b, off, formatV1)
			if bad != recordOK {
				s.dropped += countIntact(b, off+1, formatV1)
				s.bytesDropped += int64(len(b) - off)
				clean = false
				break
			}
			if pos < s.next {
				s.dropped++
				s.bytesDropped += int64(f.end - off)
				clean = false
			} else {
				cover(pos)
				out = appendRecordV2(out, f.typ, b[f.start:f.end], pos, pos-1)
				s.next = pos + 1
			}
			off = f.end
		}
		if clean {
			s.out = b
			return s
		}
	} else {
		if herr != nil {
			s.bytesDropped += int64(min(len(b), segmentHeaderSize))
		}
		resyncing := herr != nil
		for off := segmentHeaderSize; off < len(b); {
			if resyncing {
				o, ok := resync(b, off, s.next)
				if !ok {
					if herr != nil && !kept {
						// Perhaps a formatV1 segment whose header is lost.
						s.dropped += countIntact(b, off, formatV1)
					}
					s.bytesDropped += int64(len(b) - off)
					break
				}
				s.bytesDropped += int64(o - off)
				off, resyncing = o, false
			}
			f, bad := checkRecord(b, off, formatV2)
			if bad == recordOK {
				if s.next != 0 && f.pos < s.next {
					// A duplicate: what it holds is kept already.
					if f.typ&kindMask == kindFull {
						s.dropped++
					}
					s.bytesDropped += int64(f.end - off)
				} else {
					cover(f.pos)
					out = append(out, b[off:f.end]...)
					kept = true
					switch f.typ {
					case kindLost:
						s.next = f.pos + Pos(f.lost)
					case kindMark:
					default:
						s.next = f.pos + 1
					}
				}
				off = f.end
				continue
			}
			if last && !durableAfter(b, off, formatV2, s.next) {
				// A torn tail after the corruption.
				s.dropped += countIntact(b, off+1, formatV2)
				s.bytesDropped += int64(len(b) - off)
				break
			}
			off++
			resyncing = true
		}
	}
	if first == 0 {
		return salvaged{dropped: s.dropped, bytesDropped: int64(len(b))}
	}
	hdr := appendSegmentHeader(nil, first)
	copy(out, hdr)
	s.out = out
	return s
}

// resync returns the offset at or after from of the next formatV2 record
// whose checksum is right and whose position is next or later (any
// position when next is 0).
func resync(b []byte, from int, next Pos) (int, bool) {
	for o := from; o+recordHeaderSize <= len(b); o++ {
		if f, bad := checkRecord(b, o, formatV2); bad == recordOK && f.pos >= next {
			return o, true
		}
	}
	return 0, false
}

// countIntact looks for the first offset at or after from where an intact
// record starts and counts the chain of intact records from there.
func countIntact(b []byte, from int, version uint32) int64 {
	for o := max(from, 0); o+headerSize(version) <= len(b); o++ {
		f, bad := checkRecord(b, o, version)
		if bad != recordOK {
			continue
		}
		n := int64(0)
		for {
			if f.typ&kindMask == kindFull {
				n++
			}
			if f, bad = checkRecord(b, f.end, version); bad != recordOK {
				return n
			}
		}
	}
	return 0
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

// rewriteFile replaces the segment name with data through a temporary
// file, synced before it is renamed over name. The caller syncs the
// directory.
func rewriteFile(fsys vfs.FS, name string, data []byte) error {
	if err := vfs.WriteFile(fsys, name+tempSuffix, name, data); err != nil {
		return fmt.Errorf("wal: rewrite segment %s: %w", name, err)
	}
	return nil
}

// removeTemps removes the temporary files a crash left while a segment
// was created or rewritten; the segment itself is as it was before.
func removeTemps(fsys vfs.FS, dir string) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("wal: list %s: %w", dir, err)
	}
	removed := false
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), tempSuffix)
		if _, seg := parseSegmentName(name); !ok || !(seg || name == ManifestName) || e.IsDir() {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("wal: remove temporary file: %w", err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("wal: sync log directory %s: %w", dir, err)
		}
	}
	return nil
}
