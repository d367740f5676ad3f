package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

func TestExportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lerobot")
	code, out, errOut := runReadCmd(t, "export", goldenRoot, "--format", "lerobot", "-o", dir, "--session", "golden-cartpole", "--fps", "30")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Wrote a LeRobot v3.0 dataset") {
		t.Errorf("stdout %q", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "meta", "info.json"))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		CodebaseVersion string  `json:"codebase_version"`
		FPS             float64 `json:"fps"`
		TotalFrames     int64   `json:"total_frames"`
	}
	if err := json.Unmarshal(b, &info); err != nil || info.CodebaseVersion != "v3.0" || info.FPS != 30 || info.TotalFrames == 0 {
		t.Errorf("info.json %+v: %v", info, err)
	}
	for _, p := range []string{"meta/stats.json", "meta/tasks.parquet", "meta/episodes/chunk-000/file-000.parquet", "data/chunk-000/file-000.parquet"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Error(err)
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no format", []string{"export", goldenRoot, "-o", t.TempDir()}, 2, "--format is required"},
		{"bad format", []string{"export", goldenRoot, "--format", "rlds", "-o", t.TempDir()}, 2, "unknown format"},
		{"no out", []string{"export", goldenRoot, "--format", "lerobot"}, 2, "-o DIR is required"},
		{"unknown env", []string{"export", goldenRoot, "--format", "lerobot", "-o", t.TempDir(), "--env", "x"}, 1, `no env "x" in `},
		{"not empty", []string{"export", goldenRoot, "--format", "lerobot", "-o", dir, "--session", "golden-cartpole"}, 1, "not empty"},
		{"unknown session", []string{"export", goldenRoot, "--format", "lerobot", "-o", t.TempDir(), "--session", "nope"}, 1, `session "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runReadCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d; stderr %q does not say %q", code, tc.code, errOut, tc.want)
			}
		})
	}
}

// TestExportRate: a simulated run exported without --fps gets its env's
// control rate (cartpole 50 fps, pick-place 10 fps) in info.json; times
// at a loop's speed (--period 200us: 5,000 fps) or in bursts give a rate
// no recording has, and the export refuses, naming --fps, which then
// writes it.
func TestExportRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sim   []string
		burst bool
		fps   string // the rate written, or "" for a refusal
		want  string // what the refusal says
	}{
		{"cartpole", []string{"--env", "cartpole", "--envs", "2", "--episodes", "3"}, false, "50 fps", ""},
		{"pick-place", []string{"--env", "pick-place", "--envs", "2", "--episodes", "2"}, false, "10 fps", ""},
		{"a loop's speed", []string{"--env", "cartpole", "--envs", "2", "--episodes", "3", "--period", "200us"}, false, "", "above the 1000"},
		{"bursts", []string{"--env", "cartpole", "--envs", "2", "--episodes", "3"}, true, "", "too irregular"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "run.events")
			args := append([]string{"simulate", "--seed", "5", "--reproducible", "-o", file}, tc.sim...)
			if code, _, errOut := runCmd(t, args...); code != 0 {
				t.Fatalf("simulate: exit %d: %s", code, errOut)
			}
			if tc.burst {
				burstTimes(t, file)
			}
			root := filepath.Join(dir, "root")
			ingestFile(t, root, file)
			out := filepath.Join(dir, "lerobot")
			code, stdout, errOut := runReadCmd(t, "export", root, "--format", "lerobot", "-o", out)
			if tc.fps != "" {
				if code != 0 || !strings.Contains(stdout, ", "+tc.fps+", ") {
					t.Fatalf("exit %d, stdout %q, want %s; stderr %s", code, stdout, tc.fps, errOut)
				}
				return
			}
			if code != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--fps") {
				t.Fatalf("exit %d, stderr %q: want a refusal saying %q and naming --fps", code, errOut, tc.want)
			}
			if code, _, errOut := runReadCmd(t, "export", root, "--format", "lerobot", "-o", out, "--fps", "50"); code != 0 {
				t.Fatalf("with --fps: exit %d: %s", code, errOut)
			}
		})
	}
}

// burstTimes rewrites the times of the cartpole stream in file: its steps
// k = 0, 1, 2, ... (20 ms apart) come in bursts of three 5 ms apart, one
// burst every 100 ms.
func burstTimes(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := events.NewStreamWriter(&out)
	r := events.NewStreamReader(bytes.NewReader(b), 0)
	const period = 20 * time.Millisecond
	for r.Next() {
		d := r.Time().Sub(simulateClockStart)
		k := d / period
		if err := w.WriteAt(r.Event(), simulateClockStart.Add(k/3*100*time.Millisecond+k%3*5*time.Millisecond+d%period)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
