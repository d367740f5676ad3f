package wal

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
)

// TestExpected: what only the log's expectation, outside the log
// directory, can tell is gone (the manifest with the oldest segment, the
// whole directory) is named by CheckExpected and refused by Repair, and a
// salvage recovers what is left; a complete log passes.
func TestExpected(t *testing.T) {
	opts := Options{SegmentSize: 4 << 10}
	base := vfs.NewMem()
	l, err := Open(base, testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := l.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(base, testDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	cases := []struct {
		name   string
		remove []string
		want   error // nil: nothing missing
		lost   int   // segments lost
	}{
		{name: "complete"},
		{name: "manifest only", remove: []string{filepath.Join(testDir, ManifestName)}},
		{name: "manifest and oldest segment", remove: []string{filepath.Join(testDir, ManifestName), segs[0].path}, want: ErrSegmentMissing, lost: 1},
		{name: "manifest and newest segment", remove: []string{filepath.Join(testDir, ManifestName), segs[len(segs)-1].path}, want: ErrSegmentMissing, lost: 1},
		{name: "log directory", remove: []string{testDir}, want: ErrSegmentMissing, lost: len(segs)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := base.Crash()
			for _, r := range tc.remove {
				if err := removeAll(fsys, r); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckExpected(fsys, testDir)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CheckExpected: %v, want %v", err, tc.want)
			}
			if tc.want == nil {
				return
			}
			if err := fsys.MkdirAll(testDir); err != nil {
				t.Fatal(err)
			}
			if _, err := Repair(fsys, testDir, false, nil); !errors.Is(err, tc.want) {
				t.Fatalf("Repair: %v, want %v", err, tc.want)
			}
			rep, err := Repair(fsys, testDir, true, nil)
			if err != nil {
				t.Fatalf("salvage: %v", err)
			}
			if len(rep.SegmentsMissing) != tc.lost {
				t.Errorf("salvage names %d segments missing (%v), want %d", len(rep.SegmentsMissing), rep.SegmentsMissing, tc.lost)
			}
		})
	}
}

// removeAll removes name, a file or a directory with its files.
func removeAll(fsys vfs.FS, name string) error {
	entries, err := fsys.ReadDir(name)
	if err == nil {
		for _, e := range entries {
			if err := fsys.Remove(filepath.Join(name, e.Name())); err != nil {
				return err
			}
		}
	}
	return fsys.Remove(name)
}

func FuzzExpectation(f *testing.F) {
	f.Add(logExpectation{m: manifest{first: 1, last: 1}}.encode())
	f.Add(logExpectation{m: manifest{first: 7, last: 12}, pending: true}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeExpectation(b)
		if err != nil {
			return
		}
		if string(e.encode()) != string(b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, e, e.encode())
		}
	})
}
