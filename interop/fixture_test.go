package interop

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// fixture is one ROOT holding every simulated session of fixtureConfigs,
// recorded once and shared by the tests that only read it.
type fixture struct {
	root string
	// sessions and configs are keyed by recording: the config's session
	// id and the env id the simulator minted for its run.
	sessions map[hive.Recording]*sessionTally
	configs  map[hive.Recording]sim.Config
	err      error
}

var (
	fixtureOnce sync.Once
	shared      fixture
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixtureConfigs covers every built-in env, both autoreset modes, several
// lane counts, a step cap and injected failures. Each session has its own
// StepClock so the run is reproducible.
func fixtureConfigs() []sim.Config {
	cfgs := []sim.Config{
		{SessionID: "cartpole-next", Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 8, TimeLimit: 40, Seed: 1},
		{SessionID: "cartpole-disabled", Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 6, MaxEpisodeSteps: 30, Seed: 2},
		{SessionID: "cartpole-failing", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1000, FailAfterSteps: 45, Seed: 3},
		{SessionID: "pick-place-next", Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, Seed: 4},
		{SessionID: "pick-place-disabled", Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 25, Seed: 5},
		{SessionID: "all-leaves-next", Env: "all-leaves", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 10, Seed: 6},
		{SessionID: "all-leaves-disabled", Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 6, Seed: 7},
		{SessionID: "all-leaves-failing", Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 1000, FailAfterSteps: 20, Seed: 8},
	}
	for i := range cfgs {
		cfgs[i].Clock = sim.StepClock(epoch.Add(time.Duration(i)*time.Hour), time.Millisecond)
	}
	return cfgs
}

// record runs cfgs into a recorder on root through a tally and closes the
// recorder; it returns what the simulator emitted, by recording, and the
// config of each recording.
func record(ctx context.Context, root string, cfgs []sim.Config) (map[hive.Recording]*sessionTally, map[hive.Recording]sim.Config, error) {
	rec, err := recorder.Open(root)
	if err != nil {
		return nil, nil, err
	}
	tl := newTally(rec)
	sums, runErr := sim.RunSessions(ctx, tl, cfgs)
	if err := rec.Close(ctx); err != nil {
		return nil, nil, err
	}
	if runErr != nil {
		return nil, nil, runErr
	}
	snap := tl.snapshot()
	byRec := make(map[hive.Recording]sim.Config, len(sums))
	for i, sum := range sums {
		r := hive.Recording{SessionID: sum.SessionID, EnvID: sum.EnvID}
		if _, ok := snap[r]; !ok {
			return nil, nil, fmt.Errorf("the simulator reported %s, but no event of it reached the recorder", r)
		}
		byRec[r] = cfgs[i]
	}
	if len(byRec) != len(snap) {
		return nil, nil, fmt.Errorf("%d recordings handed over, the simulator ran %d", len(snap), len(byRec))
	}
	return snap, byRec, nil
}

// getFixture records the shared ROOT on first use.
func getFixture(t *testing.T) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlrec-interop-")
		if err != nil {
			shared.err = err
			return
		}
		shared.root = dir
		shared.sessions, shared.configs, shared.err = record(context.Background(), dir, fixtureConfigs())
	})
	if shared.err != nil {
		t.Fatalf("record the shared fixture into %s: %v", shared.root, shared.err)
	}
	return &shared
}

func cleanupFixture() {
	if shared.root != "" {
		os.RemoveAll(shared.root)
	}
}

// recording returns the fixture's one recording of session id sid.
func (fx *fixture) recording(t *testing.T, sid string) hive.Recording {
	t.Helper()
	var found []hive.Recording
	for rec := range fx.sessions {
		if rec.SessionID == sid {
			found = append(found, rec)
		}
	}
	if len(found) != 1 {
		t.Fatalf("fixture has %d recordings of session %q, want 1", len(found), sid)
	}
	return found[0]
}
