package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// TestBinaryOutputRefusesTerminal: binary output to a terminal stdout is
// refused (exit 2, saying to redirect or use -o); to a file, or text, is
// not.
func TestBinaryOutputRefusesTerminal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	tests := []struct {
		name   string
		args   []string
		refuse bool
	}{
		{"simulate -o -", []string{"simulate", "--episodes", "1", "-o", "-"}, true},
		{"simulate -o FILE", []string{"simulate", "--episodes", "1", "-o", out + ".events"}, false},
		{"replay events", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--format", "events"}, true},
		{"replay events -o -", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--format", "events", "-o", "-"}, true},
		{"replay arrow", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--format", "arrow"}, true},
		{"replay arrow -o FILE", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--format", "arrow", "-o", out + ".arrows"}, false},
		{"replay jsonl", []string{"replay", goldenRoot, "--session", "golden-cartpole"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runEnv(t, func(e *Env) { e.StdoutTerminal, e.Width = true, 80 }, tc.args...)
			if !tc.refuse {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				return
			}
			if code != 2 || stdout != "" {
				t.Fatalf("exit %d, %d bytes on stdout; want 2 and none", code, len(stdout))
			}
			for _, want := range []string{"is binary and standard output is a terminal", "redirect it", "-o FILE"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

// TestIngestTerminalStdin: ingest from a terminal says on stderr what it
// waits for.
func TestIngestTerminalStdin(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	for _, args := range [][]string{{"ingest", "--out", root}, {"ingest", "--out", root, "-"}} {
		code, _, stderr := runEnv(t, func(e *Env) { e.StdinTerminal = true }, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		for _, want := range []string{"waiting for an event stream on standard input", "rlrec simulate -o - | rlrec ingest -", "Ctrl-D"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%q: stderr lacks %q:\n%s", args, want, stderr)
			}
		}
	}
	// Not from a pipe.
	if _, _, stderr := runEnv(t, nil, "ingest", "--out", root); strings.Contains(stderr, "waiting") {
		t.Errorf("ingest from a pipe printed %q", stderr)
	}
}

// TestIngestNotAStream: input that is no event stream is refused before
// ROOT is created.
func TestIngestNotAStream(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"short text", "hello\n", "claims 104 bytes but the input ends after 5"},
		{"README", string(readme), "is not an event stream"},
		{"JSON lines", `{"session_id":"s","step":0}` + "\n" + `{"session_id":"s","step":1}` + "\n", "is not an event stream"},
		{"CSV", "a,b,c\n1,2,3\n4,5,6\n7,8,9\n10,11,12\n13,14,15\n16,17,18\n19,20,21\n22,23,24\n25,26,27\n28,29,30\n31,32,33\n", "is not an event stream"},
		{"non-ASCII text", "été\n", "is not an event stream"},
	}
	for _, tc := range tests {
		for _, from := range []string{"file", "stdin"} {
			t.Run(tc.name+" from "+from, func(t *testing.T) {
				dir := t.TempDir()
				root := filepath.Join(dir, "root")
				args := []string{"ingest", "--out", root}
				setup := func(e *Env) { e.Stdin = strings.NewReader(tc.input) }
				if from == "file" {
					file := filepath.Join(dir, "input.txt")
					if err := os.WriteFile(file, []byte(tc.input), 0o644); err != nil {
						t.Fatal(err)
					}
					args = append(args, file)
					setup = nil
				}
				code, _, stderr := runEnv(t, setup, args...)
				if code != 1 {
					t.Fatalf("exit %d, want 1: %s", code, stderr)
				}
				for _, want := range []string{"is not an event stream", tc.want, root + " was not created"} {
					if !strings.Contains(stderr, want) {
						t.Errorf("stderr lacks %q:\n%s", want, stderr)
					}
				}
				if _, err := os.Stat(root); !os.IsNotExist(err) {
					t.Errorf("ingest left %s behind: %v", root, err)
				}
			})
		}
	}
	// An empty stream records nothing and creates nothing either.
	root := filepath.Join(t.TempDir(), "root")
	if code, stdout, stderr := runCmd(t, "ingest", "--out", root); code != 0 || !strings.Contains(stdout, "the stream is empty") {
		t.Errorf("empty stream: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("an empty stream left %s behind: %v", root, err)
	}
}

// TestProgress: on a terminal stderr, ingest from a pipe (no size known)
// shows the bytes read, and verify shows its progress per file; with
// stderr redirected neither does.
func TestProgress(t *testing.T) {
	stream := readTestStream(t)
	terminal := func(e *Env) { e.IsTerminal = true; e.Stdin = bytes.NewReader(stream) }
	redirected := func(e *Env) { e.Stdin = bytes.NewReader(stream) }
	root := filepath.Join(t.TempDir(), "root")
	code, _, stderr := runEnv(t, terminal, "ingest", "--out", root, "-")
	if code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "ingesting standard input") || !strings.Contains(stderr, " B") {
		t.Errorf("ingest from a pipe shows no progress on a terminal: %q", stderr)
	}
	if _, _, stderr := runEnv(t, redirected, "ingest", "--out", filepath.Join(t.TempDir(), "r2"), "-"); stderr != "" {
		t.Errorf("ingest with stderr redirected printed %q", stderr)
	}
	code, _, stderr = runEnv(t, func(e *Env) { e.IsTerminal = true }, "verify", goldenRoot)
	if code != 0 {
		t.Fatalf("verify: exit %d: %s", code, stderr)
	}
	l, err := hive.List(vfs.OS(), goldenRoot)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "verifying "+goldenRoot) || !strings.Contains(stderr, fmt.Sprintf("/%d", len(l.Files))) || !strings.Contains(stderr, "files") {
		t.Errorf("verify shows no progress per file on a terminal: %q", stderr)
	}
	if _, _, stderr := runEnv(t, nil, "verify", goldenRoot); stderr != "" {
		t.Errorf("verify with stderr redirected printed %q", stderr)
	}
}
