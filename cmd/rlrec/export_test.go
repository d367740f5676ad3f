package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"env without session", []string{"export", goldenRoot, "--format", "lerobot", "-o", t.TempDir(), "--env", "x"}, 2, "--env needs --session"},
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
