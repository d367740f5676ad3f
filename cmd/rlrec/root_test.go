package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotARoot: verify, recover, inspect and replay refuse a path that is
// no ROOT (exit 1, saying what a ROOT is), and recover never creates a
// directory.
func TestNotARoot(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	other := filepath.Join(dir, "other")
	file := filepath.Join(dir, "file.txt")
	for _, d := range []string{empty, filepath.Join(other, "photos")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A ROOT that holds only its state directory is one: a recorder
	// created it and recorded nothing yet.
	fresh := filepath.Join(dir, "fresh")
	if err := os.MkdirAll(filepath.Join(fresh, "_rlrec"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "typo")
	paths := []struct {
		name, path, want string
	}{
		{"missing", missing, "does not exist"},
		{"empty", empty, "is an empty directory, not an rlrec ROOT"},
		{"other directory", other, "is not an rlrec ROOT"},
		{"file", file, "is a file, not a ROOT directory"},
		{"table directory", filepath.Join(goldenRoot, "steps"), "inside the ROOT " + goldenRoot + ", not a ROOT itself"},
		{"partition directory", filepath.Join(goldenRoot, "sessions", "session_id=golden-cartpole"), "inside the ROOT " + goldenRoot},
	}
	commands := [][]string{
		{"verify"},
		{"recover"},
		{"inspect"},
		{"replay", "--session", "s"},
	}
	for _, p := range paths {
		for _, c := range commands {
			t.Run(c[0]+" "+p.name, func(t *testing.T) {
				args := append(append([]string(nil), c...), p.path)
				code, out, errOut := runCmd(t, args...)
				if code != 1 {
					t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, out, errOut)
				}
				for _, want := range []string{p.want, "a ROOT is a directory", "_rlrec/", "steps/"} {
					if !strings.Contains(errOut, want) {
						t.Errorf("stderr lacks %q:\n%s", want, errOut)
					}
				}
				if strings.Contains(out, "checked 0 files") {
					t.Errorf("verified a path that is no ROOT:\n%s", out)
				}
			})
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("recover created %s: %v", missing, err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("recover wrote into the empty directory: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(other, "_rlrec")); !os.IsNotExist(err) {
		t.Errorf("recover wrote into a directory that is no ROOT: %v", err)
	}
	if code, out, errOut := runCmd(t, "verify", fresh); code != 0 || !strings.Contains(out, "checked 0 files") {
		t.Errorf("verify of a ROOT with only _rlrec/: exit %d\n%s%s", code, out, errOut)
	}
}
