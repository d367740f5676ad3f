package interop

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDemoQueries runs `rlrec demo` as a user does and runs the DuckDB
// queries it prints, as printed: they must read what the demo wrote.
func TestDemoQueries(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "rlrec")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rlrec")
	build.Dir = ".." // the rlrec module
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/rlrec: %v\n%s", err, out)
	}
	root := filepath.Join(dir, "demo")
	cmd := exec.Command(bin, "demo", "--out", root)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rlrec demo: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()

	m := regexp.MustCompile(`Recorded (\d+) simulated sessions \((\d+) episodes completed, (\d+) lane-steps\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in the demo's output:\n%s", out)
	}
	sessions, _ := strconv.Atoi(m[1])
	completed, _ := strconv.Atoi(m[2])
	episodeFiles, err := filepath.Glob(filepath.Join(root, "episodes", "*", "*", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}

	var queries []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if q, ok := strings.CutPrefix(line, `duckdb -c "`); ok {
			queries = append(queries, strings.TrimSuffix(q, `"`))
		}
	}
	if len(queries) != 2 {
		t.Fatalf("%d DuckDB one-liners in the demo's output, want 2:\n%s", len(queries), out)
	}
	db := openDuck(t)

	// The episodes query: episodes per session and status.
	rows := query(t, db, queries[0])
	seen := map[any]bool{}
	var total, done int64
	for _, r := range rows {
		seen[r["session_id"]] = true
		n := r["episodes"].(int64)
		total += n
		switch r["status"] {
		case "completed":
			done += n
		case "incomplete":
		default:
			t.Errorf("status %v", r["status"])
		}
	}
	if len(seen) != sessions || done != int64(completed) || total != int64(len(episodeFiles)) {
		t.Errorf("episodes query: %d sessions, %d completed, %d in all; the demo reported %d sessions and %d completed, and wrote %d episodes files",
			len(seen), done, total, sessions, completed, len(episodeFiles))
	}

	// The steps query: the first 10 steps of one session, with their
	// typed observation and action.
	rows = query(t, db, queries[1])
	if len(rows) != 10 {
		t.Fatalf("steps query gave %d rows, want 10", len(rows))
	}
	for i, r := range rows {
		if r["episode_record_id"] == nil || r["observation"] == nil || r["action"] == nil || r["reward"] == nil {
			t.Errorf("steps row %d has a null: %v", i, r)
		}
	}

	// Every file the demo wrote is a finished one.
	strays, _ := filepath.Glob(filepath.Join(root, "*", "*", "*", ".*.tmp"))
	if len(strays) > 0 {
		t.Errorf("temp files left: %v", strays)
	}
	if _, err := os.Stat(filepath.Join(root, "_rlrec", "log")); err != nil {
		t.Errorf("the recorder's state directory: %v", err)
	}
}
