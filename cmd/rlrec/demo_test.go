package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/sim"
)

// smallDemo makes the demo record two small runs, one per autoreset mode.
func smallDemo(t *testing.T) {
	t.Helper()
	old := demoSessions
	demoSessions = func(seed uint64) []sim.Config {
		return []sim.Config{
			{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 6, TimeLimit: 20, Seed: seed, LateWindow: true, SessionID: "demo-test"},
			{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 20, Seed: seed + 1, SessionID: "demo-test"},
		}
	}
	t.Cleanup(func() { demoSessions = old })
}

// TestDemoSessionsFollowRlmesh: the demo's runs are ones rlmesh allows,
// and show both autoreset modes and a window snapshot after a session's
// end.
func TestDemoSessionsFollowRlmesh(t *testing.T) {
	modes := map[sim.Autoreset]bool{}
	late := false
	for i, cfg := range demoSessions(1) {
		if err := cfg.Validate(); err != nil {
			t.Errorf("demo session %d: %v", i, err)
		}
		modes[cfg.Autoreset] = true
		late = late || cfg.LateWindow
	}
	if !modes[sim.AutoresetNextStep] || !modes[sim.AutoresetDisabled] {
		t.Errorf("the demo shows autoreset modes %v, want both", modes)
	}
	if !late {
		t.Error("no demo session delivers a late window snapshot")
	}
}

var (
	demoFilesLine = regexp.MustCompile(`(?m)^  (\w+) +(\d+) files`)
	demoLaneSteps = regexp.MustCompile(`The (\d+) lane-steps are (\d+) step rows and (\d+) dropped steps`)
)

// TestDemo: the demo says why its lane-steps and step rows differ, counts
// the files of this run only (not those a ROOT held before), and says how
// to get DuckDB.
func TestDemo(t *testing.T) {
	smallDemo(t)
	root := filepath.Join(t.TempDir(), "demo")
	var counts []string
	for run := range 2 {
		code, out, errOut := runCmd(t, "demo", "--out", root)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, errOut)
		}
		m := demoLaneSteps.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("run %d: no lane-steps line:\n%s", run, out)
		}
		var lanes, rows, dropped int
		fmt.Sscan(m[1]+" "+m[2]+" "+m[3], &lanes, &rows, &dropped)
		if lanes != rows+dropped || dropped == 0 || rows == 0 {
			t.Errorf("run %d: %d lane-steps, %d rows, %d dropped", run, lanes, rows, dropped)
		}
		for _, want := range []string{"under next-step\n  autoreset", "dropped_steps", "pip install duckdb", "DuckDB CLI"} {
			if !strings.Contains(out, want) {
				t.Errorf("run %d: output lacks %q:\n%s", run, want, out)
			}
		}
		if again := strings.Contains(out, "held earlier recordings too"); again != (run == 1) {
			t.Errorf("run %d: says the ROOT held earlier recordings: %v", run, again)
		}
		var c []string
		for _, f := range demoFilesLine.FindAllStringSubmatch(out, -1) {
			c = append(c, f[1]+"="+f[2])
		}
		if len(c) != 5 {
			t.Fatalf("run %d: %d table lines:\n%s", run, len(c), out)
		}
		counts = append(counts, strings.Join(c, " "))
		if n := strings.Count(out, "\n  duckdb -c \""); n != 3 {
			t.Errorf("run %d: %d DuckDB one-liners, want 3", run, n)
		}
	}
	if counts[0] != counts[1] {
		t.Errorf("the second run into the same ROOT counted other files than the first:\n first  %s\n second %s", counts[0], counts[1])
	}
}
