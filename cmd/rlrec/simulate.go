package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/sim"
)

// simulateOptions are the simulate command's flags.
type simulateOptions struct {
	force        bool
	env          string
	envs         int
	episodes     int64
	autoreset    string
	maxSteps     int64
	sessions     int
	failAfter    int64
	seed         uint64
	out          string
	telemetry    time.Duration
	period       time.Duration
	rlmesh       string
	laneServed   bool
	transform    bool
	advisory     bool
	reproducible bool
	to           string
	tokenFile    string
	tlsCA        string
}

// simulateFlags holds the parsed flags; SetFlags binds them.
var simulateFlags simulateOptions

// simulateClockStart is where --reproducible clocks start.
var simulateClockStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var cmdSimulate = &Command{
	Name:      "simulate",
	UsageLine: "simulate [--env NAME] [--envs N] [--episodes N] [--autoreset next-step|disabled] [--max-steps N] [--sessions N] [--fail-after N] [--seed N] [--rlmesh 0.1|rc5] [--lane-served] [--transform] [--relay-advisory] [--period DURATION] [--telemetry-interval DURATION] [--reproducible] -o FILE|- [--force] | --to ADDR [--token-file FILE] [--tls-ca FILE]",
	Short:     "write the event stream of simulated rlmesh sessions",
	Long: `Simulate runs built-in rlmesh sessions (a simulated runtime driving a
built-in environment and policy over N vectorized lanes) and writes their
hook events as a length-delimited protobuf event stream, the input of
'rlrec ingest'.

Environments (--env):
  cartpole     classic control: Box(4) float32 observation, Discrete(2) action
  pick-place   manipulation: 84x84x3 camera image, 7-float state and a text
               instruction; Box(7) action; sparse success reward
  all-leaves   every leaf kind and dtype, for coverage

The sessions follow rlmesh 0.1's driver (--rlmesh 0.1, the default): its
event order (an episode that ends under next-step autoreset completes on
the next step, the lane's roll; the final telemetry comes before
SessionEnded) and its fields (per-lane terminated, truncated and
autoreset_roll flags, seeds, trial indices, success, step and reset infos,
predict and step times). --episodes is the budget: exactly that many
episodes start and complete, and lanes beyond it run surplus episodes,
which appear in the id vectors but never start or complete. --rlmesh rc5
gives rlmesh v0.1.0-rc.5's order and fields instead (the session stops
once --episodes have completed, possibly more on one step; episodes still
running stay open).

As in rlmesh, more than one lane requires --autoreset next-step, unless
--lane-served (rlmesh 0.1's lane-served env, an env server of several
envs: each lane is its own group with its own reset, predict and step
loop, so the lanes' events interleave, each carrying its lane); disabled
autoreset's episodes are truncated by the runtime at --max-steps steps
(100,000 by default); a step cap under next-step is refused, since the
env owns resets there. --transform simulates transform hooks that change
some observations and actions (raw_observation and raw_action then differ
from what the model and env received); --relay-advisory adds a relay
policy's RelayAdvisory. --fail-after injects a failure: after that many
steps the session fails mid-episode (SessionFailed, no SessionEnded).
With --sessions S, the sessions run concurrently into one stream,
session i with seed X+i.

Every event carries the time of its hook call (time_unix_nano) in the
simulated runtime's time, and 'rlrec ingest' keeps it: a session starts
now and each step takes the env's control period (cartpole 0.02 s, as
gymnasium's; pick-place 0.1 s, a 10 Hz camera; all-leaves 0.05 s; or
--period), with simulated predict and env step times within it, however
fast the simulation runs. So 'rlrec export' gives the env's frame rate.
With --reproducible the sessions start at 2026-01-01T00:00:00Z instead of
now, so one session's flags always give the same bytes, times included,
and ingesting them gives the same tables; concurrent sessions
(--sessions > 1) still interleave in a varying order.
--telemetry-interval adds window telemetry snapshots, which are
wall-clock driven and so never reproducible.

Under --autoreset disabled, a capped episode is followed as rlmesh's env
server has it: the runtime completes it at the cap and resets the lane,
the env server reports it again on the next step, and the lane's later
episodes last one step each (see 'rlrec inspect', which explains it).

The output goes to FILE, written in full under a temporary name and then
renamed, or to standard output with -o -. With --to ADDR the events go
instead to the 'rlrec serve' listening there, through the Go client
(package client), which reconnects and resends by itself; simulate ends
once the server has acknowledged every event durable. --token-file gives
the server's token, --tls-ca the CA (PEM) that signed its certificate,
for a server started with --tls-cert.

Example:

  rlrec simulate --env cartpole --envs 16 --episodes 200 \
      --autoreset next-step -o cartpole.events
  rlrec simulate --env pick-place --envs 4 --episodes 8 --sessions 2 \
      --fail-after 40 -o - > pick.events
  rlrec simulate --env cartpole --envs 16 --episodes 200 \
      --to 127.0.0.1:7465`,
	SetFlags: func(fs *flag.FlagSet) {
		f := &simulateFlags
		fs.StringVar(&f.env, "env", "cartpole", "built-in environment `NAME`: "+strings.Join(sim.Envs(), ", "))
		fs.IntVar(&f.envs, "envs", 4, "`N` vectorized lanes (num_envs) per session")
		fs.Int64Var(&f.episodes, "episodes", 10, "end each session once `N` episodes have completed (max_episodes)")
		fs.StringVar(&f.autoreset, "autoreset", "next-step", "autoreset `MODE`: next-step or disabled")
		fs.Int64Var(&f.maxSteps, "max-steps", 0, "with --autoreset disabled: truncate episodes at `N` steps (0: rlmesh's default, 100,000)")
		fs.IntVar(&f.sessions, "sessions", 1, "run `N` sessions concurrently")
		fs.Int64Var(&f.failAfter, "fail-after", 0, "fail each session after `N` steps (0: never)")
		fs.Uint64Var(&f.seed, "seed", 1, "base seed `N`; session i uses N+i")
		f.out = ""
		outFlag(fs, &f.out, "output `FILE`, or - for standard output (required without --to)")
		forceFlag(fs, &f.force)
		fs.DurationVar(&f.telemetry, "telemetry-interval", 0, "emit window telemetry snapshots every `DURATION`, such as 200ms (0: none)")
		fs.StringVar(&f.rlmesh, "rlmesh", "0.1", "the rlmesh `ORDER` to follow: 0.1 or rc5")
		fs.BoolVar(&f.laneServed, "lane-served", false, "a lane-served env: each lane its own group, interleaved (rlmesh 0.1)")
		fs.BoolVar(&f.transform, "transform", false, "simulate transform hooks that change some payloads (rlmesh 0.1)")
		fs.BoolVar(&f.advisory, "relay-advisory", false, "simulate a relay policy's advisory (rlmesh 0.1)")
		fs.DurationVar(&f.period, "period", 0, "the control period, simulated time per step, such as 33ms (0: the env's)")
		fs.BoolVar(&f.reproducible, "reproducible", false, "start the simulated time at a fixed instant so the same flags give the same bytes")
		fs.StringVar(&f.to, "to", "", "send the events to the rlrec serve at `ADDR` (host:port) instead of -o")
		fs.StringVar(&f.tokenFile, "token-file", "", "with --to: read the server's token from `FILE`")
		fs.StringVar(&f.tlsCA, "tls-ca", "", "with --to: connect over TLS, trusting the CA certificates in PEM `FILE`")
	},
	Run: runSimulate,
}

