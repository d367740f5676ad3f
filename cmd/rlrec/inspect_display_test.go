package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// runEnv runs a command line with an Env that setup may change (terminal
// flags, width) and returns its status, stdout and stderr.
func runEnv(t *testing.T, setup func(*Env), args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Logger: slog.New(slog.DiscardHandler)}
	if setup != nil {
		setup(env)
	}
	code := run(context.Background(), env, args)
	return code, out.String(), errOut.String()
}

// TestInspectSparklines: sparklines go to stdout only when stdout is a
// terminal (not when only stderr is), and fit the terminal's width.
func TestInspectSparklines(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(*Env)
		spark  bool
		maxCol int
	}{
		{"redirected stdout, terminal stderr", func(e *Env) { e.IsTerminal = true }, false, 0},
		{"terminal stdout 100 columns", func(e *Env) { e.StdoutTerminal, e.Width = true, 100 }, true, 100},
		{"terminal stdout 40 columns", func(e *Env) { e.StdoutTerminal, e.Width = true, 40 }, true, 40},
		{"terminal stdout, width unknown", func(e *Env) { e.StdoutTerminal = true }, true, 80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runEnv(t, tc.setup, "inspect", goldenRoot)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			has := strings.Contains(out, "returns per episode") || strings.ContainsAny(out, "▁█")
			if has != tc.spark {
				t.Fatalf("sparklines drawn: %v, want %v:\n%s", has, tc.spark, out)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.ContainsAny(line, "▁▂▃▄▅▆▇█") && utf8.RuneCountInString(line) > tc.maxCol {
					t.Errorf("sparkline of %d columns on a %d-column terminal: %q", utf8.RuneCountInString(line), tc.maxCol, line)
				}
			}
		})
	}
}

func TestSparklineWidth(t *testing.T) {
	vals := make([]float64, 500)
	for i := range vals {
		vals[i] = float64(i % 17)
	}
	for _, width := range []int{30, 76, 200} {
		got := sparkline(vals, width)
		if n := utf8.RuneCountInString(got); n > width {
			t.Errorf("width %d: %d columns: %q", width, n, got)
		}
		if !strings.HasSuffix(got, "  min 0 max 16") {
			t.Errorf("width %d: %q lacks the min and max of the values", width, got)
		}
	}
	// Fewer values than columns: one bar each.
	if got := sparkline([]float64{1, 2, 3}, 80); got != "▁▄█  min 1 max 3" {
		t.Errorf("sparkline = %q", got)
	}
}

// incompleteRoot records a session that ends by reaching its episode count
// while other lanes still run episodes, with simulated clocks so that the
// ROOT is the same every time.
func incompleteRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec, err := recorder.Open(root, recorder.WithWriters(1))
	if err != nil {
		t.Fatal(err)
	}
	// rlmesh rc.5's order: the session ends while episodes still run
	// (0.1 runs every scored episode to its end).
	cfg := sim.Config{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2, Seed: 5, Order: sim.OrderRC5,
		SessionID: "incomplete", Clock: sim.StepClock(start, time.Millisecond)}
	hooks := &stampedHooks{rec: rec, now: sim.StepClock(start, 500*time.Microsecond)}
	if _, err := sim.Run(context.Background(), hooks, cfg); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestInspectExpectedIncomplete: the incomplete episodes of a session that
// ended by reaching its episode count are no problem; inspect notes them.
func TestInspectExpectedIncomplete(t *testing.T) {
	root := incompleteRoot(t)
	code, out, errOut := runCmd(t, "inspect", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "problems:") {
		t.Errorf("expected incomplete episodes listed as problems:\n%s", out)
	}
	// From the sessions table on: file sizes vary from run to run.
	_, sessions, _ := strings.Cut(out, "\nSESSION")
	checkGolden(t, "inspect-incomplete.txt", "SESSION"+sessions)
}

// TestInspectCrashedRoot: inspect of a ROOT whose recorder crashed
// (records in its log) reports what the files hold, says to run recover
// and exits 1 (0 with --published); once recovered, its crashed sessions
// are not said to need recovery.
func TestInspectCrashedRoot(t *testing.T) {
	stream := readTestStream(t)
	root := crashedRoot(t, stream, 100)
	recoverCmd := "run 'rlrec recover " + root + "'"
	code, out, errOut := runCmd(t, "inspect", root)
	if code != 1 || !strings.Contains(errOut, "needs recovery") || !strings.Contains(errOut, "--published") {
		t.Fatalf("exit %d, want 1 saying it needs recovery: %s", code, errOut)
	}
	for _, want := range []string{"problems:", "_rlrec/log holds records", "crashed or was killed", recoverCmd} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect of a crashed ROOT lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := runCmd(t, "inspect", "--published", root); code != 0 {
		t.Errorf("inspect --published: exit %d: %s", code, errOut)
	}
	if code, out, errOut := runCmd(t, "inspect", "--json", "--published", root); code != 0 || !strings.Contains(out, `"needs_recovery": true`) {
		t.Errorf("inspect --json: exit %d, needs_recovery not true:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "recover", root); code != 0 {
		t.Fatalf("recover: exit %d: %s", code, errOut)
	}
	code, out, errOut = runCmd(t, "inspect", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "_rlrec/log holds records") || strings.Contains(out, recoverCmd) {
		t.Errorf("a recovered ROOT is still said to need recovery:\n%s", out)
	}
	for _, want := range []string{"crashed: the recorder stopped before the session ended", "recovered:"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect of recovered crashed sessions lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCmd(t, "inspect", "--json", root); code != 0 || !strings.Contains(out, `"needs_recovery": false`) {
		t.Errorf("inspect --json after recovery: needs_recovery not false:\n%s", out)
	}
}

// TestReadCommandsNeedRecovery: every read command refuses a ROOT that
// needs recovery with the same words and exit 1, and reads what is
// published with --published.
func TestReadCommandsNeedRecovery(t *testing.T) {
	stream := readTestStream(t)
	root := crashedRoot(t, stream, 100)
	want := "needs recovery: its log " + filepath.Join(root, "_rlrec", "log") + " holds records"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"inspect", []string{"inspect", root}},
		{"replay", []string{"replay", root, "--session", "x"}},
		{"stats", []string{"stats", root}},
		{"export", []string{"export", root, "--format", "lerobot", "-o", filepath.Join(t.TempDir(), "x"), "--fps", "10"}},
		{"copy", []string{"copy", root, filepath.Join(t.TempDir(), "dst")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tc.args...)
			if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "run 'rlrec recover "+root+"' first, or give --published") {
				t.Errorf("exit %d, want 1 and %q: %s", code, want, errOut)
			}
			code, _, errOut = runCmd(t, append(tc.args, "--published")...)
			if strings.Contains(errOut, "needs recovery") {
				t.Errorf("--published: exit %d: %s", code, errOut)
			}
		})
	}
}

// TestNoPublishedRecordingNeedsRecovery: a ROOT whose recordings are all
// still in the log is not told to be recorded into first: it needs
// recovery.
func TestNoPublishedRecordingNeedsRecovery(t *testing.T) {
	stream := readTestStream(t)
	root := crashedRoot(t, stream, 5)
	code, _, errOut := runCmd(t, "stats", root, "--published")
	if code != 1 || strings.Contains(errOut, "record into it first") || !strings.Contains(errOut, "rlrec recover "+root) {
		t.Errorf("exit %d: %s; want exit 1 saying to run recover", code, errOut)
	}
}
