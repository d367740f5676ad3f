package interop

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// layouts are the two steps layouts of schema version 2. The shared
// fixture holds a ROOT of each, recorded from the same sessions, and the
// tests that read it run on both.
var layouts = []hive.Layout{hive.LayoutEpisode, hive.LayoutSession}

// fixtureRowGroupRows and fixtureMemoryBudget are recorder options of the
// layout "session" fixture: row groups small enough that its packed steps
// files have several, so that the checks that no row group straddles
// episodes have boundaries to check, and the least memory budget, so that
// the rows of open image episodes are streamed out and those episodes get
// a part file of their own, as long ones do.
const (
	fixtureRowGroupRows = 64
	fixtureMemoryBudget = 16 << 20
)

// fixture is one ROOT holding every simulated session of fixtureConfigs,
// recorded once and shared by the tests that only read it.
type fixture struct {
	layout hive.Layout
	root   string
	// sessions and configs are keyed by recording: the config's session
	// id and the env id the simulator minted for its run.
	sessions map[hive.Recording]*sessionTally
	configs  map[hive.Recording]sim.Config
	err      error
}

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
	shared      = map[hive.Layout]*fixture{}
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

// layoutOptions are the recorder options of a new ROOT of layout l.
func layoutOptions(l hive.Layout) []recorder.Option {
	return []recorder.Option{recorder.WithLayout(l)}
}

// fixtureOptions are the recorder options of the fixture of layout l: the
// defaults for "episode" (the layout asked for explicitly), and for
// "session" those that make it hold files of every kind.
func fixtureOptions(l hive.Layout) []recorder.Option {
	opts := layoutOptions(l)
	if l == hive.LayoutSession {
		opts = append(opts, recorder.WithRowGroupRows(fixtureRowGroupRows), recorder.WithMemoryBudget(fixtureMemoryBudget))
	}
	return opts
}

// record runs cfgs into a recorder on root through a tally and closes the
// recorder; it returns what the simulator emitted, by recording, and the
// config of each recording.
func record(ctx context.Context, root string, cfgs []sim.Config, opts ...recorder.Option) (map[hive.Recording]*sessionTally, map[hive.Recording]sim.Config, error) {
	rec, err := recorder.Open(root, opts...)
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

// getFixture returns the shared ROOT of layout l, recording both ROOTs
// (concurrently) on first use.
func getFixture(t *testing.T, l hive.Layout) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "rlrec-interop-")
		if fixtureErr != nil {
			return
		}
		var wg sync.WaitGroup
		for _, l := range layouts {
			fx := &fixture{layout: l, root: filepath.Join(fixtureDir, string(l))}
			shared[l] = fx
			wg.Add(1)
			go func() {
				defer wg.Done()
				fx.sessions, fx.configs, fx.err = record(context.Background(), fx.root, fixtureConfigs(), fixtureOptions(l)...)
			}()
		}
		wg.Wait()
	})
	if fixtureErr != nil {
		t.Fatalf("create the shared fixture's directory: %v", fixtureErr)
	}
	fx := shared[l]
	if fx == nil {
		t.Fatalf("no shared fixture of layout %q", l)
	}
	if fx.err != nil {
		t.Fatalf("record the shared fixture of layout %q into %s: %v", l, fx.root, fx.err)
	}
	return fx
}

// forEachFixture runs f as a subtest on the shared ROOT of each layout.
func forEachFixture(t *testing.T, f func(t *testing.T, fx *fixture)) {
	t.Helper()
	for _, l := range layouts {
		t.Run(string(l), func(t *testing.T) { f(t, getFixture(t, l)) })
	}
}

// forEachLayout runs f as a subtest per layout.
func forEachLayout(t *testing.T, f func(t *testing.T, l hive.Layout)) {
	t.Helper()
	for _, l := range layouts {
		t.Run(string(l), func(t *testing.T) { f(t, l) })
	}
}

func cleanupFixture() {
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
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

// rootLayout reads the steps layout a ROOT was created with from its
// layout file, _rlrec/layout (docs/format/layout.md).
func rootLayout(t *testing.T, root string) hive.Layout {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "_rlrec", "layout"))
	if err != nil {
		t.Fatalf("read the layout of %s: %v", root, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "layout="); ok {
			l, err := hive.ParseLayout(v)
			if err != nil {
				t.Fatalf("%s/_rlrec/layout: %v", root, err)
			}
			return l
		}
	}
	t.Fatalf("%s/_rlrec/layout has no layout line:\n%s", root, b)
	return ""
}

// stepsKeys are the partition keys of a steps file's directories in
// layout l.
func stepsKeys(l hive.Layout) []string {
	if l == hive.LayoutSession {
		return []string{"session_id", "env_id"}
	}
	return []string{"session_id", "env_id", "episode_record_id"}
}

// partFileName matches a published part file's name.
var partFileName = regexp.MustCompile(`^part-[0-9]{5}\.parquet$`)

// checkStepsFileName checks the steps_file of an episode with steps: in
// layout "episode" the first part of the episode's own partition, in
// layout "session" a part file directly in its recording's steps
// partition (packed with other episodes, or on its own for a long one).
func checkStepsFileName(t *testing.T, what string, l hive.Layout, got any, rec hive.Recording, rid string) {
	t.Helper()
	if l == hive.LayoutEpisode {
		checkEq(t, what, got, hive.EpisodePartition("steps", rec, rid).File(0))
		return
	}
	sf, ok := got.(string)
	dir, name := path.Split(sf)
	if !ok || dir != hive.RecordingPartition("steps", rec).Rel()+"/" || !partFileName.MatchString(name) {
		t.Errorf("%s = %v (%T), want %s/part-NNNNN.parquet", what, got, got, hive.RecordingPartition("steps", rec).Rel())
	}
}
