package interop

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// fixture is one ROOT holding every simulated session of fixtureConfigs,
// recorded once and shared by the tests that only read it.
type fixture struct {
	root     string
	sessions map[string]*sessionTally
	configs  map[string]sim.Config
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
		{SessionID: "cartpole-next", Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 8, MaxEpisodeSteps: 40, Seed: 1},
		{SessionID: "cartpole-disabled", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 6, MaxEpisodeSteps: 30, Seed: 2},
		{SessionID: "cartpole-failing", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1000, FailAfterSteps: 45, Seed: 3},
		{SessionID: "pick-place-next", Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, Seed: 4},
		{SessionID: "pick-place-disabled", Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 25, Seed: 5},
		{SessionID: "all-leaves-next", Env: "all-leaves", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 10, Seed: 6},
		{SessionID: "all-leaves-disabled", Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 6, Seed: 7},
		{SessionID: "all-leaves-failing", Env: "all-leaves", NumEnvs: 4, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 1000, FailAfterSteps: 20, Seed: 8},
	}
	for i := range cfgs {
		cfgs[i].Clock = sim.StepClock(epoch.Add(time.Duration(i)*time.Hour), time.Millisecond)
	}
	return cfgs
}

// record runs cfgs into a recorder on root through a tally and closes the
// recorder; it returns what the simulator emitted.
func record(ctx context.Context, root string, cfgs []sim.Config) (map[string]*sessionTally, error) {
	rec, err := recorder.Open(root)
	if err != nil {
		return nil, err
	}
	tl := newTally(rec)
	_, runErr := sim.RunSessions(ctx, tl, cfgs)
	if err := rec.Close(ctx); err != nil {
		return nil, err
	}
	if runErr != nil {
		return nil, runErr
	}
	return tl.snapshot(), nil
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
		cfgs := fixtureConfigs()
		shared.configs = make(map[string]sim.Config, len(cfgs))
		for _, c := range cfgs {
			shared.configs[c.SessionID] = c
		}
		shared.sessions, shared.err = record(context.Background(), dir, cfgs)
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
