package interop

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// The recording child of the crash tests is the test binary itself (see
// TestMain), told what to do by its environment: crashChildEnv is the ROOT
// (its presence makes the binary a child), crashLayoutEnv the layout of a
// new ROOT, crashInputEnv the event stream to ingest ("-" for standard
// input; unset: run crashConfigs in-process) and crashSeedEnv the seed of
// its flush points.
const (
	crashChildEnv  = "RLREC_INTEROP_CRASH_ROOT"
	crashLayoutEnv = "RLREC_INTEROP_CRASH_LAYOUT"
	crashInputEnv  = "RLREC_INTEROP_CRASH_INPUT"
	crashSeedEnv   = "RLREC_INTEROP_CRASH_SEED"
)

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
	// FlagEnded: a StepCompleted's flags had ended it (rlmesh 0.1), so
	// its last row is is_last whether or not its deferred completion came.
	FlagEnded bool `json:"flag_ended,omitempty"`
}

// crashSession is what the child had handed over for one recording.
type crashSession struct {
	SessionID string                  `json:"session_id"`
	EnvID     string                  `json:"env_id"`
	Status    string                  `json:"status"` // the tally's: open, ended or failed
	Episodes  map[string]crashEpisode `json:"episodes"`
	Logs      int64                   `json:"logs"`
	Telemetry int64                   `json:"telemetry"`
}

// crashReport is one line the child prints: what it had handed over
// before a Flush that returned (so all of it is durable), or before a
// Close (Closed).
type crashReport struct {
	Events   int            `json:"events"`
	Closed   bool           `json:"closed"`
	Sessions []crashSession `json:"sessions"`
}

// reportOf turns a tally snapshot into the child's report.
func reportOf(snap map[hive.Recording]*sessionTally, n int, closed bool) crashReport {
	rep := crashReport{Events: n, Closed: closed}
	for _, rec := range sortedRecordings(snap) {
		s := snap[rec]
		cs := crashSession{SessionID: rec.SessionID, EnvID: rec.EnvID, Status: s.status, Episodes: map[string]crashEpisode{}, Logs: s.logs, Telemetry: s.telemetry}
		for rid, e := range s.episodes {
			ce := crashEpisode{Actions: e.actions, FlagEnded: e.flagEnded}
			if e.completed != nil {
				ce.Completed, ce.StepCount = true, e.completed.StepCount
			}
			cs.Episodes[rid] = ce
		}
		rep.Sessions = append(rep.Sessions, cs)
	}
	return rep
}

func printReport(rep crashReport) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s\n", b)
	return err
}

// crashChild is the recording child: it ingests the stream crashInputEnv
// names, or records crashConfigs in-process.
func crashChild(root string) error {
	var opts []recorder.Option
	if l := os.Getenv(crashLayoutEnv); l != "" {
		opts = layoutOptions(hive.Layout(l))
	}
	in := os.Getenv(crashInputEnv)
	if in == "" {
		return crashSimulate(root, opts)
	}
	var seed uint64
	fmt.Sscan(os.Getenv(crashSeedEnv), &seed)
	var r io.Reader = os.Stdin
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	return crashIngest(root, opts, r, seed)
}

// crashSimulate records long sessions into root; once crashFlushAfter
// lane actions were handed over it takes a snapshot of its tally,
// flushes, prints the snapshot as one report line and goes on recording
// until it is killed.
func crashSimulate(root string, opts []recorder.Option) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := recorder.Open(root, opts...)
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
		if err := printReport(reportOf(snap, 0, false)); err != nil {
			return err
		}
		return <-done // the parent kills the process first
	}
}

