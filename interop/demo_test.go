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

	"github.com/rlrec/rlrec/internal/hive"
)

// TestDemoQueries runs `rlrec demo` as a user does and runs the DuckDB
// queries it prints, as printed: they must read what the demo wrote.
func TestDemoQueries(t *testing.T) {
	forEachLayout(t, testDemoQueries)
}

func testDemoQueries(t *testing.T, l hive.Layout) {
	bin := rlrecBinary(t)
	root := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(bin, "demo", "--layout", string(l), "--out", root)
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
	// One line per run: its session id and env id name its recording.
	runs := map[[2]string]bool{}
	for _, rm := range regexp.MustCompile(`(?m)^\s+session (\S+)\s+env (\S+)\s`).FindAllStringSubmatch(out, -1) {
		runs[[2]string{rm[1], rm[2]}] = true
	}
	if len(runs) != sessions {
		t.Fatalf("the demo listed %d distinct recordings, its summary says %d sessions:\n%s", len(runs), sessions, out)
	}
	// The episodes rows, counted by arrow-go file by file, independently
	// of the queries under test (a file holds many episode rows).
	var episodeRows int
	for _, rel := range walkFiles(t, filepath.Join(root, "episodes")) {
		if strings.HasSuffix(rel, ".parquet") {
			_, rows, _ := readArrow(t, filepath.Join(root, "episodes", rel))
			episodeRows += len(rows)
		}
	}
	var queries []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if q, ok := strings.CutPrefix(line, `duckdb -c "`); ok {
			queries = append(queries, strings.TrimSuffix(q, `"`))
		}
	}
	if len(queries) != 3 {
		t.Fatalf("%d DuckDB one-liners in the demo's output, want 3:\n%s", len(queries), out)
	}
	db := openDuck(t)

	// The episodes query: episodes per recording and status.
	rows := query(t, db, queries[0])
	seen := map[[2]string]bool{}
	var total, done int64
	for _, r := range rows {
		sid, _ := r["session_id"].(string)
		env, _ := r["env_id"].(string)
		if !runs[[2]string{sid, env}] {
			t.Errorf("episodes query: a row of session %v env %v, a run the demo did not list", r["session_id"], r["env_id"])
		}
		seen[[2]string{sid, env}] = true
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
	if len(seen) != sessions || done != int64(completed) || total != int64(episodeRows) {
		t.Errorf("episodes query: %d recordings, %d completed, %d in all; the demo reported %d sessions and %d completed, and wrote %d episodes rows",
			len(seen), done, total, sessions, completed, episodeRows)
	}

	// The query over every recording's steps (of different spaces): the
	// fixed columns by name, a row per recording.
	rows = query(t, db, queries[1])
	if len(rows) != sessions {
		t.Errorf("steps of every recording: %d rows, want one per recording (%d)", len(rows), sessions)
	}
	for _, r := range rows {
		sid, _ := r["session_id"].(string)
		env, _ := r["env_id"].(string)
		if !runs[[2]string{sid, env}] || asInt64(t, r["steps"]) <= 0 {
			t.Errorf("steps of every recording: row %v", r)
		}
	}

	// The steps query: the first 10 steps of one session, with their
	// typed observation and action.
	rows = query(t, db, queries[2])
	if len(rows) != 10 {
		t.Fatalf("steps query gave %d rows, want 10", len(rows))
	}
	for i, r := range rows {
		if r["episode_record_id"] == nil || r["observation"] == nil || r["action"] == nil || r["reward"] == nil {
			t.Errorf("steps row %d has a null: %v", i, r)
		}
	}

	checkEq(t, "layout of the demo's ROOT", rootLayout(t, root), l)
	checkStepsFiles(t, db, root)
	checkContiguousDuck(t, db, root)

	// Every file the demo wrote is a finished one.
	for _, rel := range walkFiles(t, root) {
		name := filepath.Base(rel)
		if !strings.HasPrefix(rel, "_rlrec"+string(filepath.Separator)) && (strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".parquet")) {
			t.Errorf("a file other than a finished .parquet left: %s", rel)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "_rlrec", "log")); err != nil {
		t.Errorf("the recorder's state directory: %v", err)
	}
}
