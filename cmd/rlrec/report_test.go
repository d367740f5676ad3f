package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "report.html")
	code, out, errOut := runReadCmd(t, "report", goldenRoot, "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Wrote "+file+": 2 recordings") {
		t.Errorf("stdout %q", out)
	}
	for _, want := range []string{"<!DOCTYPE html>", "golden-cartpole", "golden-all-leaves", `data-section="returns"`, "<svg"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// No temporary file is left beside it.
	entries, _ := os.ReadDir(filepath.Dir(file))
	if len(entries) != 1 {
		t.Errorf("%d files beside the report, want none", len(entries)-1)
	}

	code, out, errOut = runReadCmd(t, "report", goldenRoot, "--session", "golden-cartpole", "-o", "-")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || strings.Contains(out, "golden-all-leaves") {
		t.Errorf("-o - with --session: exit %d, stderr %q, stdout starts %.40q", code, errOut, out)
	}

	fresh := filepath.Join(t.TempDir(), "fresh.html")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"existing output", []string{"report", goldenRoot, "-o", file}, 1, "give --force to replace it"},
		{"no ROOT", []string{"report", "-o", file}, 2, "want one ROOT"},
		{"no -o", []string{"report", goldenRoot}, 2, "-o FILE.html is required"},
		{"unknown session", []string{"report", goldenRoot, "--session", "nope", "-o", fresh}, 1, `session "nope"`},
		{"unknown env", []string{"report", goldenRoot, "--env", "x", "-o", fresh}, 1, `no env "x" in `},
		{"frame side", []string{"report", goldenRoot, "--frame-side", "2", "-o", file}, 2, "--frame-side 2"},
		{"frame budget", []string{"report", goldenRoot, "--frame-budget", "0", "-o", file}, 2, "--frame-budget 0"},
		{"not a ROOT", []string{"report", t.TempDir(), "-o", fresh}, 1, "not an rlrec ROOT"},
		{"no directory", []string{"report", goldenRoot, "-o", filepath.Join(t.TempDir(), "no", "r.html")}, 1, "is the directory there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runReadCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d; stderr %q does not say %q", code, tc.code, errOut, tc.want)
			}
		})
	}
	if code, _, errOut := runReadCmd(t, "report", goldenRoot, "-o", file, "--force"); code != 0 {
		t.Errorf("--force over an existing page: exit %d, stderr %q", code, errOut)
	}
}
