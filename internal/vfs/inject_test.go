package vfs

import (
	"errors"
	"testing"
)

func TestWithErrors(t *testing.T) {
	// The script runs 3 writes, 2 syncs, 1 rename, then a syncdir.
	script := func(fsys FS) []error {
		var errs []error
		f, err := fsys.Create("a")
		if err != nil {
			return []error{err}
		}
		for i := 0; i < 3; i++ {
			_, err := f.Write([]byte("abcd"))
			errs = append(errs, err)
			if i < 2 {
				errs = append(errs, f.Sync())
			}
		}
		f.Close()
		errs = append(errs, fsys.Rename("a", "b"), fsys.SyncDir("."))
		return errs
	}
	// script's operation order in errs: w s w s w rename syncdir
	for _, tc := range []struct {
		name  string
		inj   *Trigger
		fail  []int // indexes of errs that must fail
		fired int64 // errors injected, counting the unchecked Close
	}{
		{"never", FailAt(0), nil, 0},
		{"second write", FailAt(2, OpWrite), []int{2}, 1},
		{"first sync", FailAt(1, OpSync), []int{1}, 1},
		{"second sync", FailAt(2, OpSync), []int{3}, 1},
		{"rename", FailAt(1, OpRename), []int{5}, 1},
		{"every write from the second", FailFrom(2, OpWrite), []int{2, 4}, 2},
		{"every op from the 6th of any kind", FailFrom(6), []int{4, 5, 6}, 4}, // write, close, rename, syncdir
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMem()
			errs := script(WithErrors(m, tc.inj))
			if len(errs) != 7 {
				t.Fatalf("script stopped early: %v", errs)
			}
			for i, err := range errs {
				want := false
				for _, f := range tc.fail {
					want = want || f == i
				}
				if (err != nil) != want {
					t.Fatalf("op %d: err %v, want failure %v", i, err, want)
				}
				if err != nil && !errors.Is(err, ErrInjected) {
					t.Fatalf("op %d: %v does not wrap ErrInjected", i, err)
				}
			}
			if tc.inj.Fired() != tc.fired {
				t.Fatalf("fired %d, want %d", tc.inj.Fired(), tc.fired)
			}
		})
	}
}

func TestShortWrite(t *testing.T) {
	m := NewMem()
	fsys := WithErrors(m, FailAt(1, OpWrite).ShortWrites())
	f, _ := fsys.Create("a")
	n, err := f.Write([]byte("abcdef"))
	if n != 3 || !errors.Is(err, ErrInjected) {
		t.Fatalf("short write = %d, %v", n, err)
	}
	f.Close()
	if s, _ := readFile(m, "a"); s != "abc" {
		t.Fatalf("file holds %q", s)
	}
}

func TestTriggerCounts(t *testing.T) {
	tr := FailAt(0, OpSync)
	fsys := WithErrors(NewMem(), tr)
	f, _ := fsys.Create("a")
	f.Write([]byte("x"))
	f.Sync()
	f.Sync()
	if tr.Seen() != 2 {
		t.Fatalf("seen %d syncs, want 2", tr.Seen())
	}
}
