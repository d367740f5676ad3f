package wal

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
)

// checkPrefix reads the log in dir and checks that it holds payload(0),
// payload(1), ... at positions 1, 2, ..., at least min of them. It returns
// how many.
func checkPrefix(t *testing.T, fsys vfs.FS, dir string, min int) int {
	t.Helper()
	recs, poss, err := readAll(t, fsys, dir)
	if err != nil {
		t.Fatalf("read after repair: %v", err)
	}
	if len(recs) < min {
		t.Fatalf("log holds %d records, but %d were reported durable", len(recs), min)
	}
	for i, r := range recs {
		if poss[i] != Pos(i+1) || !bytes.Equal(r, payload(i)) {
			t.Fatalf("record %d at pos %d is not payload(%d)", i, poss[i], i)
		}
	}
	return len(recs)
}

// TestCrashRandomSyncPoints appends records, waits for some of them at
// random, cuts the power at a random moment (half the time tearing the
// unsynced writes) and checks that every record
// whose WaitSynced returned survives, in order, and that the log accepts
// appends again.
func TestCrashRandomSyncPoints(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	tornTails := 0
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		opts := Options{
			SegmentSize:  int64(2<<10 + rng.IntN(16<<10)),
			SyncInterval: time.Duration(1+rng.IntN(3)) * time.Millisecond,
			FlushSize:    1 + rng.IntN(8<<10),
			MaxPending:   4<<10 + rng.IntN(32<<10),
			Compression:  Compression(rng.IntN(4)),
		}
		fsys := vfs.NewMem()
		l, err := Open(fsys, testDir, opts)
		if err != nil {
			t.Fatal(err)
		}
		n := 50 + rng.IntN(150)
		crashAt := rng.IntN(n)
		acked := 0
		var crashed *vfs.MemFS
		for i := 0; i < n; i++ {
			pos, err := l.Append(payload(i))
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(10) == 0 {
				if err := l.WaitSynced(context.Background(), pos); err != nil {
					t.Fatal(err)
				}
				acked = i + 1
			}
			if i == crashAt {
				if seed%2 == 0 {
					crashed = fsys.Crash()
				} else {
					crashed = fsys.CrashTorn(uint64(seed))
				}
				break
			}
		}
		l.Close()

		l2, err := Open(crashed, testDir, opts)
		if err != nil {
			t.Fatalf("seed %d: reopen after crash: %v", seed, err)
		}
		// A clean crash leaves whole synced batches; a torn one may leave
		// intact records after a zeroed stretch, which were never durable.
		rep := l2.Recovered()
		if rep.Salvaged || (seed%2 == 0 && rep.Cut) {
			t.Fatalf("seed %d: unexpected repair %+v", seed, rep)
		}
		if rep.Cut {
			tornTails++
		}
		got := int(l2.LastPos())
		pos, err := l2.Append(payload(got))
		if err != nil || pos != Pos(got+1) {
			t.Fatalf("seed %d: append after recovery: pos %d, %v", seed, pos, err)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
		if k := checkPrefix(t, crashed, testDir, acked); k != got+1 {
			t.Fatalf("seed %d: %d records after reopen, want %d", seed, k, got+1)
		}
	}
	if tornTails == 0 {
		t.Fatal("no crash left a torn tail to repair")
	}
	t.Logf("%d of %d crashes left a torn tail", tornTails, seeds)
}

func readSegment(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	b, err := readFile(fsys, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

func writeSegment(t *testing.T, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		t.Fatal(err)
	}
}

// buildLog writes n records and returns the file system, the segment
// paths and, for the last segment, the offsets at which its records start.
func buildLog(t *testing.T, opts Options, n int) (*vfs.MemFS, []string) {
	t.Helper()
	fsys := vfs.NewMem()
	l, err := Open(fsys, testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(fsys, testDir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range segs {
		paths = append(paths, s.path)
	}
	return fsys, paths
}

// recordOffsets returns the offsets of the records in a segment (not
// those of marks).
func recordOffsets(t *testing.T, b []byte) []int {
	t.Helper()
	var offs []int
	for off := segmentHeaderSize; off < len(b); {
		f, err := parseRecord(b, off, formatVersion)
		if err != nil {
			t.Fatalf("record at %d: %v", off, err)
		}
		if f.typ&kindMask == kindFull {
			offs = append(offs, off)
		}
		off = f.end
	}
	return offs
}

// waitWritten waits until the writer of l has handed every record
// appended to the file system.
func waitWritten(t *testing.T, l *Log) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		done := l.written == l.last
		l.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not write the records appended")
		}
		l.wake()
		time.Sleep(time.Millisecond)
	}
}

