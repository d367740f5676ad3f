package wal

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// TestDuplicateAndDroppedRecords: a record whose checksum is right but
// that repeats the one before it, or a record removed whole, changes no
// checksum. Positions inside the frames tell: the reader stops at the
// record out of sequence, Open refuses, and a salvage drops the duplicate
// or marks the dropped position lost, keeping every other record.
func TestDuplicateAndDroppedRecords(t *testing.T) {
	opts := Options{SegmentSize: 4 << 10}
	// A log whose last segment holds a few records.
	n := 40
	base, paths := buildLog(t, opts, n)
	for len(recordOffsets(t, readSegment(t, base, paths[len(paths)-1]))) < 3 {
		n++
		base, paths = buildLog(t, opts, n)
	}
	for _, seg := range []struct {
		name string
		path string
	}{{"sealed", paths[1]}, {"last", paths[len(paths)-1]}} {
		data := readSegment(t, base, seg.path)
		offs := recordOffsets(t, data)
		if len(offs) < 3 {
			t.Fatalf("%s segment holds %d records", seg.name, len(offs))
		}
		k := len(offs) / 2
		rec := data[offs[k]:offs[k+1]]
		for _, tc := range []struct {
			name       string
			b          []byte
			at         int // offset of the record out of sequence
			kept, lost int64
			cut        int64 // intact records dropped
		}{
			{"duplicate", slices.Concat(data[:offs[k+1]], rec, data[offs[k+1]:]), offs[k+1], int64(n), 0, 1},
			{"dropped", slices.Concat(data[:offs[k]], data[offs[k+1]:]), offs[k], int64(n - 1), 1, 0},
		} {
			t.Run(seg.name+"/"+tc.name, func(t *testing.T) {
				fsys := base.Crash()
				writeSegment(t, fsys, seg.path, tc.b)
				recs, _, rerr := readAll(t, fsys, testDir)
				_, oerr := Open(fsys, testDir, opts)
				for _, err := range []error{rerr, oerr} {
					var ce *CorruptionError
					if !errors.As(err, &ce) || ce.Torn || ce.Segment != seg.path || ce.Offset != int64(tc.at) || !errors.Is(err, ErrSequence) {
						t.Fatalf("error %v, want ErrSequence in %s at %d", err, seg.path, tc.at)
					}
				}
				for i, r := range recs {
					if !bytes.Equal(r, payload(i)) {
						t.Fatalf("record %d read before the error is not payload(%d)", i, i)
					}
				}
				l, err := Open(fsys, testDir, Options{SegmentSize: opts.SegmentSize, Salvage: true})
				if err != nil {
					t.Fatal(err)
				}
				rep := l.Recovered()
				l.Close()
				if !rep.Salvaged || rep.Records != tc.kept || rep.RecordsLost != tc.lost || rep.RecordsCut != tc.cut || rep.NextPos != Pos(n+1) {
					t.Fatalf("salvage report %+v", rep)
				}
				if poss := checkIntact(t, fsys, testDir); int64(len(poss)) != tc.kept {
					t.Fatalf("%d records after salvage, want %d", len(poss), tc.kept)
				}
			})
		}
	}
}
