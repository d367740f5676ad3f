package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// demoOptions are the demo command's flags.
type demoOptions struct {
	out    string
	logDir string
	seed   uint64
	layout layoutValue
}

var demoFlags demoOptions

var cmdDemo = &Command{
	Records:   true,
	Name:      "demo",
	UsageLine: "demo [-o DIR|s3://BUCKET/PREFIX] [--log-dir DIR] [--layout episode|session] [--seed N]",
	Short:     "record simulated sessions and show how to open them",
	Long: `Demo runs five simulated rlmesh 0.1 sessions at once into one recorder:
cartpole and pick-place (84x84x3 camera images and a text instruction),
each under both autoreset modes as rlmesh allows them: 16 and 4 lanes
under next-step, one lane under disabled; and a lane-served cartpole env
of 4 lanes (each lane its own loop, their events interleaved) under
disabled autoreset, with transform hooks that change some observations
and actions and a relay policy's advisory. Simulated time runs at each
env's control rate (cartpole 50 Hz, pick-place a 10 Hz camera). It
prints what it wrote (the files of this run only), why its lane-steps
outnumber its step rows, and the DuckDB and pandas one-liners that open
it.

The recording goes to DIR (default ./rlrec-demo). Running the demo again adds
new sessions beside the old ones.

Example:

  rlrec demo
  rlrec demo --out /tmp/demo && rlrec demo --out /tmp/demo`,
	SetFlags: func(fs *flag.FlagSet) {
		demoFlags = demoOptions{}
		demoFlags.out = "rlrec-demo"
		outFlag(fs, &demoFlags.out, "the ROOT `DIR` (or s3://bucket/prefix) to record into")
		logDirFlag(fs, &demoFlags.logDir)
		fs.Uint64Var(&demoFlags.seed, "seed", 1, "base seed `N` of the simulated sessions")
		bindLayout(fs, &demoFlags.layout)
	},
	Run: runDemo,
}

// demoSessions are the demo's runs. Like rlmesh's local runner, every run
// of one process shares the session id local-<pid>, and each gets its own
// UUIDv7 env id (the routing key): a recording is the pair. rlmesh allows
// disabled autoreset only with one lane, and the runtime's step cap only
// under disabled autoreset (pick-place ends its episodes after 60 steps
// by itself). The cartpole runs deliver window telemetry, and a window
// after their end as rlmesh's aborted ticker can. The lane-served run
// shows 0.1's interleaved lanes, raw payloads that differ from the sent
// ones, and a relay advisory. Tests replace it with smaller runs.
var demoSessions = func(seed uint64) []sim.Config {
	sid := fmt.Sprintf("local-%d", os.Getpid())
	return []sim.Config{
		{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 200, Seed: seed, TelemetryInterval: 200 * time.Millisecond, LateWindow: true, SessionID: sid},
		{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 50, Seed: seed + 1, TelemetryInterval: 200 * time.Millisecond, LateWindow: true, SessionID: sid},
		{Env: "pick-place", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 12, Seed: seed + 2, SessionID: sid},
		{Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 4, MaxEpisodeSteps: 60, Seed: seed + 3, SessionID: sid},
		{Env: "cartpole", NumEnvs: 4, LaneServed: true, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 20, Transform: true, RelayAdvisory: true, Seed: seed + 4, SessionID: sid},
	}
}