// crashIngest records the event stream r into root as `rlrec ingest` does
// (RecordAt with the stream's times, the current time for events without
// one), and counts every event the recorder accepted in a tally. After a
// number of events drawn from seed (between crashFlushMin and
// crashFlushMax) it takes a snapshot of the tally, flushes and prints the
// snapshot as a report line, and so on until it is killed; at the end of
// the stream it closes the recorder and reports once more.
func crashIngest(root string, opts []recorder.Option, r io.Reader, seed uint64) error {
	ctx := context.Background()
	rec, err := recorder.Open(root, opts...)
	if err != nil {
		return err
	}
	tl := newTally(events.NoopHooks{})
	rng := newRand(seed)
	next := crashFlushMin + rng.IntN(crashFlushMax-crashFlushMin)
	sr := events.NewStreamReader(bufio.NewReaderSize(r, 1<<20), events.DefaultMaxMessageBytes)
	var n int
	for sr.Next() {
		ev, at := sr.Event(), sr.Time()
		if at.IsZero() {
			at = time.Now()
		}
		if err := rec.RecordAt(ctx, ev, at); err != nil {
			return fmt.Errorf("record event %d: %w", sr.Index(), err)
		}
		if err := events.Dispatch(ctx, tl, ev); err != nil {
			return err
		}
		if n++; n < next {
			continue
		}
		snap := tl.snapshot()
		if err := rec.Flush(ctx); err != nil {
			return err
		}
		if err := printReport(reportOf(snap, n, false)); err != nil {
			return err
		}
		next = n + crashFlushMin + rng.IntN(crashFlushMax-crashFlushMin)
	}
	if err := sr.Err(); err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	if err := rec.Close(ctx); err != nil {
		return err
	}
	return printReport(reportOf(tl.snapshot(), n, true))
}

// crashFlushMin and crashFlushMax bound the events the ingesting child
// hands over between two flushes.
const (
	crashFlushMin = 40
	crashFlushMax = 1000
)

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
// their open episodes incomplete, completed ones intact. It runs in each
// layout.
func TestCrashRecovery(t *testing.T) {
	forEachLayout(t, testCrashRecovery)
}

func testCrashRecovery(t *testing.T, l hive.Layout) {
	root := filepath.Join(t.TempDir(), "root")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+root, crashLayoutEnv+"="+string(l))
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
	var report crashReport
	if err := json.Unmarshal([]byte(line), &report); err != nil {
		t.Fatalf("child report %q: %v", line, err)
	}
	flushed := map[hive.Recording]crashSession{}
	sids := map[string]bool{}
	for _, cs := range report.Sessions {
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
	checkEq(t, "layout of the recovered ROOT", rootLayout(t, root), l)
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
	checkContiguousDuck(t, db, root)
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
				LEFT JOIN (SELECT episode_record_id, count(*) AS n, count(*) FILTER (is_last) AS lasts, count(*) FILTER (is_first) AS firsts,
				                  coalesce(max(step) FILTER (is_last) < max(step), false) AS last_below
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
					// rlmesh 0.1 ends an episode with its step's flags
					// and defers the EpisodeCompleted to the lane's roll
					// step under NEXT_STEP: a crash in between leaves an
					// incomplete episode whose last row is is_last (its
					// flags'); otherwise an incomplete episode has none.
					if n > 0 && (asInt64(t, r["lasts"]) > 1 || r["last_below"] == true) {
						t.Errorf("%s: %v is_last rows (one below its last step: %v), want at most one, on its last step", rid, r["lasts"], r["last_below"])
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
				if e.FlagEnded {
					checkEq(t, rid+" is_last rows of an episode its flags ended before the crash", r["lasts"], int64(1))
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
	checkTablesScan(t, db, root, when)
}

// checkTablesScan scans every table of root with one DuckDB glob.
func checkTablesScan(t *testing.T, db *sql.DB, root, when string) {
	t.Helper()
	for _, table := range []string{"steps", "episodes", "sessions", "logs", "telemetry"} {
		if _, err := tryQuery(db, "SELECT count(*) FROM "+scan(tableGlob(root, table), "union_by_name=true")); err != nil && !strings.Contains(err.Error(), "No files found") {
			t.Errorf("%s: DuckDB cannot scan %s: %v", when, table, err)
		}
	}
}
