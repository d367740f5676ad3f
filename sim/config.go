package sim

import (
	"fmt"
	"time"

	"github.com/rlrec/rlrec/events"
)

// Autoreset is the runtime's autoreset mode.
type Autoreset uint8

const (
	// AutoresetNextStep resets a finished lane on the following step: its
	// terminal observation is emitted, the next action for it is ignored
	// and that step belongs to no episode. The env owns resets, so the
	// runtime's caps (MaxEpisodeSteps, MaxEpisodeTime) are not allowed.
	AutoresetNextStep Autoreset = 1
	// AutoresetDisabled resets a finished lane at once and emits a reset
	// observation; terminal observations are not emitted. As in rlmesh it
	// is allowed only with NumEnvs = 1, and the runtime caps every episode
	// at DefaultMaxEpisodeSteps steps unless MaxEpisodeSteps says
	// otherwise.
	AutoresetDisabled Autoreset = 2
)

// Order is the rlmesh release whose event order and fields a session
// follows. Values are part of a Config: do not change them.
type Order uint8

const (
	// Order01 is rlmesh 0.1's (the default): completions deferred to the
	// NEXT_STEP roll step, per-lane flags, seeds, trial indices, success,
	// infos, predict/step times and raw payloads, surplus episodes, the
	// final telemetry before SessionEnded, and lane-served envs.
	Order01 Order = 0
	// OrderRC5 is rlmesh v0.1.0-rc.5's: none of 0.1's fields, the
	// completion at the step that ended an episode, SessionEnded before
	// the final telemetry, and the env server's second report of a capped
	// episode (see CapsCompleteOnce).
	OrderRC5 Order = 1
)