func runSimulate(ctx context.Context, env *Env, args []string) error {
	f := simulateFlags
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	cfgs, err := simulateConfigs(f)
	if err != nil {
		return err
	}
	if f.to != "" {
		if f.out != "" {
			return usagef("give -o or --to, not both")
		}
		return simulateTo(ctx, env, f, cfgs)
	}
	if f.tokenFile != "" || f.tlsCA != "" {
		return usagef("--token-file and --tls-ca go with --to")
	}
	if f.out == "" {
		return usagef("no output: give -o FILE, or -o - for standard output, or --to ADDR")
	}
	if f.out == "-" && env.StdoutTerminal {
		return refuseTerminal("the event stream")
	}
	if err := checkNewFile(f.out, f.force); err != nil {
		return err
	}
	write := func(w io.Writer) ([]sim.Summary, error) {
		bw := bufio.NewWriterSize(w, 1<<20)
		sums, err := sim.RunSessions(ctx, sim.NewStreamHooks(events.NewStreamWriter(bw)), cfgs)
		if err != nil {
			return nil, err
		}
		if err := bw.Flush(); err != nil {
			return nil, fmt.Errorf("write events: %w", err)
		}
		return sums, nil
	}
	var sums []sim.Summary
	if f.out == "-" {
		sums, err = write(env.Stdout)
	} else {
		sums, err = writeFileAtomic(vfs.OS(), f.out, write)
	}
	if err != nil {
		return err
	}
	dest := f.out
	if dest == "-" {
		dest = "standard output"
	}
	reportSimulated(env, f, sums, "events written to "+dest)
	return nil
}

