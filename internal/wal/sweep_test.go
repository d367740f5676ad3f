package wal

// Damage sweeps: a bit flip at every offset of a small multi-segment log,
// and a truncation of each segment at every offset, each checked against
// what the damage did to the log: damage that only touches the unsynced
// tail is cut silently with no durable record lost; anything else is
// reported as corruption with the right segment and offset, and leaves
// the log alone; with salvage every record that is still intact is kept;
// nothing panics. The figures RELIABILITY.md quotes come from the long
// sweep.
//
// The normal run sweeps every 7th byte, one bit each, of two small logs.
// The long sweep flips each of the 8 bits of every byte and truncates at
// every byte, of four logs (no compression, S2, zstd, and a longer one):
//
//	RLREC_WAL_SWEEP=long go test ./internal/wal/ -run '^TestSweep' -v -timeout 2h
//
// It prints the figures per log and class with t.Log.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
)

// sweepEnv selects the long sweep when set to "long".
const sweepEnv = "RLREC_WAL_SWEEP"

func longSweep() bool { return os.Getenv(sweepEnv) == "long" }

// smallPayload returns a deterministic record of 1 to 200 bytes,
// compressible for even i.
func smallPayload(i int) []byte {
	rng := rand.New(rand.NewPCG(uint64(i), 11))
	b := make([]byte, 1+rng.IntN(200))
	for j := range b {
		if i%2 == 0 {
			b[j] = byte('a' + j%5)
		} else {
			b[j] = byte(rng.Uint32())
		}
	}
	return b
}

type sweepConfig struct {
	name    string
	opts    Options
	n, tail int // records synced, then written and not synced
}

func sweepConfigs() []sweepConfig {
	small := Options{SegmentSize: 1 << 10, MinCompressSize: 64}
	cs := []sweepConfig{
		// The last segment holds synced records, then the mark written
		// after the sync and unsynced ones.
		{"none", withCodec(small, CompressionNone), 30, 4},
		{"s2", withCodec(small, CompressionS2), 30, 4},
	}
	if longSweep() {
		cs = append(cs,
			sweepConfig{"zstd", withCodec(small, CompressionZstd), 30, 4},
			// The sync fills a segment: the last one holds the mark and
			// the unsynced records only.
			sweepConfig{"s2-long", withCodec(Options{SegmentSize: 2 << 10, MinCompressSize: 64}, CompressionS2), 120, 6})
	}
	return cs
}

func withCodec(o Options, c Compression) Options {
	o.Compression = c
	return o
}

type sweepFrame struct {
	start, end int
	record     bool // a record, not a mark
	pos        Pos
}

// sweepLog is a log to damage and what is known about it.
type sweepLog struct {
	cfg    sweepConfig
	base   *vfs.MemFS
	paths  []string
	data   [][]byte
	frames [][]sweepFrame
	synced []int // bytes of each segment synced before the crash
	all    []Pos // position of every record
}

func newSweepLog(t *testing.T, cfg sweepConfig) *sweepLog {
	base, paths, synced := buildTailOf(t, cfg.opts, smallPayload, cfg.n, cfg.tail)
	sl := &sweepLog{cfg: cfg, base: base, paths: paths}
	for _, p := range paths {
		b := readSegment(t, base, p)
		var fs []sweepFrame
		for off := segmentHeaderSize; off < len(b); {
			f, err := parseRecord(b, off, formatVersion)
			if err != nil {
				t.Fatalf("%s at %d: %v", p, off, err)
			}
			fr := sweepFrame{start: off, end: f.end, record: f.typ&kindMask == kindFull, pos: f.pos}
			if fr.record {
				sl.all = append(sl.all, f.pos)
			}
			fs = append(fs, fr)
			off = f.end
		}
		sl.data = append(sl.data, b)
		sl.frames = append(sl.frames, fs)
		sl.synced = append(sl.synced, synced[p])
	}
	last := len(paths) - 1
	if len(paths) < 3 || sl.synced[last] < segmentHeaderSize || sl.synced[last] >= len(sl.data[last]) {
		t.Fatalf("%s: want 3 segments or more and a last one with unsynced records; got %d segments, last %d bytes, %d synced",
			cfg.name, len(paths), len(sl.data[last]), sl.synced[last])
	}
	return sl
}

// frameAt returns the index of the frame of segment i holding off.
func (sl *sweepLog) frameAt(i, off int) int {
	fs := sl.frames[i]
	return sort.Search(len(fs), func(j int) bool { return fs[j].end > off })
}

// without returns every record's position but those of the frames of
// segment i from index j on (those with from <= index < to).
func (sl *sweepLog) without(i, from, to int) []Pos {
	drop := make(map[Pos]bool)
	for _, f := range sl.frames[i][from:to] {
		if f.record {
			drop[f.pos] = true
		}
	}
	var out []Pos
	for _, p := range sl.all {
		if !drop[p] {
			out = append(out, p)
		}
	}
	return out
}