// buildTail writes n records and syncs them, then writes tail more that
// are written but not synced, and returns a file system holding all of
// them as the disk would after a crash that kept the unsynced writes,
// the segment paths, and the size of each segment's synced part.
func buildTail(t *testing.T, opts Options, n, tail int) (*vfs.MemFS, []string, map[string]int) {
	t.Helper()
	return buildTailOf(t, opts, payload, n, tail)
}

// buildTailOf is buildTail with the records gen(0), gen(1), ...
func buildTailOf(t *testing.T, opts Options, gen func(int) []byte, n, tail int) (*vfs.MemFS, []string, map[string]int) {
	t.Helper()
	live := vfs.NewMem()
	opts.SyncInterval, opts.FlushSize = time.Hour, 1
	l, err := Open(live, testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < n; i++ {
		if _, err := l.Append(gen(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := n; i < n+tail; i++ {
		if _, err := l.Append(gen(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitWritten(t, l)
	crashed := live.Crash()
	segs, err := listSegments(live, testDir)
	if err != nil {
		t.Fatal(err)
	}
	fsys := vfs.NewMem()
	fsys.MkdirAll(testDir)
	var paths []string
	synced := make(map[string]int)
	for _, s := range segs {
		paths = append(paths, s.path)
		writeSegment(t, fsys, s.path, readSegment(t, live, s.path))
		if b, err := readFile(crashed, s.path, nil); err == nil {
			synced[s.path] = len(b)
		}
	}
	return fsys, paths, synced
}

// checkIntact reads the log in dir and checks that it holds payload(p-1)
// at each position p it returns, in order, and that it marks lost the
// positions it skips. It returns the positions read.
func checkIntact(t *testing.T, fsys vfs.FS, dir string) []Pos {
	t.Helper()
	r, err := NewReader(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var poss []Pos
	skipped := int64(0)
	for r.Next() {
		p := r.Pos()
		if len(poss) > 0 {
			if p <= poss[len(poss)-1] {
				t.Fatalf("position %d after %d", p, poss[len(poss)-1])
			}
			skipped += int64(p - poss[len(poss)-1] - 1)
		}
		if !bytes.Equal(r.Record(), payload(int(p-1))) {
			t.Fatalf("record at pos %d is not payload(%d)", p, p-1)
		}
		poss = append(poss, p)
	}
	if r.Err() != nil {
		t.Fatalf("read after repair: %v", r.Err())
	}
	if skipped > r.lostSoFar() {
		t.Fatalf("%d positions skipped, %d marked lost", skipped, r.lostSoFar())
	}
	return poss
}

// TestTornTail cuts the last segment at every byte of its last record, a
// record written but not synced, and flips and zeroes every byte of it:
// the log must come back with the records before it, say what it cut,
// and accept appends.
func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		min, max int // size of the last record, to keep the sweep short
	}{
		{"plain", Options{Compression: CompressionNone}, 60, 200},
		// compressible and just over the compression threshold
		{"s2", Options{}, 520, 640},
		{"zstd", Options{Compression: CompressionZstd}, 520, 640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 5
			for len(payload(n-1)) < tc.min || len(payload(n-1)) > tc.max || (n-1)%2 != 0 {
				n++
			}
			base, paths, _ := buildTail(t, tc.opts, n-1, 1)
			last := paths[len(paths)-1]
			data := readSegment(t, base, last)
			offs := recordOffsets(t, data)
			lastOff := offs[len(offs)-1]
			damage := map[string]func(b []byte, i int) []byte{
				"cut": func(b []byte, i int) []byte { return b[:i] },
				"flip": func(b []byte, i int) []byte {
					b = bytes.Clone(b)
					b[i] ^= 0x40
					return b
				},
				"zeroes": func(b []byte, i int) []byte {
					b = bytes.Clone(b)
					clear(b[i:])
					return b
				},
			}
			for kind, f := range damage {
				for i := lastOff; i < len(data); i++ {
					if kind == "cut" && i == lastOff {
						continue // a clean end, checked by TestRoundTrip
					}
					fsys := base.Crash()
					writeSegment(t, fsys, last, f(data, i))
					// The reader reports a torn tail of the last segment.
					_, _, rerr := readAll(t, fsys, testDir)
					var ce *CorruptionError
					if !errors.As(rerr, &ce) || !ce.Last || !ce.Torn || ce.Offset != int64(lastOff) || !errors.Is(rerr, ErrCorrupt) {
						t.Fatalf("%s at %d: reader error %v, want a torn tail at %d", kind, i, rerr, lastOff)
					}
					l, err := Open(fsys, testDir, tc.opts)
					if err != nil {
						t.Fatalf("%s at %d: open: %v", kind, i, err)
					}
					rep := l.Recovered()
					if !rep.Cut || !rep.Torn || rep.Salvaged || rep.Offset != int64(lastOff) || rep.BytesCut != int64(len(f(data, i))-lastOff) || rep.RecordsCut != 0 || rep.Records != int64(n-1) {
						t.Fatalf("%s at %d: report %+v", kind, i, rep)
					}
					if pos, err := l.Append(payload(n - 1)); err != nil || pos != Pos(n) {
						t.Fatalf("%s at %d: append after repair: %d %v", kind, i, pos, err)
					}
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					if k := checkPrefix(t, fsys, testDir, n); k != n {
						t.Fatalf("%s at %d: %d records", kind, i, k)
					}
				}
			}
		})
	}
}

// TestCorruptMiddleOfLastSegment damages a record of the last segment
// that later records show was durable: that is corruption, not a torn
// tail. Open refuses it; with Salvage it keeps every other record.
func TestCorruptMiddleOfLastSegment(t *testing.T) {
	const n = 10
	for _, tc := range []struct {
		name string
		// build returns a log whose last segment holds n records, the
		// last `unsynced` of them written but not synced.
		build    func(t *testing.T) (*vfs.MemFS, []string)
		unsynced int
	}{
		{"closed log", func(t *testing.T) (*vfs.MemFS, []string) { return buildLog(t, Options{}, n) }, 0},
		{"synced then unsynced", func(t *testing.T) (*vfs.MemFS, []string) {
			fsys, paths, _ := buildTail(t, Options{}, n-3, 3)
			return fsys, paths
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, paths := tc.build(t)
			last := paths[len(paths)-1]
			data := readSegment(t, base, last)
			offs := recordOffsets(t, data)
			for k := 0; k < n; k++ {
				fsys := base.Crash()
				b := bytes.Clone(data)
				b[offs[k]+recordHeaderSize] ^= 1 // first payload byte
				writeSegment(t, fsys, last, b)
				before := snapshot(t, fsys)
				_, err := Open(fsys, testDir, Options{})
				var ce *CorruptionError
				if k >= n-tc.unsynced {
					// Not synced: a torn tail, cut with what follows it,
					// none of which was durable.
					if err != nil {
						t.Fatalf("record %d damaged: %v", k, err)
					}
					if got := checkPrefix(t, fsys, testDir, 0); got != k {
						t.Fatalf("record %d damaged: %d records after the cut", k, got)
					}
					continue
				}
				if !errors.As(err, &ce) || !ce.Last || ce.Torn || ce.Segment != last || ce.Offset != int64(offs[k]) || !errors.Is(err, ErrChecksum) {
					t.Fatalf("record %d damaged: open: %v, want corruption of the last segment at %d", k, err, offs[k])
				}
				if after := snapshot(t, fsys); after != before {
					t.Fatal("a refused open changed the log")
				}
				l, err := Open(fsys, testDir, Options{Salvage: true})
				if err != nil {
					t.Fatalf("record %d damaged: salvage: %v", k, err)
				}
				rep := l.Recovered()
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if !rep.Salvaged || rep.Records != n-1 || rep.RecordsLost != 1 || rep.RecordsCut != 0 || rep.NextPos != n+1 {
					t.Fatalf("record %d damaged: salvage report %+v", k, rep)
				}
				if poss := checkIntact(t, fsys, testDir); len(poss) != n-1 || slices.Contains(poss, Pos(k+1)) {
					t.Fatalf("record %d damaged: positions %v after salvage", k, poss)
				}
			}
		})
	}
}

func TestSealedSegmentCorruption(t *testing.T) {
	opts := Options{SegmentSize: 4 << 10}
	const n = 40
	base, paths := buildLog(t, opts, n)
	if len(paths) < 4 {
		t.Fatalf("only %d segments", len(paths))
	}
	target := paths[1]
	inTarget := len(recordOffsets(t, readSegment(t, base, target)))
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, fsys vfs.FS)
		cause  error
		offset int64
		lost   int64 // records a salvage marks lost
	}{
		{"flipped payload byte", func(t *testing.T, fsys vfs.FS) {
			b := readSegment(t, fsys, target)
			offs := recordOffsets(t, b)
			b[offs[1]+recordHeaderSize+3] ^= 0xff
			writeSegment(t, fsys, target, b)
		}, ErrChecksum, -1, 1},
		{"truncated sealed segment", func(t *testing.T, fsys vfs.FS) {
			b := readSegment(t, fsys, target)
			offs := recordOffsets(t, b)
			writeSegment(t, fsys, target, b[:offs[len(offs)-1]+10])
		}, ErrTruncated, -1, 1},
		{"bad header", func(t *testing.T, fsys vfs.FS) {
			b := readSegment(t, fsys, target)
			b[0] = 'X'
			writeSegment(t, fsys, target, b)
		}, ErrBadHeader, 0, 0},
		{"missing segment", func(t *testing.T, fsys vfs.FS) {
			if err := fsys.Remove(target); err != nil {
				t.Fatal(err)
			}
		}, ErrGap, 0, int64(inTarget)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := base.Crash()
			tc.damage(t, fsys)
			before := snapshot(t, fsys)
			_, err := Open(fsys, testDir, opts)
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Last || ce.Torn || ce.Segment != target || !errors.Is(err, tc.cause) || (tc.offset >= 0 && ce.Offset != tc.offset) {
				t.Fatalf("open: %v, want a sealed-segment CorruptionError in %s caused by %v", err, target, tc.cause)
			}
			if after := snapshot(t, fsys); after != before {
				t.Fatal("a refused open changed the log")
			}
			opts := opts
			opts.Salvage = true
			l, err := Open(fsys, testDir, opts)
			if err != nil {
				t.Fatalf("salvage: %v", err)
			}
			rep := l.Recovered()
			if !rep.Salvaged || len(rep.SegmentsRemoved) != 0 || rep.RecordsLost != tc.lost || rep.Records != n-tc.lost || rep.NextPos != n+1 {
				t.Fatalf("salvage report %+v", rep)
			}
			if _, err := l.Append(payload(n)); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if poss := checkIntact(t, fsys, testDir); len(poss) != int(n+1-tc.lost) {
				t.Fatalf("%d records after salvage, want %d", len(poss), n+1-tc.lost)
			}
		})
	}
}

// snapshot renders every segment's bytes, to tell whether a log changed.
func snapshot(t *testing.T, fsys vfs.FS) string {
	t.Helper()
	segs, err := listSegments(fsys, testDir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, s := range segs {
		b.WriteString(s.path)
		b.Write(readSegment(t, fsys, s.path))
	}
	return b.String()
}

// TestGapBeforeLastSegment: a sealed segment that lost its last records at
// a record boundary, or a missing sealed segment, leaves the last segment
// starting later than the records before it. The damage is in the sealed
// part: Open must refuse and name it, and leave the last segment alone.
func TestGapBeforeLastSegment(t *testing.T) {
	opts := Options{SegmentSize: 4 << 10}
	base, paths := buildLog(t, opts, 40)
	if len(paths) < 3 {
		t.Fatalf("only %d segments", len(paths))
	}
	sealed := paths[len(paths)-2]
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, fsys vfs.FS) int64 // returns the offset to blame
	}{
		{"sealed segment ends early", func(t *testing.T, fsys vfs.FS) int64 {
			b := readSegment(t, fsys, sealed)
			offs := recordOffsets(t, b)
			cut := offs[len(offs)-1]
			writeSegment(t, fsys, sealed, b[:cut])
			return int64(cut)
		}},
		{"sealed segment missing", func(t *testing.T, fsys vfs.FS) int64 {
			if err := fsys.Remove(sealed); err != nil {
				t.Fatal(err)
			}
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := base.Crash()
			off := tc.damage(t, fsys)
			before := snapshot(t, fsys)
			_, _, rerr := readAll(t, fsys, testDir)
			_, err := Open(fsys, testDir, opts)
			for _, err := range []error{rerr, err} {
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.Last || ce.Segment != sealed || ce.Offset != off || !errors.Is(err, ErrGap) {
					t.Fatalf("error %v, want a sealed-segment ErrGap in %s at %d", err, sealed, off)
				}
			}
			if after := snapshot(t, fsys); after != before {
				t.Fatal("a refused open changed the log")
			}
		})
	}
}

// TestLastSegmentHeader: a segment's header is durable before the segment
// has its name, so damage to the last segment's header is corruption,
// never a torn tail. Open refuses it; a salvage keeps every record.
func TestLastSegmentHeader(t *testing.T) {
	opts := Options{SegmentSize: 4 << 10}
	const n = 40
	base, paths := buildLog(t, opts, n)
	last := paths[len(paths)-1]
	data := readSegment(t, base, last)
	for i := 0; i < segmentHeaderSize; i++ {
		fsys := base.Crash()
		b := bytes.Clone(data)
		b[i] ^= 0x08
		writeSegment(t, fsys, last, b)
		_, err := Open(fsys, testDir, opts)
		var ce *CorruptionError
		if !errors.As(err, &ce) || !ce.Last || ce.Torn || ce.Segment != last || ce.Offset != 0 || !errors.Is(err, ErrBadHeader) {
			t.Fatalf("header byte %d flipped: open: %v, want a bad header of the last segment", i, err)
		}
		so := opts
		so.Salvage = true
		l, err := Open(fsys, testDir, so)
		if err != nil {
			t.Fatalf("header byte %d flipped: salvage: %v", i, err)
		}
		rep := l.Recovered()
		l.Close()
		if rep.Records != n || rep.RecordsLost != 0 || rep.RecordsCut != 0 || len(rep.SegmentsRemoved) != 0 {
			t.Fatalf("header byte %d flipped: salvage report %+v", i, rep)
		}
		if k := checkPrefix(t, fsys, testDir, n); k != n {
			t.Fatalf("header byte %d flipped: %d records after salvage", i, k)
		}
	}
}

// TestCrashCreatingSegment: a crash while a segment is created leaves at
// most its temporary file, which Open ignores and removes.
func TestCrashCreatingSegment(t *testing.T) {
	opts := Options{SegmentSize: 4 << 10}
	base, paths := buildLog(t, opts, 40)
	fsys := base.Crash()
	tmp := filepath.Join(testDir, segmentName(uint64(len(paths)+1))+tempSuffix)
	writeSegment(t, fsys, tmp, appendSegmentHeader(nil, 41)[:10])
	l, err := Open(fsys, testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep := l.Recovered(); rep.Cut || rep.Records != 40 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := fsys.Stat(tmp); err == nil {
		t.Fatal("the temporary file is still there")
	}
	if pos, err := l.Append(payload(40)); err != nil || pos != 41 {
		t.Fatalf("append: %d %v", pos, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrefix(t, fsys, testDir, 41)
}

// lostSoFar returns how many positions r read so far a salvage marked lost:
// records Repair found damaged and dropped (see Options.Salvage).
func (r *Reader) lostSoFar() int64 { return r.lost }
