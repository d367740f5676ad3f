package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
)

// copyLogDir copies the files of a live log's directory, as the kernel
// holds them (page cache, mapped pending file included), into a new
// directory: what a SIGKILL of the process at this moment would leave.
func copyLogDir(t *testing.T, dir string, only ...string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == lockName {
			continue
		}
		if len(only) > 0 && !bytes.Contains([]byte(only[0]), []byte(e.Name())) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// unwrittenOpts keep appended records from the writer: it neither flushes
// by size nor by time unless asked.
var unwrittenOpts = Options{SyncInterval: time.Hour, FlushSize: 1 << 30, MaxPending: 1 << 20}

func openMapped(t *testing.T, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(vfs.OS(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Mapped() {
		t.Fatal("the log on the OS file system has no pending file")
	}
	return l
}

func checkRecords(t *testing.T, dir string, want [][]byte) {
	t.Helper()
	got, _, err := readAll(t, vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records after recovery, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d differs after recovery", i+1)
		}
	}
}

// TestPendingSurvivesKill: records appended and never written to a segment
// (the writer is idle) are found after the process's death, restored by
// Repair once, without duplicates, in order after the synced ones.
func TestPendingSurvivesKill(t *testing.T) {
	for _, tc := range []struct {
		name           string
		synced, unsent int
	}{
		{"none synced", 0, 50},
		{"some synced", 30, 40},
		{"all synced", 25, 0},
		{"both halves", 10, 300}, // more than a half's worth: the writer swaps
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := unwrittenOpts
			if tc.name == "both halves" {
				opts.MaxPending = 256 << 10
			}
			l := openMapped(t, dir, opts)
			defer l.Close()
			var want [][]byte
			for i := range tc.synced {
				want = append(want, payload(i))
				if _, err := l.Append(payload(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := tc.synced; i < tc.synced+tc.unsent; i++ {
				want = append(want, payload(i))
				if _, err := l.Append(payload(i)); err != nil {
					t.Fatal(err)
				}
			}
			killed := copyLogDir(t, dir)
			rep, err := Repair(vfs.OS(), killed, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name != "both halves" && rep.Restored != int64(tc.unsent) {
				t.Errorf("restored %d records, want %d", rep.Restored, tc.unsent)
			}
			if rep.NextPos != Pos(len(want)+1) {
				t.Errorf("next position %d after the restore, want %d", rep.NextPos, len(want)+1)
			}
			checkRecords(t, killed, want)
			// A second repair finds nothing more to restore.
			rep, err = Repair(vfs.OS(), killed, false, nil)
			if err != nil || rep.Restored != 0 {
				t.Fatalf("second repair: restored %d, %v", rep.Restored, err)
			}
			checkRecords(t, killed, want)
			// And the log takes appends after it.
			l2 := openMapped(t, killed, Options{})
			if pos, err := l2.Append([]byte("after")); err != nil || pos != Pos(len(want)+1) {
				t.Fatalf("append after the restore: %d, %v", pos, err)
			}
			if err := l2.Close(); err != nil {
				t.Fatal(err)
			}
			checkRecords(t, killed, append(want, []byte("after")))
		})
	}
}

// TestPendingAlsoWritten: a kill after the writer wrote a batch but before
// it emptied its half leaves the records in both places: none is
// restored twice.
func TestPendingAlsoWritten(t *testing.T) {
	dir := t.TempDir()
	l := openMapped(t, dir, unwrittenOpts)
	defer l.Close()
	var want [][]byte
	for i := range 40 {
		want = append(want, payload(i))
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	pending, err := os.ReadFile(filepath.Join(dir, PendingName))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	killed := copyLogDir(t, dir)
	if err := os.WriteFile(filepath.Join(killed, PendingName), pending, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Repair(vfs.OS(), killed, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Restored != 0 {
		t.Errorf("restored %d records the log already held", rep.Restored)
	}
	checkRecords(t, killed, want)
}

// TestPendingTornLog: a kill in the middle of the writer's write leaves a
// torn record at the end of the segment; Repair cuts it and restores it,
// and the rest, from the pending file.
func TestPendingTornLog(t *testing.T) {
	dir := t.TempDir()
	l := openMapped(t, dir, unwrittenOpts)
	defer l.Close()
	var want [][]byte
	for i := range 20 {
		want = append(want, payload(i))
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	pending, err := os.ReadFile(filepath.Join(dir, PendingName))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	killed := copyLogDir(t, dir)
	os.WriteFile(filepath.Join(killed, PendingName), pending, 0o644)
	seg := filepath.Join(killed, segmentName(1))
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the segment in the middle of its records, before any mark.
	if err := os.Truncate(seg, segmentHeaderSize+(st.Size()-segmentHeaderSize)/2); err != nil {
		t.Fatal(err)
	}
	rep, err := Repair(vfs.OS(), killed, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Torn || rep.Restored == 0 {
		t.Errorf("torn %v, restored %d: want a torn tail cut and its records restored", rep.Torn, rep.Restored)
	}
	checkRecords(t, killed, want)
}

// TestPendingOtherBoot: a pending file set up under another boot id (the
// machine restarted: the page cache it lived in is gone) is ignored.
func TestPendingOtherBoot(t *testing.T) {
	dir := t.TempDir()
	l := openMapped(t, dir, unwrittenOpts)
	defer l.Close()
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	killed := copyLogDir(t, dir)
	p := filepath.Join(killed, PendingName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[pendOffEpoch] ^= 1
	os.WriteFile(p, b, 0o644)
	rep, err := Repair(vfs.OS(), killed, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Restored != 0 {
		t.Errorf("restored %d records from another boot's pending file", rep.Restored)
	}
	checkRecords(t, killed, nil)
}

// TestPendingGap: pending records that do not continue the log (the
// segments lost records in between) are not restored.
func TestPendingGap(t *testing.T) {
	dir := t.TempDir()
	l := openMapped(t, dir, unwrittenOpts)
	defer l.Close()
	for i := range 5 {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	killed := copyLogDir(t, dir)
	p := filepath.Join(killed, PendingName)
	b, _ := os.ReadFile(p)
	// The half's records claim to start at position 3 of an empty log.
	binary.NativeEndian.PutUint64(b[pendOffState:], 3)
	os.WriteFile(p, b, 0o644)
	rep, err := Repair(vfs.OS(), killed, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Restored != 0 {
		t.Errorf("restored %d records after a gap", rep.Restored)
	}
}

// TestPendingOversize: a record larger than a half goes through the heap,
// and Append returns only once it is written to its segment.
func TestPendingOversize(t *testing.T) {
	dir := t.TempDir()
	opts := unwrittenOpts
	opts.MaxPending = 8 << 10
	l := openMapped(t, dir, opts)
	defer l.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	want := [][]byte{payload(1), big, payload(2)}
	for _, r := range want {
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	killed := copyLogDir(t, dir)
	if _, err := Repair(vfs.OS(), killed, false, nil); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, killed, want)
}

// TestPendingChunkedBatch: a batch of several chunks (writeBatch) is
// written whole and in order, with the right positions, across segment
// boundaries and with a record larger than a chunk; the writer's buffer
// stays the size of a chunk or of the largest record framed, not of the
// batch.
func TestPendingChunkedBatch(t *testing.T) {
	sizes := []int{100, 70 << 10, 3, scratchChunk - recordHeaderSize, 1, scratchChunk + 5000, 200 << 10, 90 << 10, 5}
	for i := range 300 {
		sizes = append(sizes, 1000+37*i)
	}
	total := 0
	for _, n := range sizes {
		total += recordHeaderSize + n
	}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"s2", Options{Compression: CompressionS2}},
		{"none", Options{Compression: CompressionNone}},
		{"small segments", Options{Compression: CompressionS2, SegmentSize: 300 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := tc.opts
			opts.SyncInterval, opts.FlushSize, opts.MaxPending = time.Hour, 1<<30, 4<<20
			l := openMapped(t, dir, opts)
			var want [][]byte
			for i, n := range sizes {
				p := bytes.Repeat([]byte{byte(i), byte(i >> 8), 'x'}, n/3+1)[:n]
				want = append(want, p)
				if _, err := l.Append(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			bound := scratchChunk
			for _, n := range sizes {
				bound = max(bound, recordHeaderSize+l.enc.maxStored(n))
			}
			if c := cap(l.out); c > bound || total <= 2*scratchChunk {
				t.Errorf("the writer's buffer holds %d bytes for a batch of %d; want at most %d", c, total, bound)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, poss, err := readAll(t, vfs.OS(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d records read, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) || poss[i] != Pos(i+1) {
					t.Fatalf("record %d (at position %d) differs from the one appended", i+1, poss[i])
				}
			}
		})
	}
}
