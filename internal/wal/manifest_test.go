package wal

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
)

// TestMissingSegment: a log whose oldest, a middle or newest segment was
// deleted is refused, naming the file and leaving the log unchanged (the
// oldest and the newest leave no gap in the positions: only the manifest
// tells). A salvage keeps every record of the other segments, reports the
// file missing, and leaves a log that opens cleanly. The log's oldest
// segments were removed in the normal course first (RemoveBefore), so
// that the oldest left is not segment 1.
func TestMissingSegment(t *testing.T) {
	opts := Options{SegmentSize: 4 << 10}
	const n = 60
	base := vfs.NewMem()
	l, err := Open(base, testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	var poss []Pos
	for i := range n {
		p, err := l.Append(payload(i))
		if err != nil {
			t.Fatal(err)
		}
		poss = append(poss, p)
	}
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveBefore(poss[15]); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(base, testDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 4 || segs[0].num == 1 {
		t.Fatalf("segments %v: want 4 or more, the first ones removed", segs)
	}
	all, allPos, err := readAll(t, base, testDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		seg  int // index in segs
	}{{"oldest", 0}, {"middle", len(segs) / 2}, {"newest", len(segs) - 1}} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := base.Crash()
			gone := segs[tc.seg]
			// The records the deleted segment held.
			first, _, err := headerFirst(fsys, gone.path)
			if err != nil {
				t.Fatal(err)
			}
			end := Pos(1 << 62)
			if tc.seg+1 < len(segs) {
				if end, _, err = headerFirst(fsys, segs[tc.seg+1].path); err != nil {
					t.Fatal(err)
				}
			}
			if err := fsys.Remove(gone.path); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, fsys)
			_, err = Open(fsys, testDir, opts)
			// A segment between two others leaves a gap in the
			// positions; at either end only the manifest tells.
			cause := ErrSegmentMissing
			if tc.seg > 0 && tc.seg < len(segs)-1 {
				cause = ErrGap
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, cause) || ce.Segment != gone.path ||
				!strings.Contains(err.Error(), filepath.Base(gone.path)) || ce.Last != (tc.seg == len(segs)-1) {
				t.Fatalf("open: %v; want %v naming %s", err, cause, gone.path)
			}
			if snapshot(t, fsys) != before {
				t.Fatal("a refused open changed the log")
			}

			sopts := opts
			sopts.Salvage = true
			l, err := Open(fsys, testDir, sopts)
			if err != nil {
				t.Fatalf("salvage: %v", err)
			}
			rep := l.Recovered()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if !rep.Cut || !rep.Salvaged || (cause == ErrSegmentMissing) != (len(rep.SegmentsMissing) == 1 && rep.SegmentsMissing[0] == gone.path) {
				t.Fatalf("salvage report %+v: want the missing %s", rep, gone.path)
			}
			got, gotPos, err := readAll(t, fsys, testDir)
			if err != nil {
				t.Fatalf("after the salvage: %v", err)
			}
			// Every record outside the deleted segment, in order.
			k := 0
			for i, p := range allPos {
				if p >= first && p < end {
					continue
				}
				if k >= len(got) || gotPos[k] != p || string(got[k]) != string(all[i]) {
					t.Fatalf("after the salvage, record %d: want position %d", k, p)
				}
				k++
			}
			if k != len(got) {
				t.Fatalf("after the salvage %d records, want %d", len(got), k)
			}
			if _, err := Open(fsys, testDir, opts); err != nil {
				t.Fatalf("open after the salvage: %v", err)
			}
		})
	}
	t.Run("log of an earlier version", func(t *testing.T) {
		// No manifest and no expectation: the deleted segment cannot be
		// told from one removed in the normal course, as before; Open
		// writes both.
		fsys := base.Crash()
		for _, name := range []string{filepath.Join(testDir, ManifestName), expectPath(testDir)} {
			if err := fsys.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
		if err := fsys.Remove(segs[0].path); err != nil {
			t.Fatal(err)
		}
		l, err := Open(fsys, testDir, opts)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		m, ok, err := readManifest(fsys, testDir)
		if err != nil || !ok || m.first != segs[1].num {
			t.Fatalf("manifest %+v %v %v: want one from segment %d", m, ok, err, segs[1].num)
		}
	})
}

// headerFirst returns the first position of the segment at path.
func headerFirst(fsys vfs.FS, path string) (Pos, uint32, error) {
	v, first, err := readHeader(fsys, path, make([]byte, segmentHeaderSize))
	return first, v, err
}

// TestManifestCodec: a manifest decodes to what was encoded, and any
// damage to it is refused.
func TestManifestCodec(t *testing.T) {
	m := manifest{first: 7, last: 12}
	b := m.encode()
	if got, err := decodeManifest(b); err != nil || got != m {
		t.Fatalf("%+v, %v", got, err)
	}
	for i := range b {
		d := append([]byte{}, b...)
		d[i] ^= 0x10
		if _, err := decodeManifest(d); err == nil {
			t.Errorf("a flip of byte %d was not refused", i)
		}
	}
	if _, err := decodeManifest(b[:len(b)-1]); err == nil {
		t.Error("a short manifest was not refused")
	}
	if _, err := decodeManifest(manifest{first: 3, last: 2}.encode()); err == nil {
		t.Error("a manifest whose last is before its first was not refused")
	}
}

// FuzzManifest: any bytes are refused or decode to a manifest that
// encodes to them.
func FuzzManifest(f *testing.F) {
	f.Add(manifest{first: 1, last: 1}.encode())
	f.Add(manifest{first: 7, last: 12}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			return
		}
		if string(m.encode()) != string(b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, m, m.encode())
		}
	})
}