// durable counts the records of the positions in lost that had been
// synced.
func (sl *sweepLog) durable(lost []Pos) int64 {
	last := len(sl.paths) - 1
	unsynced := make(map[Pos]bool)
	for _, f := range sl.frames[last] {
		if f.record && f.end > sl.synced[last] {
			unsynced[f.pos] = true
		}
	}
	n := int64(0)
	for _, p := range lost {
		if !unsynced[p] {
			n++
		}
	}
	return n
}

// expectation is what a damaged log must give.
type expectation struct {
	class string
	// corrupt: Open refuses with a CorruptionError at segment, offset;
	// otherwise it opens, cutting a torn tail at offset when torn.
	corrupt, torn bool
	segment       int
	offset        int
	kept          []Pos // records kept without salvage (when not corrupt)
	salvaged      []Pos // records kept with salvage
}

func (sl *sweepLog) expectFlip(i, off int) expectation {
	last := i == len(sl.paths)-1
	if off < segmentHeaderSize {
		return expectation{class: "flip: segment header", corrupt: true, segment: i, offset: 0, salvaged: sl.all}
	}
	j := sl.frameAt(i, off)
	f := sl.frames[i][j]
	if last && f.start >= sl.synced[i] {
		kept := sl.without(i, j, len(sl.frames[i]))
		return expectation{class: "flip: unsynced tail of the last segment", torn: true, segment: i, offset: f.start, kept: kept, salvaged: kept}
	}
	class := "flip: sealed segment"
	if last {
		class = "flip: synced part of the last segment"
	}
	return expectation{class: class, corrupt: true, segment: i, offset: f.start, salvaged: sl.without(i, j, j+1)}
}

func (sl *sweepLog) expectCut(i, off int) expectation {
	last := i == len(sl.paths)-1
	fs := sl.frames[i]
	if off < segmentHeaderSize {
		return expectation{class: "truncation: segment header", corrupt: true, segment: i, offset: 0, salvaged: sl.without(i, 0, len(fs))}
	}
	j := sl.frameAt(i, off)
	kept := sl.without(i, j, len(fs))
	boundary := fs[j].start == off
	switch {
	case last && off >= sl.synced[i]:
		return expectation{class: "truncation: unsynced tail of the last segment", torn: !boundary, segment: i, offset: fs[j].start, kept: kept, salvaged: kept}
	case last:
		// Nothing after the cut says what it took: a log that ends
		// there. Records synced are lost without a report.
		return expectation{class: "truncation: synced part of the last segment (cannot be told from a shorter log)", torn: !boundary, segment: i, offset: fs[j].start, kept: kept, salvaged: kept}
	case boundary && len(kept) == len(sl.all):
		return expectation{class: "truncation: sealed segment, only marks cut", kept: kept, salvaged: kept}
	case boundary:
		return expectation{class: "truncation: sealed segment, at a record boundary (a gap)", corrupt: true, segment: i, offset: off, salvaged: kept}
	}
	return expectation{class: "truncation: sealed segment, inside a record", corrupt: true, segment: i, offset: fs[j].start, salvaged: kept}
}

type sweepStat struct {
	cases    int
	outcomes map[string]int
	// durableLost counts synced records lost without salvage (silently:
	// corruption is refused and loses nothing), salvageLost those not
	// kept by a salvage (every one of them damaged: run checks that each
	// intact record is kept), unsyncedCut the unsynced records cut with
	// a torn tail.
	durableLost, salvageLost, unsyncedCut int64
}

// run applies damage to segment i and checks the outcome against want.
func (sl *sweepLog) run(t *testing.T, what string, i int, damaged []byte, want expectation, stats map[string]*sweepStat) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: panic: %v", what, p)
		}
	}()
	opts := sl.cfg.opts
	seg := sl.paths[want.segment]
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s (%s): %s", what, want.class, fmt.Sprintf(format, args...))
	}
	fsys := sl.base.Crash()
	writeSegment(t, fsys, sl.paths[i], damaged)
	before := snapshot(t, fsys)

	// The reader says the same as Repair.
	r, err := NewReader(fsys, testDir)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	rerr := r.Err()
	r.Close()
	var ce *CorruptionError
	switch {
	case want.corrupt || want.torn:
		if !errors.As(rerr, &ce) || ce.Segment != seg || ce.Offset != int64(want.offset) || ce.Torn != want.torn {
			fail("reader error %v, want torn=%v at %s:%d", rerr, want.torn, seg, want.offset)
		}
	case rerr != nil:
		fail("reader error %v, want none", rerr)
	}

	l, err := Open(fsys, testDir, opts)
	if want.corrupt {
		if !errors.As(err, &ce) || ce.Segment != seg || ce.Offset != int64(want.offset) || ce.Torn {
			fail("open: %v, want corruption at %s:%d", err, seg, want.offset)
		}
		if snapshot(t, fsys) != before {
			fail("a refused open changed the log")
		}
	} else {
		if err != nil {
			fail("open: %v", err)
		}
		rep := l.Recovered()
		l.Close()
		if rep.Cut != want.torn || rep.Torn != want.torn || rep.Salvaged || (want.torn && (rep.Segment != seg || rep.Offset != int64(want.offset))) {
			fail("report %+v", rep)
		}
		if got := sweepRead(t, fsys); !slices.Equal(got, want.kept) {
			fail("kept %v, want %v", got, want.kept)
		}
	}

	// With salvage, every record still intact is kept.
	fsys = sl.base.Crash()
	writeSegment(t, fsys, sl.paths[i], damaged)
	opts.Salvage = true
	l, err = Open(fsys, testDir, opts)
	if err != nil {
		fail("salvage: %v", err)
	}
	rep := l.Recovered()
	l.Close()
	if rep.Salvaged != want.corrupt {
		fail("salvage report %+v", rep)
	}
	got := sweepRead(t, fsys)
	if !slices.Equal(got, want.salvaged) {
		fail("salvage kept %v, want %v", got, want.salvaged)
	}

	st := stats[want.class]
	if st == nil {
		st = &sweepStat{}
		stats[want.class] = st
	}
	st.cases++
	if st.outcomes == nil {
		st.outcomes = make(map[string]int)
	}
	switch {
	case want.corrupt:
		st.outcomes["corruption at the right segment and offset, refused"]++
	case want.torn:
		st.outcomes["torn tail cut"]++
	default:
		st.outcomes["none: the log reads cleanly"]++
	}
	lost := func(kept []Pos) []Pos {
		var out []Pos
		for _, p := range sl.all {
			if !slices.Contains(kept, p) {
				out = append(out, p)
			}
		}
		return out
	}
	if !want.corrupt {
		l := lost(want.kept)
		st.durableLost += sl.durable(l)
		st.unsyncedCut += int64(len(l)) - sl.durable(l)
	}
	st.salvageLost += sl.durable(lost(want.salvaged))
}