func runDemo(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	root := demoFlags.out
	// A ROOT that holds recordings already (an earlier demo) is added to:
	// what this run wrote is counted apart.
	existed := false
	if ok, _, err := isRoot(root); err == nil && ok {
		existed = true
	}
	start := time.Now()
	rec, err := openRecorder(ctx, env.Logger, root, demoFlags.logDir, append(demoFlags.layout.options(), recorder.WithLogger(env.Logger))...)
	if err != nil {
		return err
	}
	cfgs := demoSessions(demoFlags.seed)
	sums, runErr := sim.RunSessions(ctx, rec, cfgs)
	if err := rec.Close(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("simulated sessions: %w", runErr)
	}
	elapsed := time.Since(start)

	var laneSteps, surplus, episodes int64
	for _, s := range sums {
		laneSteps += s.LaneSteps
		surplus += s.SurplusLaneSteps
		episodes += s.Episodes
	}
	w := env.Stdout
	fmt.Fprintf(w, "Recorded %s (%s completed, %s) into %s in %.1fs.\n\n",
		count(len(sums), "simulated session"), count(episodes, "episode"), count(laneSteps, "lane-step"), root, elapsed.Seconds())
	for i, s := range sums {
		c := cfgs[i]
		lanes := count(c.NumEnvs, "lane")
		if c.LaneServed {
			lanes += ", served"
		}
		fmt.Fprintf(w, "  session %s  env %s  %-10s %-16s  autoreset %-9s  %s completed\n", s.SessionID, s.EnvID, c.Env, lanes, c.Autoreset, count(s.Episodes, "episode"))
	}
	fmt.Fprintln(w, "\n  As in rlmesh 0.1, a session's episode count is a budget: exactly that many\n"+
		"  episodes start and complete. Lanes the budget no longer covers run surplus\n"+
		"  episodes, which never start or complete; their steps are counted, not kept.")

	d, err := dataset.Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	mine := map[dataset.Recording]bool{}
	var rows, dropped, recSurplus int64
	for _, s := range sums {
		r := dataset.Recording{SessionID: s.SessionID, EnvID: s.EnvID}
		mine[r] = true
		sess, err := d.Session(r)
		if err != nil {
			return err
		}
		if row := sess.Row(); row != nil {
			rows += row.StepsRecorded
			dropped += row.DroppedSteps
			if row.SurplusSteps != nil {
				recSurplus += *row.SurplusSteps
			}
		}
	}
	fmt.Fprintf(w, "\n  The %d lane-steps are %d step rows and %d dropped steps: under next-step\n"+
		"  autoreset, the step after an episode ends on a lane only resets that lane\n"+
		"  (its autoreset_roll), so it belongs to no episode, and a lane past the\n"+
		"  budget runs a surplus episode; the sessions table counts both in\n"+
		"  dropped_steps, %d of them surplus (surplus_steps).\n",
		laneSteps, rows, dropped, recSurplus)
	if recSurplus != surplus {
		fmt.Fprintf(w, "  The simulator ran %d surplus lane-steps, the recording counts %d: run 'rlrec inspect %s'.\n", surplus, recSurplus, root)
	}
	if other := laneSteps - rows - dropped; other != 0 {
		fmt.Fprintf(w, "  %d more lane-steps were counted as problems: run 'rlrec inspect %s'.\n", other, root)
	}
	fmt.Fprintf(w, "\nThis run wrote:\n\n")
	printTableSizes(w, d, mine)
	if existed {
		fmt.Fprintf(w, "\n  %s held earlier recordings too; the queries below read them all.\n", root)
	}
	// Steps files of different spaces have different typed columns, so
	// the typed steps query reads one recording, and the one over every
	// recording's steps reads the fixed columns by name; the episodes
	// table is the same everywhere. hive_types_autocast=false keeps the
	// ids strings as written (DuckDB would read an id 007 as 7).
	episodesSrc := fmt.Sprintf("read_parquet('%s/episodes/**/*.parquet', hive_partitioning=true, hive_types_autocast=false)", root)
	fmt.Fprintf(w, "\nOpen it in DuckDB:\n\n")
	fmt.Fprintf(w, "  duckdb -c \"SELECT session_id, env_id, status, count(*) AS episodes, avg(cumulative_reward) AS mean_return FROM %s GROUP BY ALL ORDER BY ALL\"\n", episodesSrc)
	fmt.Fprintf(w, "  duckdb -c \"SELECT session_id, env_id, count(*) AS steps, sum(reward) AS reward FROM read_parquet('%s/steps/**/*.parquet', hive_partitioning=true, hive_types_autocast=false, union_by_name=true) GROUP BY ALL ORDER BY ALL\"\n", root)
	fmt.Fprintf(w, "  duckdb -c \"SELECT episode_record_id, step, reward, observation, action FROM read_parquet('%s/steps/session_id=%s/env_id=%s/**/*.parquet', hive_partitioning=true, hive_types_autocast=false) ORDER BY ALL LIMIT 10\"\n", root, hive.EncodeValue(sums[0].SessionID), hive.EncodeValue(sums[0].EnvID))
	fmt.Fprintf(w, "\n  The steps of cartpole and pick-place have different typed columns (observation,\n"+
		"  action), so a query of typed columns reads one recording's steps; a query of\n"+
		"  every recording's steps reads the fixed columns (union_by_name=true).\n")
	fmt.Fprintf(w, "\n  No duckdb command? 'pip install duckdb' installs DuckDB for Python (run the\n"+
		"  same SQL as python3 -c \"import duckdb; duckdb.sql('SELECT ...').show()\"), and\n"+
		"  the DuckDB CLI is a single binary from the installation page of duckdb.org.\n")
	fmt.Fprintf(w, "\nOr in pandas:\n\n")
	fmt.Fprintf(w, "  python3 -c \"import pandas as pd; print(pd.read_parquet('%s/episodes')[['session_id','env_id','episode_record_id','status','cumulative_reward']])\"\n", root)
	fmt.Fprintf(w, "  python3 -c \"import pandas as pd; print(pd.read_parquet('%s/steps/session_id=%s/env_id=%s').head())\"\n", root, sums[0].SessionID, sums[0].EnvID)
	return nil
}

// printTableSizes prints the number of files and bytes of each table that
// belong to the recordings in mine.
func printTableSizes(w io.Writer, d *dataset.Dataset, mine map[dataset.Recording]bool) {
	for _, t := range dataset.Tables {
		var files, bytes int64
		for _, f := range d.Files(t) {
			if mine[f.Recording] {
				files++
				bytes += f.Size
			}
		}
		fmt.Fprintf(w, "  %-10s %5d files %10.1f KiB\n", t, files, float64(bytes)/1024)
	}
}
