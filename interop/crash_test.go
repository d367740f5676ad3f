package interop

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// crashChildEnv, when set to a ROOT, makes the test binary the recording
// child of TestCrashRecovery (see TestMain).
const crashChildEnv = "RLREC_INTEROP_CRASH_ROOT"

// crashFlushAfter is the number of lane actions the child hands over
// before it flushes and reports, and crashFlushEach the number each session
// must have handed over by then: on a loaded machine the fast cartpole
// session alone can pass crashFlushAfter before the image session has
// started, and a crash before a session's first step tests nothing of it.
const (
	crashFlushAfter = 600
	crashFlushEach  = 20
)

// crashEpisode is what the child had handed over for one episode when it
// reported, all of it durable by its Flush.
type crashEpisode struct {
	Completed bool  `json:"completed"`
	StepCount int64 `json:"step_count"`
	Actions   int64 `json:"actions"`
}

// crashSession is what the child had handed over for one recording.
type crashSession struct {
	SessionID string                  `json:"session_id"`
	EnvID     string                  `json:"env_id"`
	Episodes  map[string]crashEpisode `json:"episodes"`
	Logs      int64                   `json:"logs"`
	Telemetry int64                   `json:"telemetry"`
}

// crashChild records long sessions into root; once crashFlushAfter lane
// actions were handed over it takes a snapshot of its tally, flushes, prints
// the snapshot as one JSON line and goes on recording until it is killed.
func crashChild(root string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := recorder.Open(root)
	if err != nil {
		return err
	}
	tl := newTally(rec)
	cfgs := crashConfigs()
	done := make(chan error, 1)
	go func() {
		_, err := sim.RunSessions(ctx, tl, cfgs)
		done <- err
	}()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return fmt.Errorf("sessions ended before the crash point: %v", err)
		case <-tick.C:
		}
		snap := tl.snapshot()
		var actions int64
		underway := len(snap) == len(cfgs)
		for _, s := range snap {
			var n int64
			for _, e := range s.episodes {
				n += e.actions
			}
			actions += n
			underway = underway && n >= crashFlushEach
		}
		if actions < crashFlushAfter || !underway {
			continue
		}
		if err := rec.Flush(ctx); err != nil {
			return err
		}
		var out []crashSession
		for rec, s := range snap {
			cs := crashSession{SessionID: rec.SessionID, EnvID: rec.EnvID, Episodes: map[string]crashEpisode{}, Logs: s.logs, Telemetry: s.telemetry}
			out = append(out, cs)
			for rid, e := range s.episodes {
				ce := crashEpisode{Actions: e.actions}
				if e.completed != nil {
					ce.Completed, ce.StepCount = true, e.completed.StepCount
				}
				cs.Episodes[rid] = ce
			}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		fmt.Printf("%s\n", b)
		return <-done // the parent kills the process first
	}
}

func crashConfigs() []sim.Config {
	cfgs := []sim.Config{
		{SessionID: "crash-cartpole", Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, TimeLimit: 30, Seed: 21},
		{SessionID: "crash-pick-place", Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, Seed: 22},
		{SessionID: "crash-all-leaves", Env: "all-leaves", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, Seed: 23},
	}
	for i := range cfgs {
		cfgs[i].MaxEpisodes = 1 << 40
		cfgs[i].TelemetryInterval = 2 * time.Millisecond
		cfgs[i].Clock = sim.StepClock(epoch.Add(time.Duration(i)*time.Hour), time.Millisecond)
	}
	return cfgs
}

