package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

// lateWindows returns, for each window snapshot of evs that follows the
// session's first closing event (SessionEnded, or on failure the session
// snapshot), how many closing events precede it.
func lateWindows(evs []events.Event) []int {
	var after []int
	closing := 0
	for _, ev := range evs {
		switch e := ev.(type) {
		case *events.SessionEnded, *events.SessionFailed:
			closing++
		case *events.TelemetrySnapshot:
			switch {
			case e.Snapshot.Horizon == events.HorizonSession:
				closing++
			case closing > 0:
				after = append(after, closing)
			}
		}
	}
	return after
}

// TestLateWindow: with Config.LateWindow every session delivers exactly
// one window snapshot after its end (at most one with a ticker, which may
// have taken the last samples), after one or both closing events as the
// seed draws, on success and on failure; both places occur across seeds,
// and a seed reproduces its run.
func TestLateWindow(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		failed bool
	}{
		{"ended", Config{Env: "cartpole", NumEnvs: 4, Autoreset: AutoresetNextStep, MaxEpisodes: 6}, false},
		{"failed", Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 100, FailAfterSteps: 20}, true},
		{"ticking", Config{Env: "cartpole", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 6, TelemetryInterval: time.Millisecond}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			places := map[int]int{}
			for seed := uint64(1); seed <= 8; seed++ {
				cfg := tc.cfg
				cfg.Seed, cfg.LateWindow = seed, true
				if tc.cfg.TelemetryInterval == 0 {
					cfg.Clock = StepClock(time.Unix(1_700_000_000, 0), time.Millisecond)
				}
				c := &collector{}
				if _, err := Run(context.Background(), c, cfg); err != nil {
					t.Fatal(err)
				}
				checkSession(t, cfg, c.all, tc.failed)
				late := lateWindows(c.all)
				if tc.cfg.TelemetryInterval != 0 {
					// The ticker may just have taken the last samples: an
					// empty late window is skipped.
					if len(late) > 1 {
						t.Fatalf("seed %d: %d window snapshots after the end (after %v closing events), want at most 1", seed, len(late), late)
					}
					continue
				}
				if len(late) != 1 {
					t.Fatalf("seed %d: %d window snapshots after the end (after %v closing events), want 1", seed, len(late), late)
				}
				places[late[0]]++
				again := &collector{}
				cfg.Clock = StepClock(time.Unix(1_700_000_000, 0), time.Millisecond)
				if _, err := Run(context.Background(), again, cfg); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(c.all, again.all) {
					t.Fatalf("seed %d: two runs differ", seed)
				}
			}
			if tc.cfg.TelemetryInterval == 0 && (places[1] == 0 || places[2] == 0) {
				t.Errorf("late windows after 1 and 2 closing events: %d and %d in 8 seeds, want both", places[1], places[2])
			}
			// Without the option, none.
			cfg := tc.cfg
			cfg.Seed = 1
			c := &collector{}
			if _, err := Run(context.Background(), c, cfg); err != nil {
				t.Fatal(err)
			}
			if late := lateWindows(c.all); len(late) != 0 {
				t.Errorf("without LateWindow: window snapshots after the end (%v)", late)
			}
		})
	}
}
