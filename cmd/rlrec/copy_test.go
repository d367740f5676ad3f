package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCopyCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		args  []string
		roots []string // ROOTs written, each checked with rlrec verify
		out   []string // in stdout
	}{
		{"everything, to layout session", []string{"copy", goldenRoot, filepath.Join(dir, "all"), "--layout", "session"},
			[]string{"all"}, []string{"Copied 6 episodes (38 steps) of 2 recordings", "layout session", "rlrec verify " + filepath.Join(dir, "all")}},
		{"filtered", []string{"copy", "--where", "status = 'completed' and step_count >= 3", goldenRoot, filepath.Join(dir, "some")},
			[]string{"some"}, []string{"Filter: status = 'completed' AND step_count >= 3", "layout episode"}},
		{"one session", []string{"copy", goldenRoot, filepath.Join(dir, "one"), "--session", "golden-cartpole"},
			[]string{"one"}, []string{"of 1 recording into"}},
		{"split", []string{"copy", goldenRoot, filepath.Join(dir, "split"), "--split", "train=0.5,val=0.5", "--seed", "3"},
			[]string{"split/train", "split/val"}, []string{"(split train)", "(split val)", "Each split is a ROOT of its own"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runReadCmd(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			for _, w := range tc.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout does not say %q:\n%s", w, out)
				}
			}
			for _, r := range tc.roots {
				root := filepath.Join(dir, r)
				if code, out, errOut := runReadCmd(t, "verify", root); code != 0 {
					t.Errorf("verify %s: exit %d\n%s%s", root, code, out, errOut)
				}
			}
		})
	}
}

func TestCopyUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no arguments", []string{"copy"}, 2, "want SRC and DST"},
		{"bad filter", []string{"copy", goldenRoot, filepath.Join(dir, "x"), "--where", "colour = 'red'"}, 2, `--where: filter: at byte 0: unknown column "colour"`},
		{"bad split", []string{"copy", goldenRoot, filepath.Join(dir, "x"), "--split", "train=0.9"}, 2, "add up to 0.9"},
		{"seed without split", []string{"copy", goldenRoot, filepath.Join(dir, "x"), "--seed", "1"}, 2, "--seed needs --split"},
		{"bad seed", []string{"copy", goldenRoot, filepath.Join(dir, "x"), "--split", "a=1", "--seed", "-1"}, 2, "non-negative integer"},
		{"unknown env", []string{"copy", goldenRoot, filepath.Join(dir, "x"), "--env", "e"}, 1, `no env "e" in `},
		{"bad layout", []string{"copy", goldenRoot, filepath.Join(dir, "x"), "--layout", "flat"}, 2, "want episode"},
		{"no ROOT", []string{"copy", filepath.Join(dir, "missing"), filepath.Join(dir, "x")}, 1, "does not exist"},
		{"destination inside the source", []string{"copy", goldenRoot, goldenRoot + "/copy"}, 1, "inside the source"},
		{"existing destination", []string{"copy", goldenRoot, "testdata"}, 1, "is not empty"},
		{"nothing selected", []string{"copy", goldenRoot, filepath.Join(dir, "x"), "--where", "step_count > 1000"}, 1, "nothing was written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runReadCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d; stderr %q does not say %q", code, tc.code, errOut, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a refused copy created its destination")
	}
}

// TestCopyProgress: on a terminal stderr, copy's bar counts the steps as
// they are copied (counts between 0 and the total of a single recording
// appear), then the summary line says what was copied; with stderr
// redirected only the summary line is written.
func TestCopyProgress(t *testing.T) {
	terminal := func(e *Env) { e.IsTerminal, e.ProgressInterval = true, time.Nanosecond }
	for _, tc := range []struct {
		name  string
		setup func(*Env)
		bar   bool
	}{
		{"terminal", terminal, true},
		{"redirected", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			code, _, stderr := runEnv(t, tc.setup, "copy", "--session", "golden-cartpole", goldenRoot, dst)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			summary := regexp.MustCompile(`(?:\A|\n|\r)copy: 32 steps \(4 episodes, 1 recording\) from ` + regexp.QuoteMeta(goldenRoot) +
				` into ` + regexp.QuoteMeta(dst) + ` in [0-9.]+s, [0-9,]+ steps?/s\n\z`)
			if !summary.MatchString(stderr) {
				t.Errorf("stderr does not end with the summary line: %q", stderr)
			}
			counts := map[int]bool{}
			for _, m := range regexp.MustCompile(`\((\d+)/32, `).FindAllStringSubmatch(stderr, -1) {
				n, _ := strconv.Atoi(m[1])
				counts[n] = true
			}
			between := 0
			for n := range counts {
				if n > 0 && n < 32 {
					between++
				}
			}
			switch {
			case !tc.bar && (len(counts) > 0 || strings.Contains(stderr, "copying")):
				t.Errorf("a progress bar on a redirected stderr: %q", stderr)
			case tc.bar && (!strings.Contains(stderr, "copying "+goldenRoot) || !strings.Contains(stderr, "steps")):
				t.Errorf("no bar of steps on a terminal: %q", stderr)
			case tc.bar && (between < 4 || !counts[0]):
				t.Errorf("the bar showed the counts %v of 32 steps: want it to move row by row", counts)
			}
		})
	}
}