// reportSimulated prints what the sessions did, and where their events
// went.
func reportSimulated(env *Env, f simulateOptions, sums []sim.Summary, where string) {
	var steps, laneSteps, episodes, failed int64
	for _, s := range sums {
		steps += s.Steps
		laneSteps += s.LaneSteps
		episodes += s.Episodes
		if s.Failed {
			failed++
		}
	}
	fmt.Fprintf(env.Stderr, "simulated %s of %s (%d failed): %s, %s, %s completed; %s\n",
		count(len(sums), "session"), f.env, failed, count(steps, "step"), count(laneSteps, "lane-step"), count(episodes, "episode"), where)
}

// simulateConfigs turns the flags into one config per session.
func simulateConfigs(f simulateOptions) ([]sim.Config, error) {
	known := false
	for _, name := range sim.Envs() {
		known = known || name == f.env
	}
	switch {
	case !known:
		return nil, usagef("--env %q: want one of %s", f.env, strings.Join(sim.Envs(), ", "))
	case f.envs < 1:
		return nil, usagef("--envs %d: want at least 1 lane", f.envs)
	case f.episodes < 1:
		return nil, usagef("--episodes %d: want at least 1", f.episodes)
	case f.sessions < 1:
		return nil, usagef("--sessions %d: want at least 1", f.sessions)
	case f.maxSteps < 0:
		return nil, usagef("--max-steps %d: want 0 (no cap) or more", f.maxSteps)
	case f.failAfter < 0:
		return nil, usagef("--fail-after %d: want 0 (never) or more", f.failAfter)
	case f.telemetry < 0:
		return nil, usagef("--telemetry-interval %v: want 0 (none) or more", f.telemetry)
	case f.period < 0:
		return nil, usagef("--period %v: want 0 (the env's) or more", f.period)
	}
	mode, err := sim.ParseAutoreset(f.autoreset)
	if err != nil {
		return nil, usagef("--autoreset %q: want next-step or disabled", f.autoreset)
	}
	order, err := sim.ParseOrder(f.rlmesh)
	if err != nil {
		return nil, usagef("--rlmesh %q: want 0.1 or rc5", f.rlmesh)
	}
	// What rlmesh validates before a run.
	switch {
	case order == sim.OrderRC5 && (f.laneServed || f.transform || f.advisory):
		return nil, usagef("--lane-served, --transform and --relay-advisory are rlmesh 0.1's: not with --rlmesh rc5")
	case f.envs > 1 && mode != sim.AutoresetNextStep && !f.laneServed:
		return nil, usagef("--envs %d with --autoreset %s: more than one lane requires next-step autoreset (rlmesh allows disabled only with --envs 1, or with --lane-served)", f.envs, mode)
	case f.maxSteps > 0 && mode != sim.AutoresetDisabled:
		return nil, usagef("--max-steps %d with --autoreset %s: a step cap requires disabled autoreset (under next-step the env owns resets)", f.maxSteps, mode)
	}
	cfgs := make([]sim.Config, f.sessions)
	for i := range cfgs {
		cfgs[i] = sim.Config{
			Env: f.env, NumEnvs: f.envs, Autoreset: mode, MaxEpisodes: f.episodes,
			MaxEpisodeSteps: f.maxSteps, FailAfterSteps: f.failAfter, Seed: f.seed + uint64(i),
			TelemetryInterval: f.telemetry, ControlPeriod: f.period,
			Order: order, LaneServed: f.laneServed, Transform: f.transform, RelayAdvisory: f.advisory,
		}
		if f.reproducible {
			cfgs[i].Clock = sim.StepClock(simulateClockStart, time.Millisecond)
		}
	}
	return cfgs, nil
}

// writeFileAtomic writes name through write: into a temporary file in the
// same directory, which is synced, renamed to name and followed by a sync
// of the directory. On any error the temporary file is removed and name is
// left as it was.
func writeFileAtomic[T any](fsys vfs.FS, name string, write func(io.Writer) (T, error)) (T, error) {
	var zero T
	dir := filepath.Dir(name)
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", filepath.Base(name), os.Getpid()))
	file, err := fsys.Create(tmp)
	if err != nil {
		return zero, fmt.Errorf("create %s (is the directory there and writable?): %w", tmp, err)
	}
	res, err := write(file)
	if err == nil {
		if err = file.Sync(); err != nil {
			err = fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	if cerr := file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", tmp, cerr)
	}
	if err == nil {
		if err = fsys.Rename(tmp, name); err != nil {
			err = fmt.Errorf("rename %s to %s: %w", tmp, name, err)
		}
	}
	if err != nil {
		if rerr := fsys.Remove(tmp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", tmp, rerr))
		}
		return zero, err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return zero, fmt.Errorf("sync directory %s after writing %s: %w", dir, name, err)
	}
	return res, nil
}