// sweepRead returns the positions of the records of the log, checking
// each against smallPayload.
func sweepRead(t *testing.T, fsys vfs.FS) []Pos {
	t.Helper()
	r, err := NewReader(fsys, testDir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Pos
	for r.Next() {
		if !bytes.Equal(r.Record(), smallPayload(int(r.Pos()-1))) {
			t.Fatalf("record at %d differs", r.Pos())
		}
		out = append(out, r.Pos())
	}
	if r.Err() != nil {
		t.Fatalf("read after repair: %v", r.Err())
	}
	return out
}

func TestSweepBitFlips(t *testing.T) {
	step, bits := 7, 1
	if longSweep() {
		step, bits = 1, 8
	}
	for _, cfg := range sweepConfigs() {
		t.Run(cfg.name, func(t *testing.T) {
			sl := newSweepLog(t, cfg)
			stats := make(map[string]*sweepStat)
			offsets, size := 0, 0
			for i, b := range sl.data {
				size += len(b)
				for off := 0; off < len(b); off += step {
					offsets++
					for k := 0; k < bits; k++ {
						bit := k
						if bits == 1 {
							bit = off % 8
						}
						d := bytes.Clone(b)
						d[off] ^= 1 << bit
						sl.run(t, fmt.Sprintf("segment %d byte %d bit %d", i, off, bit), i, d, sl.expectFlip(i, off), stats)
					}
				}
			}
			logSweep(t, sl, fmt.Sprintf("bit flips: %d of %d bytes, %d bits each", offsets, size, bits), stats)
		})
	}
}

func TestSweepTruncations(t *testing.T) {
	step := 7
	if longSweep() {
		step = 1
	}
	for _, cfg := range sweepConfigs() {
		t.Run(cfg.name, func(t *testing.T) {
			sl := newSweepLog(t, cfg)
			stats := make(map[string]*sweepStat)
			offsets, size := 0, 0
			for i, b := range sl.data {
				size += len(b)
				for off := 0; off < len(b); off += step {
					offsets++
					sl.run(t, fmt.Sprintf("segment %d cut at %d", i, off), i, b[:off], sl.expectCut(i, off), stats)
				}
			}
			logSweep(t, sl, fmt.Sprintf("truncations: at %d of %d offsets", offsets, size), stats)
		})
	}
}

func logSweep(t *testing.T, sl *sweepLog, what string, stats map[string]*sweepStat) {
	var b strings.Builder
	fmt.Fprintf(&b, "log %q: %d segments, %d bytes (%d unsynced), %d records (%d unsynced); %s\n",
		sl.cfg.name, len(sl.paths), sumLen(sl.data), len(sl.data[len(sl.data)-1])-sl.synced[len(sl.synced)-1],
		len(sl.all), int64(len(sl.all))-sl.durable(sl.all), what)
	fmt.Fprintf(&b, "| damage | cases | reported | durable records lost without salvage | durable records destroyed, not kept by salvage (it keeps every intact one) | unsynced records cut |\n")
	classes := make([]string, 0, len(stats))
	for c := range stats {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		st := stats[c]
		var out []string
		for o, n := range st.outcomes {
			out = append(out, fmt.Sprintf("%s: %d", o, n))
		}
		sort.Strings(out)
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %d |\n", c, st.cases, strings.Join(out, "; "), st.durableLost, st.salvageLost, st.unsyncedCut)
	}
	t.Log(b.String())
}

func sumLen(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return n
}
