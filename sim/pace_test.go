package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
)

// TestControlPeriod: the times a session hands over advance by its env's
// control period per step, not by the speed of the loop: consecutive
// ActionReceived of one episode are one period apart, give or take the
// spread of the simulated predict time, and the median interval is the
// period within that spread. The wall clock (Clock nil) gives the same
// intervals as a step clock.
func TestControlPeriod(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		period time.Duration
	}{
		{"cartpole", Config{Env: "cartpole", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 4}, 20 * time.Millisecond},
		{"cartpole, wall clock origin", Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 3}, 20 * time.Millisecond},
		{"pick-place", Config{Env: "pick-place", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 2}, 100 * time.Millisecond},
		{"all-leaves", Config{Env: "all-leaves", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 2}, 50 * time.Millisecond},
		{"ControlPeriod", Config{Env: "cartpole", NumEnvs: 3, Autoreset: AutoresetNextStep, MaxEpisodes: 3, ControlPeriod: 5 * time.Millisecond}, 5 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Seed = 3
			if tc.name != "cartpole, wall clock origin" {
				cfg.Clock = fixedClock()
			}
			if cfg.ControlPeriod == 0 && ControlPeriod(cfg.Env) != tc.period {
				t.Fatalf("ControlPeriod(%q) = %v, want %v", cfg.Env, ControlPeriod(cfg.Env), tc.period)
			}
			c := &timedCollector{}
			if _, err := Run(context.Background(), c, cfg); err != nil {
				t.Fatal(err)
			}
			p := paceOf(&cfg)
			spread := p.predict.hi - p.predict.lo
			var prev time.Time
			var iv []time.Duration
			for i, ev := range c.all {
				if i > 0 && c.times[i].Before(c.times[i-1]) {
					t.Fatalf("event %d (%s) at %v, before event %d's %v", i, ev.Kind(), c.times[i], i-1, c.times[i-1])
				}
				switch ev.(type) {
				case *events.ActionReceived:
					if !prev.IsZero() {
						iv = append(iv, c.times[i].Sub(prev))
					}
					prev = c.times[i]
				case *events.EpisodeStarted:
					prev = time.Time{} // a disabled reset restarts the rhythm
				}
			}
			if len(iv) < 5 {
				t.Fatalf("%d intervals, want a few", len(iv))
			}
			for _, d := range iv {
				// A disabled reset may delay one round by the reset's time.
				if d < tc.period-spread || d > tc.period+spread {
					t.Fatalf("ActionReceived %v apart, want %v ± %v", d, tc.period, spread)
				}
			}
			slices.Sort(iv)
			if m := iv[len(iv)/2]; m < tc.period-spread || m > tc.period+spread {
				t.Fatalf("median interval %v, want %v ± %v", m, tc.period, spread)
			}
		})
	}
}
