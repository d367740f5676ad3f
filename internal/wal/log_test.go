package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
)

const testDir = "root/_rlrec/log"

// payload returns a deterministic record for i: compressible for even i,
// random for odd i, of varying sizes.
func payload(i int) []byte {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	n := rng.IntN(3000)
	b := make([]byte, n)
	if i%2 == 0 {
		for j := range b {
			b[j] = byte(j % 7)
		}
	} else {
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
	}
	return append(b, fmt.Sprintf("#%d", i)...)
}

func readAll(t *testing.T, fsys vfs.FS, dir string) ([][]byte, []Pos, error) {
	t.Helper()
	r, err := NewReader(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs [][]byte
	var poss []Pos
	for r.Next() {
		recs = append(recs, bytes.Clone(r.Record()))
		poss = append(poss, r.Pos())
	}
	return recs, poss, r.Err()
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		n    int
	}{
		{"default", Options{}, 200},
		{"none", Options{Compression: CompressionNone}, 200},
		{"zstd", Options{Compression: CompressionZstd}, 200},
		{"small segments", Options{SegmentSize: 8 << 10}, 300},
		{"tiny segments one record each", Options{SegmentSize: 64}, 50},
		{"tiny pending bound", Options{MaxPending: 4 << 10, FlushSize: 1 << 10}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			l, err := Open(fsys, testDir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.n; i++ {
				pos, err := l.Append(payload(i))
				if err != nil {
					t.Fatal(err)
				}
				if pos != Pos(i+1) {
					t.Fatalf("append %d: pos %d, want %d", i, pos, i+1)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			recs, poss, err := readAll(t, fsys, testDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tc.n {
				t.Fatalf("read %d records, want %d", len(recs), tc.n)
			}
			for i, r := range recs {
				if !bytes.Equal(r, payload(i)) || poss[i] != Pos(i+1) {
					t.Fatalf("record %d (pos %d) differs", i, poss[i])
				}
			}
			// Reopen and continue.
			l, err = Open(fsys, testDir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if l.Recovered().Cut {
				t.Fatalf("clean log was cut: %+v", l.Recovered())
			}
			pos, err := l.Append(payload(tc.n))
			if err != nil {
				t.Fatal(err)
			}
			if pos != Pos(tc.n+1) {
				t.Fatalf("after reopen: pos %d, want %d", pos, tc.n+1)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			recs, _, err = readAll(t, fsys, testDir)
			if err != nil || len(recs) != tc.n+1 || !bytes.Equal(recs[tc.n], payload(tc.n)) {
				t.Fatalf("after reopen read %d records, err %v", len(recs), err)
			}
		})
	}
}

func TestWaitSyncedSurvivesCrash(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := Open(fsys, testDir, Options{SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 10; i++ {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(payload(10)); err != nil {
		t.Fatal(err)
	}
	crashed := fsys.Crash()
	recs, _, err := readAll(t, crashed, testDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 10 {
		t.Fatalf("after crash %d records, want the 10 synced", len(recs))
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatal(err)
	}
}

// TestSyncLeavesNoWish: a Sync that raced with a flush already under way
// must not leave a wish behind that syncs the next record nobody waits
// for (which made a later unsynced tail look synced). The race needs a
// flush running while Sync asks, so writes are slowed to widen it.
func TestSyncLeavesNoWish(t *testing.T) {
	l, err := Open(slowFS{vfs.NewMem()}, testDir, Options{SyncInterval: time.Hour, FlushSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	i := 0
	for round := 0; round < 200; round++ {
		for k := 0; k < 3; k++ {
			if _, err := l.Append(payload(i % 16)); err != nil {
				t.Fatal(err)
			}
			i++
		}
		if err := l.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		synced := l.SyncedPos()
		if _, err := l.Append(payload(i % 16)); err != nil {
			t.Fatal(err)
		}
		i++
		waitWritten(t, l)
		if got := l.SyncedPos(); got != synced {
			t.Fatalf("round %d: a record nobody waited for was synced (synced %d, was %d)", round, got, synced)
		}
	}
}

// slowFS is a file system whose files take 100 µs per write and sync.
type slowFS struct{ vfs.FS }

func (s slowFS) Create(name string) (vfs.File, error) {
	f, err := s.FS.Create(name)
	return slowFile{f}, err
}

func (s slowFS) OpenAppend(name string) (vfs.File, error) {
	f, err := s.FS.OpenAppend(name)
	return slowFile{f}, err
}

type slowFile struct{ vfs.File }

func (f slowFile) Write(p []byte) (int, error) {
	time.Sleep(100 * time.Microsecond)
	return f.File.Write(p)
}

func (f slowFile) Sync() error {
	time.Sleep(100 * time.Microsecond)
	return f.File.Sync()
}

func TestOSLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ROOT", "_rlrec", "log")
	l, err := Open(vfs.OS(), dir, Options{SegmentSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(vfs.OS(), dir, Options{}); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	for i := 0; i < 100; i++ {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.SyncedPos() != 100 || l.LastPos() != 100 {
		t.Fatalf("synced %d last %d", l.SyncedPos(), l.LastPos())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if k := checkPrefix(t, vfs.OS(), dir, 100); k != 100 {
		t.Fatalf("%d records", k)
	}
}
