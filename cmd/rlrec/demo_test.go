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
			{Env: "cartpole", NumEnvs: 3, LaneServed: true, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 4, MaxEpisodeSteps: 20, Transform: true, RelayAdvisory: true, Seed: seed + 2, SessionID: "demo-test"},
		}
	}
	t.Cleanup(func() { demoSessions = old })
}

// TestDemoSessionsFollowRlmesh: the demo's runs are ones rlmesh allows,
// in 0.1's order, and show both autoreset modes, a window snapshot after a
// session's end, a lane-served env, transforms and a relay advisory.
func TestDemoSessionsFollowRlmesh(t *testing.T) {
	modes := map[sim.Autoreset]bool{}
	late, laned, transform, advisory := false, false, false, false
	for i, cfg := range demoSessions(1) {
		if err := cfg.Validate(); err != nil {
			t.Errorf("demo session %d: %v", i, err)
		}
		if cfg.Order != sim.Order01 {
			t.Errorf("demo session %d follows rlmesh %v, want 0.1", i, cfg.Order)
		}
		modes[cfg.Autoreset] = true
		late = late || cfg.LateWindow
		laned = laned || cfg.LaneServed && cfg.NumEnvs > 1
		transform = transform || cfg.Transform
		advisory = advisory || cfg.RelayAdvisory
	}
	if !laned || !transform || !advisory {
		t.Errorf("lane-served %v, transform %v, relay advisory %v: the demo shows none of some of rlmesh 0.1's", laned, transform, advisory)
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
	demoLaneSteps = regexp.MustCompile(`The (\d+) lane-steps are (\d+) step rows and (\d+) dropped steps:[^%]*?dropped_steps, (\d+) of them surplus`)
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
		var lanes, rows, dropped, surplus int
		fmt.Sscan(m[1]+" "+m[2]+" "+m[3]+" "+m[4], &lanes, &rows, &dropped, &surplus)
		if lanes != rows+dropped || dropped <= surplus || rows == 0 || surplus == 0 {
			t.Errorf("run %d: %d lane-steps, %d rows, %d dropped, %d surplus", run, lanes, rows, dropped, surplus)
		}
		if strings.Contains(out, "counted as problems") || strings.Contains(out, "surplus lane-steps, the recording counts") {
			t.Errorf("run %d: the recorder found problems in the simulator's events:\n%s", run, out)
		}
		for _, want := range []string{"under next-step\n  autoreset", "dropped_steps", "surplus_steps", "served", "pip install duckdb", "DuckDB CLI"} {
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
