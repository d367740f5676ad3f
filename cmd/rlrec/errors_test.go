package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/recorder"
)

// doubled finds a command name repeated as the next prefix
// ("rlrec verify: verify: ...").
var doubled = regexp.MustCompile(`rlrec (\w+): (\w+): `)

// TestErrorWording: errors say "1 problem", not "1 problems"; a held lock
// is another process's, not "another user"; no message repeats its
// command's name as a prefix.
func TestErrorWording(t *testing.T) {
	dir := t.TempDir()
	oneProblem := filepath.Join(dir, "one-problem")
	roottest.CopyDir(t, goldenRoot, oneProblem)
	parts, _ := filepath.Glob(filepath.Join(oneProblem, "sessions", "*", "*", "part-00000.parquet"))
	if len(parts) == 0 {
		t.Fatal("no sessions file in the golden ROOT")
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(parts[0]), ".part-00001.parquet.tmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	stream := filepath.Join(dir, "s.events")
	if code, _, errOut := runCmd(t, "simulate", "--envs", "2", "--episodes", "2", "-o", stream); code != 0 {
		t.Fatal(errOut)
	}
	twice := filepath.Join(dir, "twice")
	if code, _, errOut := runCmd(t, "ingest", "--out", twice, stream); code != 0 {
		t.Fatal(errOut)
	}
	locked := filepath.Join(dir, "locked")
	rec, err := recorder.Open(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(context.Background())

	tests := []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"verify one problem", []string{"verify", oneProblem}, []string{"1 problem found"}, []string{"1 problems"}},
		{"ingest locked", []string{"ingest", "--out", locked, stream}, []string{"is in use: another process is recording into it", "LOCK", "wait for it to finish"}, []string{"another user", "recorder: "}},
		{"recover locked", []string{"recover", locked}, []string{"is in use: another process is recording into it"}, []string{"another user"}},
		{"demo locked", []string{"demo", "--out", locked}, []string{"is in use: another process"}, []string{"another user"}},
		{"ingest twice", []string{"ingest", "--out", twice, stream}, []string{"1 recording of the stream already in " + twice + " was not recorded again"}, []string{"1 recordings"}},
		{"verify missing", []string{"verify", filepath.Join(dir, "nope")}, []string{"does not exist"}, []string{"verify: not"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tc.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(errOut, w) {
					t.Errorf("stderr holds %q:\n%s", w, errOut)
				}
			}
			for _, m := range doubled.FindAllStringSubmatch(errOut, -1) {
				if m[1] == m[2] {
					t.Errorf("doubled prefix %q:\n%s", m[0], errOut)
				}
			}
		})
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		word string
		want string
	}{
		{0, "problem", "0 problems"}, {1, "problem", "1 problem"}, {2, "batch", "2 batches"}, {1, "batch", "1 batch"}, {3, "event", "3 events"},
	} {
		if got := count(tc.n, tc.word); got != tc.want {
			t.Errorf("count(%d, %q) = %q, want %q", tc.n, tc.word, got, tc.want)
		}
	}
}