// String returns "0.1" or "rc5".
func (o Order) String() string {
	switch o {
	case Order01:
		return "0.1"
	case OrderRC5:
		return "rc5"
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// ParseOrder parses "0.1" or "rc5".
func ParseOrder(s string) (Order, error) {
	switch s {
	case "0.1":
		return Order01, nil
	case "rc5":
		return OrderRC5, nil
	}
	return 0, fmt.Errorf("rlmesh order %q (want 0.1 or rc5): %w", s, ErrConfig)
}

// DefaultMaxEpisodeSteps is the step cap rlmesh applies under disabled
// autoreset when no cap is configured, so an env that never ends an
// episode is truncated instead of hanging the run.
const DefaultMaxEpisodeSteps = 100_000

// String returns "next-step" or "disabled".
func (a Autoreset) String() string {
	switch a {
	case AutoresetNextStep:
		return "next-step"
	case AutoresetDisabled:
		return "disabled"
	}
	return fmt.Sprintf("Autoreset(%d)", uint8(a))
}

// ParseAutoreset parses "next-step" or "disabled".
func ParseAutoreset(s string) (Autoreset, error) {
	switch s {
	case "next-step":
		return AutoresetNextStep, nil
	case "disabled":
		return AutoresetDisabled, nil
	}
	return 0, fmt.Errorf("autoreset %q (want next-step or disabled): %w", s, ErrConfig)
}

// Config is one simulated session: a route run with the runtime's knobs.
type Config struct {
	// Env names a built-in environment (see Envs).
	Env string
	// NumEnvs is the number of lanes, N (>= 1). N > 1 requires next-step
	// autoreset.
	NumEnvs int
	// Autoreset is the autoreset mode (required).
	Autoreset Autoreset
	// Order is the rlmesh release the session follows: 0.1 (the zero
	// value) or rc5.
	Order Order
	// LaneServed (0.1 only) makes the env a lane-served one (rlmesh's
	// subset_step, an EnvServer of several envs): with NumEnvs > 1 each
	// lane is its own group with its own reset, predict and step loop, in
	// simulated time, so the lanes' events interleave; they carry
	// route.lane, env_index = the lane, one-element id, reward and flag
	// vectors and num_envs 1. Allowed under either autoreset mode.
	LaneServed bool
	// Transform (0.1 only) simulates transform hooks that change some
	// payloads, so raw_observation and raw_action differ from what the
	// model and the env received on those steps: the observation transform
	// repeats a group's previous observation on every 4th step observation
	// (a dropped camera frame), the action transform holds its previous
	// action on every 5th action (an action repeat). Without it raw
	// payloads equal the transformed ones and are left out.
	Transform bool
	// RelayAdvisory (0.1 only) simulates a custom relay policy that
	// converts the observation for the model: one RelayAdvisory event
	// (env to model, caution) right after SessionStarted. Stock rlmesh
	// never sends one.
	RelayAdvisory bool
	// MaxEpisodes ends the session with SessionEnded once this many
	// episodes have completed (>= 1).
	MaxEpisodes int64
	// MaxEpisodeSteps, when > 0, is the runtime's per-episode step cap,
	// allowed only under disabled autoreset (which caps at
	// DefaultMaxEpisodeSteps when it is 0): an episode reaching it that
	// the env did not end on the same step completes with truncated=true,
	// after the env's own completions of that step.
	MaxEpisodeSteps int64
	// MaxEpisodeTime, when > 0, is the runtime's per-episode time cap (read
	// from Clock), allowed only under disabled autoreset; it truncates like
	// MaxEpisodeSteps.
	MaxEpisodeTime time.Duration
	// CapsCompleteOnce models an env that keeps no episodes of its own,
	// instead of rlmesh's env server (the default, as every rlmesh env
	// runs behind one, the local runner's too). Under disabled autoreset
	// a capped episode (MaxEpisodeSteps, MaxEpisodeTime) is completed by
	// the runtime, which resets the lane; the env server still holds the
	// episode, so the reset interrupts it, and on the next step the
	// server reports it: a second EpisodeCompleted for the same record id
	// (truncated, no final_info, the server's step count and times),
	// which rlmesh counts among the completed episodes, followed by
	// another reset that interrupts the episode just started. From then
	// on each episode of the lane lasts one step and its completion comes
	// one step late, until the env itself ends an episode on its one
	// step. With CapsCompleteOnce, a capped episode completes once and
	// the lane resets cleanly. This is rc5's behaviour: rlmesh 0.1 drops
	// the server's stale report, so under Order01 a capped episode always
	// completes once.
	CapsCompleteOnce bool
	// TimeLimit, when > 0, is the env's own time limit (a gymnasium
	// TimeLimit wrapper): the env truncates an episode at this many steps,
	// as pick-place and all-leaves do by themselves. It is the env's, not
	// the runtime's, so it is allowed under either autoreset mode, and its
	// truncations are env completions (final_info included).
	TimeLimit int64
	// EmptyRewards makes the env report a step on which every lane's
	// reward is 0 with an empty rewards vector, which rlmesh reads as all
	// zero: that StepCompleted has an empty Rewards slice.
	EmptyRewards bool
	// Seed makes the run reproducible: with the same Seed, Config and a
	// deterministic Clock (StepClock), two runs emit identical events.
	Seed uint64
	// FailAfterSteps, when > 0, injects a failure: after this many batch
	// steps the next env step fails mid-episode (its ActionReceived is
	// emitted, no StepCompleted), and the session ends with the final
	// telemetry and SessionFailed. A session reaching MaxEpisodes first
	// ends normally.
	FailAfterSteps int64
	// TelemetryInterval, when > 0, delivers window telemetry snapshots from
	// a separate goroutine at this interval. They are wall-clock driven and
	// so are the one part of a stream that is not reproducible; leave it 0
	// when comparing streams.
	TelemetryInterval time.Duration
	// LateWindow delivers one more window TelemetrySnapshot after the
	// session's end, as rlmesh can: its telemetry ticker is aborted, not
	// awaited, so a window snapshot already in flight arrives after
	// SessionEnded. Where it lands is drawn from Seed: after the first of
	// the two closing events (SessionEnded, or on failure the final
	// session snapshot) or after both. It holds the samples since the last
	// window (all of them when TelemetryInterval is 0) and is emitted from
	// the session's goroutine, so the run stays reproducible. Like any
	// window it is skipped when empty, as it may be when the ticker has
	// just taken the last samples.
	LateWindow bool
	// Clock gives the session's start: it is read once (and for minted
	// session and env ids); nil means time.Now. From there the session
	// runs in simulated time (every event time, episode id, duration_ms,
	// time cap and telemetry duration): each step takes the env's control
	// period (ControlPeriod), whatever the speed of the loop.
	Clock func() time.Time
	// ControlPeriod, when > 0, replaces the env's control period (0.02 s
	// for cartpole, 0.1 s for pick-place, 0.05 s for all-leaves; see
	// ControlPeriod()), the simulated time between two steps.
	ControlPeriod time.Duration
	// SessionID is the session id; "" mints a UUIDv7 from Clock and Seed.
	SessionID string
	// Route names the route; the zero value derives one from Env.
	Route events.RuntimeEnvContext

	// testEnv, when set, replaces Env's factory (tests only).
	testEnv envFactory
}

// Validate reports whether Run accepts c: an error wrapping ErrUnknownEnv
// or ErrConfig, naming the field or the rlmesh rule c breaks.
func (c *Config) Validate() error {
	if _, err := lookupEnv(c.Env); err != nil && c.testEnv == nil {
		return err
	}
	switch {
	case c.NumEnvs < 1:
		return fmt.Errorf("num_envs %d, want >= 1: %w", c.NumEnvs, ErrConfig)
	case c.Autoreset != AutoresetNextStep && c.Autoreset != AutoresetDisabled:
		return fmt.Errorf("autoreset %v, want next-step or disabled: %w", c.Autoreset, ErrConfig)
	case c.MaxEpisodes < 1:
		return fmt.Errorf("max_episodes %d, want >= 1: %w", c.MaxEpisodes, ErrConfig)
	case c.Order != Order01 && c.Order != OrderRC5:
		return fmt.Errorf("order %v, want 0.1 or rc5: %w", c.Order, ErrConfig)
	case c.Order == OrderRC5 && (c.LaneServed || c.Transform || c.RelayAdvisory):
		return fmt.Errorf("lane-served envs, transforms and relay advisories are rlmesh 0.1's, not rc5's: %w", ErrConfig)
	case c.NumEnvs > 1 && c.Autoreset != AutoresetNextStep && !c.LaneServed:
		return fmt.Errorf("num_envs %d with %v autoreset: num_envs > 1 requires next-step autoreset (disabled is allowed only with num_envs = 1, or with lane-served envs in rlmesh 0.1): %w", c.NumEnvs, c.Autoreset, ErrConfig)
	case c.MaxEpisodeSteps < 0:
		return fmt.Errorf("max episode steps %d, want >= 0 (0 = no cap): %w", c.MaxEpisodeSteps, ErrConfig)
	case c.MaxEpisodeTime < 0:
		return fmt.Errorf("max episode time %v, want >= 0 (0 = no cap): %w", c.MaxEpisodeTime, ErrConfig)
	case (c.MaxEpisodeSteps > 0 || c.MaxEpisodeTime > 0) && c.Autoreset != AutoresetDisabled:
		return fmt.Errorf("a step or time cap with %v autoreset: step and time caps require disabled autoreset (under next-step the env owns resets): %w", c.Autoreset, ErrConfig)
	case c.TimeLimit < 0:
		return fmt.Errorf("time limit %d, want >= 0 (0 = none): %w", c.TimeLimit, ErrConfig)
	case c.FailAfterSteps < 0:
		return fmt.Errorf("fail after %d steps, want >= 0 (0 = never): %w", c.FailAfterSteps, ErrConfig)
	case c.ControlPeriod < 0:
		return fmt.Errorf("control period %v, want >= 0 (0 = the env's): %w", c.ControlPeriod, ErrConfig)
	case c.TelemetryInterval < 0:
		return fmt.Errorf("telemetry interval %v, want >= 0: %w", c.TelemetryInterval, ErrConfig)
	}
	return nil
}

// stepCap returns the runtime's step cap in effect, 0 for none.
func (c *Config) stepCap() int64 {
	if c.MaxEpisodeSteps == 0 && c.Autoreset == AutoresetDisabled {
		return DefaultMaxEpisodeSteps
	}
	return c.MaxEpisodeSteps
}
