package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputFlags: every command that writes a file takes -o and --out
// alike, refuses an existing file unless --force, and ends with a
// one-line summary on stderr.
func TestOutputFlags(t *testing.T) {
	dir := t.TempDir()
	existing := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		args    func(out string) []string
		file    string
		summary string // the final line on stderr
	}{
		{"replay", func(out string) []string {
			return []string{"replay", goldenRoot, "--session", "golden-cartpole", "--format", "arrow"}
		}, "replay.arrow", "replay: wrote "},
		{"simulate", func(out string) []string {
			return []string{"simulate", "--episodes", "1", "--envs", "1", "--reproducible"}
		}, "sim.pb", "simulated 1 session of cartpole"},
		{"stats", func(out string) []string {
			return []string{"stats", goldenRoot, "--session", "golden-cartpole"}
		}, "stats.parquet", "stats: 1 recording of "},
	} {
		for _, spelling := range []string{"-o", "--out"} {
			t.Run(tc.name+" "+spelling, func(t *testing.T) {
				out := existing(spelling + tc.file)
				args := append(tc.args(out), spelling, out)
				code, _, errOut := runCmd(t, args...)
				if code != 1 || !strings.Contains(errOut, "--force") {
					t.Fatalf("existing file: exit %d, want 1 naming --force; stderr %q", code, errOut)
				}
				if b, _ := os.ReadFile(out); string(b) != "keep me" {
					t.Fatalf("the existing file was changed")
				}
				code, _, errOut = runCmd(t, append(args, "--force")...)
				if code != 0 {
					t.Fatalf("--force: exit %d: %s", code, errOut)
				}
				if !strings.Contains(errOut, tc.summary) {
					t.Errorf("stderr lacks the summary %q: %q", tc.summary, errOut)
				}
				if b, _ := os.ReadFile(out); string(b) == "keep me" || len(b) == 0 {
					t.Errorf("--force did not replace the file")
				}
			})
		}
	}
}
