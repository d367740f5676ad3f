package sim

import (
	"math/rand/v2"
	"time"
)

// pace is how fast a built-in env runs in simulated time: its control
// period (one step per period, as a real env steps at its control or
// camera rate) and the simulated durations of its calls, each drawn
// uniformly between lo and hi from the session's timing stream.
//
// The simulator never reads a clock while it runs: every event time is
// Config.Clock's reading at the session's start plus the simulated time
// spent since, so an export of a simulated run gives the env's rate (50 fps
// for cartpole, 10 fps for pick-place), not how fast the loop ran.
type pace struct {
	// period is the control period: step k's action is due period after
	// step k-1's. A round whose predict and step take longer (or a reset)
	// starts the next round late, as a real-time loop that overran.
	period time.Duration
	// reset, predict and step are the simulated durations of an env
	// reset, a model predict and an env step.
	reset, predict, step span
}

// span is a duration drawn uniformly from [lo, hi].
type span struct{ lo, hi time.Duration }

func (s span) draw(rng *rand.Rand) time.Duration {
	if s.hi <= s.lo {
		return s.lo
	}
	return s.lo + time.Duration(rng.Int64N(int64(s.hi-s.lo)+1))
}

// envPaces are the built-in envs' paces. Values are part of what a seed
// reproduces: do not change them without updating the goldens.
//   - cartpole: gymnasium CartPole's tau, 0.02 s (50 Hz); a small MLP
//     policy predicts in 0.2-0.6 ms, the physics steps in 50-150 µs.
//   - pick-place: a 10 Hz camera (0.1 s, a common rate of manipulation
//     datasets); a vision-language policy predicts in 25-45 ms and the
//     simulator renders a step in 8-15 ms.
//   - all-leaves: 20 Hz (0.05 s), with millisecond calls.
var envPaces = map[string]pace{
	"cartpole": {period: 20 * time.Millisecond,
		reset:   span{800 * time.Microsecond, 1200 * time.Microsecond},
		predict: span{200 * time.Microsecond, 600 * time.Microsecond},
		step:    span{50 * time.Microsecond, 150 * time.Microsecond}},
	"pick-place": {period: 100 * time.Millisecond,
		reset:   span{40 * time.Millisecond, 60 * time.Millisecond},
		predict: span{25 * time.Millisecond, 45 * time.Millisecond},
		step:    span{8 * time.Millisecond, 15 * time.Millisecond}},
	"all-leaves": {period: 50 * time.Millisecond,
		reset:   span{2 * time.Millisecond, 4 * time.Millisecond},
		predict: span{1 * time.Millisecond, 3 * time.Millisecond},
		step:    span{500 * time.Microsecond, 1500 * time.Microsecond}},
}

// defaultPace is the pace of an env without one of its own (tests'
// scripted envs): cartpole's.
var defaultPace = envPaces["cartpole"]

// paceOf returns cfg's pace: its env's, with Config.ControlPeriod in
// place of the period when set.
func paceOf(cfg *Config) pace {
	p, ok := envPaces[cfg.Env]
	if !ok || cfg.testEnv != nil {
		p = defaultPace
	}
	if cfg.ControlPeriod > 0 {
		p.period = cfg.ControlPeriod
	}
	return p
}

// ControlPeriod returns the control period of the built-in env named env
// (its simulated step interval): 0.02 s for cartpole, 0.1 s for
// pick-place, 0.05 s for all-leaves; 0 for an unknown name.
func ControlPeriod(env string) time.Duration { return envPaces[env].period }
