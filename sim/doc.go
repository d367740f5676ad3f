// Package sim is a simulated rlmesh runtime: it drives built-in vectorized
// environments with built-in policies and delivers the runtime's hook events
// (package events) in the order, with the fields and the identities of
// rlmesh 0.1's driver (rlmesh-runtime 0.1.0, src/driver.rs), or on
// Config.Order = OrderRC5 of rlmesh v0.1.0-rc.5's. It is the event source
// for rlrec's demo, tests and benchmarks.
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
// # What the runtime allows
//
// A Config is checked before anything is emitted, as rlmesh checks its
// session spec: NumEnvs > 1 requires next-step autoreset, unless the env
// is lane-served (0.1's LaneServed: disabled autoreset is then allowed
// with several lanes); there is no same-step mode. The runtime's step and
// time caps (MaxEpisodeSteps, MaxEpisodeTime) require disabled autoreset,
// which caps episodes at DefaultMaxEpisodeSteps when no step cap is given.
// Under next-step the env owns resets and truncations: the built-in envs'
// own limits and Config.TimeLimit (a gymnasium TimeLimit wrapper).
//
// # Event order in one session: rlmesh 0.1 (the default)
//
// A route's lanes form groups: the whole vector is one group, or with
// LaneServed (rlmesh's subset_step) each lane is its own group with its
// own reset, predict and step cycle. Groups run concurrently in simulated
// time, so their events interleave and several ActionReceived can be
// outstanding at once; a group's events carry route.lane = its lane (a
// lane group) or no lane (the vector), and vectors of the group's width
// (num_envs is the group width: 1 for a lane).
//
//	SessionStarted                              no lane
//	[RelayAdvisory]                             Config.RelayAdvisory: env to model, caution
//	per group, as its calls land:
//	  Log("env reset complete in {N}ms ({w} episode(s) ready)", source "runtime")
//	  EpisodeStarted x (scored lanes)           auto_reset=false, seed, trial_index (DISABLED)
//	  ObservationEmitted(is_reset=true, step=0, reset infos)
//	  loop:
//	    ActionReceived(step = lane-0 step + 1)  the group's ids before the step
//	    StepCompleted(step, rewards, infos, terminated[], truncated[],
//	                  autoreset_roll[], predict_ms, step_ms)
//	    NEXT_STEP, lanes rolling on this step:
//	        EpisodeCompleted x k                the completions deferred from the step before
//	        EpisodeStarted(auto_reset=true)     the rolled lanes' new scored episodes; no seed,
//	                                            no trial_index
//	    this step's completions (the env's, then the runtime's caps, in lane order):
//	        DISABLED: EpisodeCompleted now; NEXT_STEP: deferred to the roll step
//	    if completed episodes >= MaxEpisodes (a vector, or any group under NEXT_STEP),
//	       or the group holds only surplus episodes: deferred completions go out now,
//	       the group is done
//	    DISABLED with a completion: the group is reset (EpisodeStarted(auto_reset=true),
//	       ObservationEmitted(is_reset=true)); with no slot left in the budget it is done
//	    otherwise: ObservationEmitted(is_reset=false; on a roll with the new ids and the
//	       roll's reset infos)
//	once every group is done: final TelemetrySnapshot(Session), SessionEnded
//	on failure: final TelemetrySnapshot(Session), SessionFailed; other lane groups
//	    may each end on an ActionReceived with no StepCompleted
//
// The budget (MaxEpisodes) bounds episode starts: each scored episode
// claims a route-global slot, and exactly MaxEpisodes complete. A vector
// wider than the budget left starts its other lanes, and a NEXT_STEP roll
// past the budget starts its lane, as surplus episodes: their ids and
// record ids are in the vectors, they get no EpisodeStarted and no
// EpisodeCompleted. A lane group finding no slot never resets. Episode
// indices are their slots + 1 (a surplus episode's is the count of
// episodes ever given ids), so with lanes the order of ep-NNNNNN follows
// the lanes' timing. EpisodeStarted.env_index is the episode's position in
// its group, as rlmesh 0.1's registry numbers it: 0 for every lane of a
// lane-served env (its lane is in route.lane); every other event's
// env_index is the group's first lane. EpisodeCompleted is the last event
// under its id in both modes; the rc.5 env server's second report of a
// capped episode is dropped as stale, so a capped episode completes once,
// its final_info the step's infos (one lane).
//
// The 0.1 fields, as the simulator fills them: seeds are rlmesh's
// deterministic_reset_seed with base_seed = Config.Seed (every driver
// reset is seeded; NEXT_STEP rolls are the env's and carry none);
// trial_index counts the driver's resets from 0 (none under NEXT_STEP);
// success is rlmesh's reading of final_info (is_success, success,
// task_success); step infos are {"elapsed_steps": each lane's step count}
// and reset infos {"resets": each lane's reset count} (an integer for one
// lane, a list for several); predict_ms and step_ms are the simulated
// times, per step and per episode (means). raw_observation and raw_action
// are left out (equal) unless Config.Transform simulates transforms that
// change some payloads.
//
// # Event order in one session: rlmesh rc.5 (Config.Order = OrderRC5)
//
//	SessionStarted
//	Log("env reset complete in {N}ms ({k} episode(s) ready)", source "runtime")
//	EpisodeStarted x N                       lanes 0..N-1, auto_reset=false
//	ObservationEmitted(is_reset=true, step=0)
//	loop:
//	  ActionReceived(step = lane-0 step + 1)  ids = every lane's ids before the step
//	  StepCompleted(step, rewards[N])         lane 0's ids of that ActionReceived
//	  next-step: EpisodeStarted(auto_reset=true) for lanes that completed on the previous step
//	  EpisodeCompleted x k                    the env server's reports of interrupted episodes,
//	                                          the env's, in lane order, then the runtime's
//	                                          caps (truncated=true), in lane order
//	  if completed episodes >= MaxEpisodes: SessionEnded("completed requested episodes"),
//	                                        final TelemetrySnapshot(Session), stop
//	  disabled, k > 0: EpisodeStarted(auto_reset=true) (the lane is reset at once;
//	                   an episode the env did not end is interrupted),
//	                   ObservationEmitted(is_reset=true)
//	  otherwise:       ObservationEmitted(is_reset=false)
//	on failure: final TelemetrySnapshot(Session), SessionFailed(the runtime's error text)
//
// Window TelemetrySnapshots come from a separate goroutine every
// Config.TelemetryInterval and may interleave with the events above; a
// window in which nothing was recorded is skipped. The goroutine is
// stopped (and waited for) before the closing events, so a session's last
// two events are (0.1) the session snapshot then SessionEnded or
// SessionFailed, or (rc.5) SessionEnded then the session snapshot, or the
// session snapshot then SessionFailed; unless Config.LateWindow is set: rlmesh's
// ticker is aborted, not awaited, so a window snapshot in flight can come
// after the end, and with LateWindow one does, after the first closing
// event or after both (drawn from Seed).
//
// # Times
//
// A session runs in simulated time, not at the speed of its loop:
// Config.Clock is read once for its start, and from there each call takes
// a simulated duration (an env reset, a predict, an env step, drawn from
// the session's seed) and each step takes the env's control period: 0.02 s
// for cartpole (gymnasium's tau, 50 Hz), 0.1 s for pick-place (a 10 Hz
// camera), 0.05 s for all-leaves, or Config.ControlPeriod; a lane-served
// env's lanes keep their own rhythm, offset by their resets. Within a step,
// ActionReceived comes when the predict ends and the step's other events
// when the env step ends; the next step's predict starts one period after
// this one's (later only when a round overran its period). So a recording
// of a simulated run, and an export of it, gives the env's rate however
// fast the machine ran it.
//
// Every event is handed over with its simulated time through
// events.DispatchAt: hooks that take times (events.TimedHooks: the
// recorder, the serve client, StreamHooks) record that time, so a run with
// a fixed start (StepClock) records the same times on every run; other
// hooks get the method call and stamp their own.
//
// # Capped episodes and rlmesh rc.5's env server (OrderRC5)
//
// Under disabled autoreset the runtime's caps complete an episode the env
// did not end and reset the lane. rlmesh's env server still holds that
// episode, so the reset interrupts it, and on the next step the server
// reports it (drain_interrupted): the runtime emits a second
// EpisodeCompleted for the same record id (truncated, no final_info, the
// server's step count, reward and times), counts it as a completed
// episode, and resets the lane again, interrupting the episode that had
// just started. From then on each episode of the lane lasts one step, its
// completion one step late, until the env ends an episode on its one step.
// The simulator models this under OrderRC5; Config.CapsCompleteOnce models
// an env without a server's bookkeeping, whose capped episodes complete
// once, as they always do in rlmesh 0.1 (its driver drops the stale report).
//
// # Telemetry
//
// Snapshots carry rlmesh's series as its local runner reports them (see
// telemetry.go): env.step/env and env.reset/env with rpc.total and
// endpoint.total (ms), request.bytes and response.bytes; model.predict/
// model with rpc.total, request.bytes and response.bytes (an in-process
// model reports no endpoint.total and no group.size);
// runner.transform_observation, runner.transform_action and
// runner.round/runner with rpc.total. Rows are sorted by (op, component,
// metric); count is every sample, avg and the nearest-rank quantiles are
// over a reservoir of 8,192 samples drawn with rlmesh's xorshift64*
// generator, so they match rlmesh's past 8,192 samples too.
//
// # Identity
//
// Episode ids are UUIDv7 built from the simulated time and an RNG stream of
// Config.Seed. Record ids are ep-NNNNNN, session-global, 1-based; under rc.5
// they are assigned in lane order as episodes start (0.1: from the
// episodes' slots, above); EpisodeIndex is the same number. The step
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
// step's StepCompleted (0.1: its autoreset_roll is set, and the ended
// episode's EpisodeCompleted comes between the two). Under disabled
// autoreset the terminal observation is never emitted.
//
// # Decisions where rlmesh rc.5 was silent (OrderRC5)
//
//   - MaxEpisodes counts completed episodes (EpisodeCompleted events). It is
//     checked after all of a step's completions have been reported, so when
//     several lanes finish on the same step the session may end with up to
//     N-1 more than MaxEpisodes; SessionEnded.TotalEpisodes is the exact
//     count.
//   - When MaxEpisodes is reached the runtime just stops: lanes whose
//     episodes are still running get no EpisodeCompleted. Every
//     EpisodeStarted therefore has at most one EpisodeCompleted, besides
//     the env server's report of an interrupted capped episode (above);
//     those without one are each lane's latest episode at SessionEnded,
//     and an interrupted one whose report had not come yet (a recorder
//     sees them as incomplete). A failed session likewise leaves its
//     running episodes open.
//   - SessionEnded.TotalSteps counts batch steps (one per ActionReceived
//     that was applied), not lane steps.
//   - The runtime's caps truncate an episode that reaches them on a step
//     the env did not end it; when the env ends it on that step, the env's
//     completion (terminated or truncated, with final_info) is the one
//     reported. Capped completions have no final_info.
//   - An injected failure (FailAfterSteps = K) happens in the env step after
//     K completed batch steps: that step's ActionReceived is delivered, no
//     StepCompleted follows. A cancelled context fails the session at the
//     start of the next step.
//   - With Config.EmptyRewards, a step on which every lane's reward is 0 is
//     reported with an empty Rewards slice (an env may send an empty
//     rewards vector, meaning all zero).
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
