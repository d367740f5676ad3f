package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeShellLine is one command line of a README shell block.
type readmeShellLine struct {
	// block is the index of its fenced block among the README's sh blocks.
	block int
	// text is the line without its trailing comment.
	text string
	// background is set for a line that ends in "&" (a server), given
	// without the "&".
	background bool
}

// readmeRlrecLines returns the command lines of the README's ```sh blocks
// that run rlrec alone (every command of a pipeline is rlrec), in order.
// Lines of other commands (git, go, pip, python3, duckdb, bash) need a
// network, a toolchain or DuckDB's CLI; their own tests are elsewhere
// (python/tests/test_readme.py, interop).
func readmeRlrecLines(t *testing.T, readme string) []readmeShellLine {
	t.Helper()
	var lines []readmeShellLine
	block, in := -1, false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, block = true, block+1
			continue
		case in && strings.TrimSpace(line) == "```":
			in = false
			continue
		case !in:
			continue
		}
		text := strings.TrimSpace(stripShellComment(line))
		bg := false
		if rest, ok := strings.CutSuffix(text, "&"); ok && !strings.HasSuffix(rest, "&") {
			text, bg = strings.TrimSpace(rest), true
		}
		if text == "" || !allRlrec(text) {
			continue
		}
		lines = append(lines, readmeShellLine{block: block, text: text, background: bg})
	}
	return lines
}

// stripShellComment cuts a "# ..." comment that starts after white space
// outside quotes.
func stripShellComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// allRlrec reports whether every command of the pipeline text is rlrec.
func allRlrec(text string) bool {
	for _, cmd := range strings.Split(text, "|") {
		if f := strings.Fields(cmd); len(f) == 0 || f[0] != "rlrec" {
			return false
		}
	}
	return true
}

// buildRlrec builds this command into a temporary directory and returns
// the directory.
func buildRlrec(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "rlrec"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/rlrec: %v\n%s", err, out)
	}
	return dir
}

// freeLoopbackAddr returns a loopback address with a port free now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestReadmeExamples runs the README's rlrec command lines, in order, as
// a user would after installing: in a fresh directory, with the built
// rlrec on PATH, so the first is 'rlrec demo' and every later one runs on
// the ROOT it made (rlrec-demo) or on what an earlier line made. Each must
// exit 0, and each 'rlrec copy' must copy something. A line ending in "&"
// is a server: it runs in the background with free ports in place of
// 7465 (and its metrics port) and is stopped with SIGTERM at the end of
// its block, when it must exit 0 too. Only those ports differ from the
// text.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := readmeRlrecLines(t, string(readme))
	if len(lines) < 8 || lines[0].text != "rlrec demo" {
		t.Fatalf("the README's rlrec lines should start with 'rlrec demo' and show the CLI; got %d lines, first %q", len(lines), lines[0].text)
	}
	bin := buildRlrec(t)
	work := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+work, "NO_COLOR=1")
	// A failure bound only: the lines finish long before it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	type server struct {
		cmd    *exec.Cmd
		text   string
		stderr *bytes.Buffer
	}
	var servers []server
	stop := func() {
		for _, s := range servers {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			err := s.cmd.Wait()
			if err != nil {
				t.Errorf("%s: %v after SIGTERM\n%s", s.text, err, s.stderr)
			}
		}
		servers = nil
	}
	defer stop()
	addr := ""
	for i, l := range lines {
		if i > 0 && l.block != lines[i-1].block {
			stop()
			addr = ""
		}
		text := l.text
		if strings.Contains(text, "127.0.0.1:7465") || (l.background && strings.HasPrefix(text, "rlrec serve")) {
			if addr == "" {
				addr = freeLoopbackAddr(t)
			}
			text = strings.ReplaceAll(text, "127.0.0.1:7465", addr)
		}
		if l.background {
			if strings.HasPrefix(text, "rlrec serve") {
				if !strings.Contains(text, "--listen") {
					text += " --listen " + addr
				}
				if !strings.Contains(text, "--metrics-listen") {
					text += " --metrics-listen " + freeLoopbackAddr(t)
				}
			}
			cmd := exec.CommandContext(ctx, "bash", "-c", "exec "+text)
			cmd.Dir, cmd.Env = work, env
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatalf("%s: %v", l.text, err)
			}
			servers = append(servers, server{cmd, l.text, &stderr})
			t.Logf("started %s", l.text)
			continue
		}
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", text)
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("README line %q: %v\nstdout:\n%s\nstderr:\n%s", l.text, err, tail(stdout.String()), stderr.String())
		}
		if strings.HasPrefix(text, "rlrec copy ") {
			out := stdout.String()
			if !strings.Contains(out, "Copied ") || strings.Contains(out, "Copied 0 ") {
				t.Fatalf("README line %q copied nothing:\n%s%s", l.text, out, stderr.String())
			}
		}
		t.Logf("ran %s", l.text)
	}
}

// tail returns the last 2,000 bytes of s.
func tail(s string) string {
	if len(s) > 2000 {
		return fmt.Sprintf("...%s", s[len(s)-2000:])
	}
	return s
}

// TestReadmeRlrecLines: which lines of a README's sh blocks
// TestReadmeExamples runs, and how.
func TestReadmeRlrecLines(t *testing.T) {
	for _, tc := range []struct {
		name, readme string
		want         []readmeShellLine
	}{
		{"comment cut", "```sh\nrlrec demo   # record\n```\n", []readmeShellLine{{0, "rlrec demo", false}}},
		{"hash in quotes kept", "```sh\nrlrec copy a b --where \"x = '#1'\"  # c\n```\n", []readmeShellLine{{0, "rlrec copy a b --where \"x = '#1'\"", false}}},
		{"pipeline of rlrec", "```sh\nrlrec simulate -o - | rlrec ingest -o d -\n```\n", []readmeShellLine{{0, "rlrec simulate -o - | rlrec ingest -o d -", false}}},
		{"other commands skipped", "```sh\ngo install ./cmd/rlrec\npip install x\nrlrec replay r --env e | head\nduckdb -c \"SELECT 1\"\n```\n", nil},
		{"server in the background", "```sh\nrlrec serve -o d &   # port\nrlrec simulate --to 127.0.0.1:7465\n```\n",
			[]readmeShellLine{{0, "rlrec serve -o d", true}, {0, "rlrec simulate --to 127.0.0.1:7465", false}}},
		{"blocks numbered, other fences skipped", "```go\nrlrec := 1\n```\n```sh\nrlrec a\n```\ntext rlrec b\n```sh\nrlrec c\n```\n",
			[]readmeShellLine{{0, "rlrec a", false}, {1, "rlrec c", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readmeRlrecLines(t, tc.readme)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
