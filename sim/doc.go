// Package sim is a simulated rlmesh runtime: it drives built-in vectorized
// environments with built-in policies and delivers the runtime's hook events
// (package events) in the order and with the identities RLMESH.md §4-5
// specify. It is the event source for rlrec's demo, tests and benchmarks.
//
// Usage:
//
//	sum, err := sim.Run(ctx, hooks, sim.Config{
//		Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep,
//		MaxEpisodes: 100, Seed: 1,
//	})
//
// RunSessions runs several sessions concurrently into one shared Hooks.
// StreamHooks writes what it receives as an event stream (the input of
// rlrec ingest); Envs lists the built-in environments: cartpole (classic
// control), pick-place (camera image, state and instruction) and
// all-leaves (every leaf kind and dtype).
//
// # Event order in one session
//
//	SessionStarted
//	Log("env reset complete: ...")
//	EpisodeStarted x N                       lanes 0..N-1, auto_reset=false
//	ObservationEmitted(is_reset=true, step=0)
//	loop:
//	  ActionReceived(step = lane-0 step + 1)  ids = every lane's ids before the step
//	  StepCompleted(step, rewards[N])         lane 0's ids of that ActionReceived
//	  next-step: EpisodeStarted(auto_reset=true) for lanes that completed on the previous step
//	  EpisodeCompleted x k                    in lane order
//	  if completed episodes >= MaxEpisodes: SessionEnded, final TelemetrySnapshot(Session), stop
//	  disabled, k > 0: EpisodeStarted(auto_reset=true) for the k lanes (reset at once),
//	                   ObservationEmitted(is_reset=true), full N-lane slab
//	  otherwise:       ObservationEmitted(is_reset=false)
//	on failure: final TelemetrySnapshot(Session), SessionFailed
//
// Window TelemetrySnapshots come from a separate goroutine every
// Config.TelemetryInterval and may interleave with the events above; the
// goroutine is stopped (and waited for) before the closing events, so a
// session's last two events are always SessionEnded then the session
// snapshot, or the session snapshot then SessionFailed.
//
// # Identity
//
// Episode ids are UUIDv7 built from Config.Clock and an RNG stream of
// Config.Seed. Record ids are ep-NNNNNN, session-global, 1-based, assigned in
// lane order as episodes start; EpisodeIndex is the same number. The step
// field is lane 0's per-episode counter: ActionReceived and StepCompleted
// carry lane 0's counter before the step plus one; ObservationEmitted carries
// lane 0's counter after it (0 once lane 0 has been reset).
//
// Under next-step autoreset a lane that completes keeps its ids: the next
// ObservationEmitted carries its terminal observation under the completed
// episode's ids, and on the following step ActionReceived still names the
// completed episode while the env ignores that lane's action and resets it
// (reward 0). That step belongs to no episode and is not counted in any
// StepCount; EpisodeStarted(auto_reset=true) for the lane follows that
// step's StepCompleted. Under disabled autoreset the terminal observation is
// never emitted.
//
// # Decisions where RLMESH.md is silent
//
//   - MaxEpisodes counts completed episodes (EpisodeCompleted events). It is
//     checked after all of a step's completions have been reported, so when
//     several lanes finish on the same step the session may end with up to
//     N-1 more than MaxEpisodes; SessionEnded.TotalEpisodes is the exact
//     count.
//   - When MaxEpisodes is reached the runtime just stops: lanes whose
//     episodes are still running get no EpisodeCompleted. Every
//     EpisodeStarted therefore has at most one EpisodeCompleted; those
//     without one are exactly each lane's latest episode at SessionEnded
//     (a recorder sees them as incomplete). A failed session likewise
//     leaves its running episodes open.
//   - SessionEnded.TotalSteps counts batch steps (one per ActionReceived
//     that was applied), not lane steps.
//   - The runtime's step cap (MaxEpisodeSteps) truncates an episode that
//     reaches it without terminating; terminated wins when both happen on
//     the same step. An env may also truncate by itself (pick-place has a
//     time limit).
//   - An injected failure (FailAfterSteps = K) happens in the env step after
//     K completed batch steps: that step's ActionReceived is delivered, no
//     StepCompleted follows.
//
// # Determinism
//
// With the same Config (Seed included) and a deterministic clock such as
// StepClock, two runs deliver identical events, so an event stream written
// from them is identical byte for byte. Window telemetry is wall-clock
// driven and is the one exception; leave TelemetryInterval at 0 to compare
// streams.
//
// # Payloads
//
// Observations and actions are N-lane batch slabs, one per leaf in
// canonical pre-order: fixed-size leaves hold the N lanes' bytes
// concatenated row-major; a Text slab is [u64 count][u64 byte_len x count]
// [UTF-8 bodies], little-endian. Each session uses one observation and one
// action spec pointer for all its events. Slabs and id slices are reused
// from event to event: a Hooks must not retain them (see package events).
package sim