// TestCrashRecovery records in a child process, kills it with SIGKILL in
// the middle of the run (recorder not closed, lock held, writers busy),
// checks that DuckDB can read every table even before recovery (no partial
// .parquet under a final name), then reopens and closes the ROOT and checks
// that everything the child had flushed is there: cut sessions crashed,
// their open episodes incomplete, completed ones intact.
func TestCrashRecovery(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+root)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the recording child: %v", err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("read the child's report: %v\nchild stderr:\n%s", err, stderr.String())
	}
	// Kill it once some Parquet files are on disk (their commits trail the
	// flushed log by a few milliseconds), so the ROOT DuckDB reads before
	// recovery holds finished files beside the unfinished state.
	for deadline := time.Now().Add(10 * time.Second); !hasParquet(t, root) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill the child: %v", err)
	}
	killed = true
	werr := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(werr, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("child ended with %v before it was killed\nstderr:\n%s", werr, stderr.String())
	}
	var report []crashSession
	if err := json.Unmarshal([]byte(line), &report); err != nil {
		t.Fatalf("child report %q: %v", line, err)
	}
	flushed := map[hive.Recording]crashSession{}
	sids := map[string]bool{}
	for _, cs := range report {
		flushed[hive.Recording{SessionID: cs.SessionID, EnvID: cs.EnvID}] = cs
		sids[cs.SessionID] = true
	}
	if len(flushed) != len(crashConfigs()) || len(sids) != len(crashConfigs()) {
		t.Fatalf("child reported %d recordings of %d sessions, want %d of %d", len(flushed), len(sids), len(crashConfigs()), len(crashConfigs()))
	}

	db := openDuck(t)
	tables := []string{"steps", "episodes", "sessions", "logs", "telemetry"}
	checkEveryFileOpens(t, db, root, "before recovery")

	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatalf("reopen %s after the crash: %v", root, err)
	}
	rep := rec.Recovered()
	if err := rec.Close(context.Background()); err != nil {
		t.Fatalf("close after recovery: %v", err)
	}
	if rep.Crashed != len(flushed) {
		t.Errorf("recovery report: %d crashed sessions, want %d (%+v)", rep.Crashed, len(flushed), rep)
	}
	checkEveryFileOpens(t, db, root, "after recovery")
	for _, table := range tables {
		extra := []string{}
		if table == "steps" {
			extra = append(extra, "union_by_name=true")
		}
		rows := query(t, db, "SELECT count(*) AS n FROM "+scan(tableGlob(root, table), extra...))
		if asInt64(t, rows[0]["n"]) == 0 {
			t.Errorf("%s: no rows after recovery", table)
		}
	}

	sessions := query(t, db, "SELECT session_id, env_id, status, steps_recorded, episodes_recorded FROM "+scan(tableGlob(root, "sessions")))
	status := map[hive.Recording]row{}
	for _, r := range sessions {
		status[hive.Recording{SessionID: r["session_id"].(string), EnvID: r["env_id"].(string)}] = r
	}
	if len(sessions) != len(flushed) {
		t.Errorf("%d sessions rows after recovery, the child recorded %d recordings", len(sessions), len(flushed))
	}
	checkStepsFiles(t, db, root)
	for _, rec := range sortedRecordings(flushed) {
		cs := flushed[rec]
		t.Run(rec.SessionID, func(t *testing.T) {
			s, ok := status[rec]
			if !ok {
				t.Fatalf("no sessions row for the cut recording %s", rec)
			}
			checkEq(t, "session status", s["status"], "crashed")
			rows := query(t, db, `SELECT e.episode_record_id, e.status, e.step_count, e.steps_recorded, s.n, s.lasts, s.firsts
				FROM `+scan(recordingGlob(root, "episodes", rec))+` e
				LEFT JOIN (SELECT episode_record_id, count(*) AS n, count(*) FILTER (is_last) AS lasts, count(*) FILTER (is_first) AS firsts
				           FROM `+scan(recordingGlob(root, "steps", rec))+` GROUP BY ALL) s USING (episode_record_id)`)
			got := map[string]row{}
			var incomplete int
			for _, r := range rows {
				rid := r["episode_record_id"].(string)
				got[rid] = r
				n := int64(0)
				if r["n"] != nil {
					n = asInt64(t, r["n"])
				}
				checkEq(t, rid+" steps_recorded vs rows", r["steps_recorded"], n)
				switch r["status"] {
				case "completed":
					checkEq(t, rid+" is_last rows", r["lasts"], int64(1))
					checkEq(t, rid+" step_count vs rows", r["step_count"], n)
				case "incomplete":
					incomplete++
					checkEq(t, rid+" step_count", r["step_count"], nil)
					if n > 0 {
						checkEq(t, rid+" is_last rows", r["lasts"], int64(0))
					}
				default:
					t.Errorf("%s: status %v, want completed or incomplete", rid, r["status"])
				}
				if n > 0 {
					checkEq(t, rid+" is_first rows", r["firsts"], int64(1))
				}
			}
			if incomplete == 0 {
				t.Errorf("no incomplete episode in a session cut mid-run")
			}
			if cs.Logs == 0 {
				t.Errorf("the child had handed over no log event (the reset log comes first)")
			}
			for _, tb := range []struct {
				table   string
				flushed int64
			}{{"logs", cs.Logs}, {"telemetry", cs.Telemetry}} {
				rows := query(t, db, "SELECT count(*) AS n FROM "+scan(recordingGlob(root, tb.table, rec)))
				if n := asInt64(t, rows[0]["n"]); n < tb.flushed {
					t.Errorf("%s: %d rows, %d were flushed before the crash", tb.table, n, tb.flushed)
				}
			}
			for rid, e := range cs.Episodes {
				r, ok := got[rid]
				if !ok {
					t.Errorf("episode %s was flushed before the crash (%+v) but has no episodes row", rid, e)
					continue
				}
				if e.Completed {
					checkEq(t, rid+" status of an episode completed before the crash", r["status"], "completed")
					checkEq(t, rid+" step_count", r["step_count"], e.StepCount)
				}
				if n := asInt64(t, r["steps_recorded"]); n < e.Actions {
					t.Errorf("episode %s: %d steps recorded, %d were flushed before the crash", rid, n, e.Actions)
				}
			}
		})
	}
}

// hasParquet reports whether a finished table file exists under root.
func hasParquet(t *testing.T, root string) bool {
	t.Helper()
	for _, rel := range walkFiles(t, root) {
		if !strings.HasPrefix(rel, "_rlrec"+string(filepath.Separator)) && strings.HasSuffix(rel, ".parquet") {
			return true
		}
	}
	return false
}

// checkEveryFileOpens reads each .parquet under root on its own with
// DuckDB, then every table with one glob (one truncated file fails a glob
// scan).
func checkEveryFileOpens(t *testing.T, db *sql.DB, root, when string) {
	t.Helper()
	var n int
	for _, rel := range walkFiles(t, root) {
		if strings.HasPrefix(rel, "_rlrec"+string(filepath.Separator)) || !strings.HasSuffix(rel, ".parquet") {
			continue
		}
		n++
		if _, err := tryQuery(db, "SELECT count(*) FROM read_parquet("+lit(filepath.Join(root, rel))+")"); err != nil {
			t.Errorf("%s: %s does not open: %v", when, rel, err)
		}
	}
	if n == 0 {
		t.Fatalf("%s: no .parquet files under %s", when, root)
	}
	for _, table := range []string{"steps", "episodes", "sessions", "logs", "telemetry"} {
		if _, err := tryQuery(db, "SELECT count(*) FROM "+scan(tableGlob(root, table), "union_by_name=true")); err != nil && !strings.Contains(err.Error(), "No files found") {
			t.Errorf("%s: DuckDB cannot scan %s: %v", when, table, err)
		}
	}
}
