package interop

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
)

// The SIGKILL loop: crashLoopKills kills in all, spread evenly over four
// lanes, each layout with each way a stream reaches the recording child (a
// file `rlrec simulate -o FILE` wrote, or `rlrec simulate -o -` piped to
// its standard input). A lane records into one ROOT for crashChain kills
// in a row, each with new recordings, and then starts another: so recovery
// also runs on ROOTs holding what earlier kills and recoveries published,
// and nothing it did may be undone later.
const (
	crashLoopKills = 104
	crashChain     = 4
	// crashSeedVar, when set, is the seed of the loop's choices; the seed
	// used is logged either way.
	crashSeedVar = "RLREC_INTEROP_CRASH_LOOP_SEED"
	// crashKillsVar, when set, replaces crashLoopKills (for longer runs).
	crashKillsVar = "RLREC_INTEROP_CRASH_LOOP_KILLS"
	// crashKeepVar, when set, is a directory where the loop writes its
	// ROOTs instead of a temporary one, keeping those of failed runs.
	crashKeepVar = "RLREC_INTEROP_CRASH_LOOP_DIR"
	// crashMaxFailures failed runs stop the loop.
	crashMaxFailures = 25
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// crashLane is one of the loop's four combinations and its current ROOT.
type crashLane struct {
	layout hive.Layout
	pipe   bool
	dir    string // where its ROOTs and stream files go

	root   string
	runs   int  // kills into root so far
	kills  int  // kills in all
	broken bool // a run into root failed: the next one starts another
	roots  int
	// claims is everything the children that recorded into root reported
	// durable, by recording: the latest report of each.
	claims map[hive.Recording]crashSession
}

func (l *crashLane) String() string {
	feed := "file"
	if l.pipe {
		feed = "pipe"
	}
	return string(l.layout) + "/" + feed
}

// crashTally is what the loop counts for its report.
type crashTally struct {
	mu                  sync.Mutex
	kills, finished     int // children killed; children that reached the stream's end first
	byLane              map[string]int
	recovered, clean    int // recoveries that found work to do; that found none
	beforeClaim         int // kills before the child's first report
	claimedSteps        int64
	claimedEpisodes     int
	lostSteps, lostRows int64 // steps, and logs and telemetry rows, reported durable and missing
	preserved           int   // published files seen before a kill and checked unchanged after recovery
	roots, failed       int
	noRoot              int // kills before the child had created ROOT
}

// TestCrashLoop kills a recording child with SIGKILL at random points
// crashLoopKills times (see the constants) and after every kill runs
// `rlrec recover ROOT` and `rlrec verify ROOT`, which must exit 0 with no
// problems and leave no temp file, and checks with DuckDB that every file
// published before the kill is still there unchanged, that nothing the
// child reported durable is missing (every step, episode, log and
// telemetry row of its last report, with completed episodes completed)
// and that nothing is duplicated: count(*) of the whole steps table equals
// its count of distinct (session_id, env_id, episode_record_id, step)
// (summed over the episodes, from one scan), and no episode or recording
// has two episodes or sessions rows.
func TestCrashLoop(t *testing.T) {
	bin := rlrecBinary(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(crashSeedVar); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", crashSeedVar, v, err)
		}
	}
	kills := crashLoopKills
	if testing.Short() {
		// The loop takes minutes; -short runs a few kills of each lane.
		kills = 8
	}
	if v := os.Getenv(crashKillsVar); v != "" {
		var err error
		if kills, err = strconv.Atoi(v); err != nil || kills < 1 {
			t.Fatalf("%s=%q: want a positive number", crashKillsVar, v)
		}
	}
	t.Logf("seed %d (%s=%d repeats the loop's choices; kill times still vary)", seed, crashSeedVar, seed)
	rng := newRand(seed)
	dir, keep := os.Getenv(crashKeepVar), true
	if dir == "" {
		dir, keep = t.TempDir(), false
	}
	var lanes []*crashLane
	for _, l := range layouts {
		for _, pipe := range []bool{false, true} {
			lane := &crashLane{layout: l, pipe: pipe}
			lane.dir = filepath.Join(dir, strings.ReplaceAll(lane.String(), "/", "-"))
			if err := os.MkdirAll(lane.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			lanes = append(lanes, lane)
		}
	}
	db := openDuck(t)
	tally := &crashTally{byLane: map[string]int{}}
	start := time.Now()
	// Two workers, each with one lane of each layout, run side by side:
	// while one waits for its child, the other recovers and verifies.
	workers := [][]*crashLane{{lanes[0], lanes[3]}, {lanes[1], lanes[2]}}
	seeds := []uint64{rng.Uint64(), rng.Uint64()}
	t.Run("workers", func(t *testing.T) {
		for w, ls := range workers {
			t.Run(fmt.Sprint(w), func(t *testing.T) {
				t.Parallel()
				crashWorker(t, bin, db, ls, newRand(seeds[w]), (kills+len(lanes)-1)/len(lanes), keep, tally)
			})
		}
	})
	if tally.failed > 0 {
		t.Errorf("%d of %d runs failed", tally.failed, tally.kills+tally.finished)
	}
	t.Logf("%d kills in %v (%v), %d children reached the end of their stream first, %d ROOTs", tally.kills, time.Since(start).Round(time.Second), tally.byLane, tally.finished, tally.roots)
	t.Logf("recoveries: %d found work to do, %d found a clean log; %d kills came before the child's first report, %d before it had created ROOT (no recovery)",
		tally.recovered, tally.clean, tally.beforeClaim, tally.noRoot)
	t.Logf("reported durable: %d steps of %d episodes; lost: %d steps, %d log and telemetry rows; %d published files checked unchanged after the recoveries that followed",
		tally.claimedSteps, tally.claimedEpisodes, tally.lostSteps, tally.lostRows, tally.preserved)
	if tally.lostSteps != 0 || tally.lostRows != 0 {
		t.Errorf("rows reported durable were lost")
	}
	// (A rate: judged on a loop long enough for it to mean something.)
	if tally.kills >= 50 && tally.recovered < tally.kills/2 {
		t.Errorf("only %d of %d recoveries found work to do: the kills come too early or too late", tally.recovered, tally.kills)
	}
}

// crashWorker runs kills into each of its lanes in turn until each has
// had perLane kills, and adds what it saw to tally.
func crashWorker(t *testing.T, bin string, db *sql.DB, lanes []*crashLane, rng *rand.Rand, perLane int, keep bool, tally *crashTally) {
	for i := 0; ; i++ {
		lane := lanes[i%len(lanes)]
		if lane.kills >= perLane {
			if done := !slices.ContainsFunc(lanes, func(l *crashLane) bool { return l.kills < perLane }); done {
				return
			}
			continue
		}
		if i >= 4*perLane*len(lanes) {
			t.Fatalf("%d runs for %d kills a lane: the children keep reaching the end of their streams", i, perLane)
		}
		run := &crashTally{byLane: map[string]int{}}
		if lane.root == "" || lane.runs == crashChain || lane.broken {
			if lane.root != "" && !(lane.broken && keep) {
				os.RemoveAll(lane.root)
			}
			lane.roots++
			run.roots++
			lane.root = filepath.Join(lane.dir, fmt.Sprintf("root-%d", lane.roots))
			lane.runs, lane.broken = 0, false
			lane.claims = map[hive.Recording]crashSession{}
		}
		ok := t.Run(fmt.Sprintf("%03d-%s", i, strings.ReplaceAll(lane.String(), "/", "-")), func(t *testing.T) {
			crashRun(t, bin, db, lane, rng.Uint64(), run)
		})
		lane.kills += run.kills
		if !ok {
			// Go on in a new ROOT, so that one failure does not hide the
			// figures of the other kills, up to a point.
			lane.broken = true
			run.failed++
		}
		if tally.add(run) >= crashMaxFailures {
			t.Fatalf("stopping after %d failed runs", crashMaxFailures)
		}
	}
}

// add adds the figures of one run to the loop's and returns the failed
// runs so far.
func (c *crashTally) add(r *crashTally) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kills += r.kills
	c.finished += r.finished
	for k, v := range r.byLane {
		c.byLane[k] += v
	}
	c.recovered += r.recovered
	c.clean += r.clean
	c.beforeClaim += r.beforeClaim
	c.claimedSteps += r.claimedSteps
	c.claimedEpisodes += r.claimedEpisodes
	c.lostSteps += r.lostSteps
	c.lostRows += r.lostRows
	c.preserved += r.preserved
	c.roots += r.roots
	c.failed += r.failed
	c.noRoot += r.noRoot
	return c.failed
}

// crashStream returns the `rlrec simulate` arguments of one run's stream
// (without -o): an env, its lanes and episode bounds drawn from rng, new
// recordings every time (seeded ids, the wall clock). A file stream is
// sized to outlast the latest kill; a piped one never ends.
func crashStream(rng *rand.Rand, pipe bool) []string {
	type env struct {
		name        string
		lanes       int
		maxSteps    int
		episodes    int // per session, for a file
		failAfter   int // 0: never
		autoDisable bool
	}
	var e env
	switch k := rng.IntN(10); {
	case k < 6:
		e = env{name: "cartpole", lanes: 1 + rng.IntN(4), maxSteps: 10 + rng.IntN(40), episodes: 700}
	case k < 8:
		e = env{name: "all-leaves", lanes: 1 + rng.IntN(4), maxSteps: 5 + rng.IntN(20), episodes: 500}
	default:
		e = env{name: "pick-place", lanes: 1 + rng.IntN(2), maxSteps: 10 + rng.IntN(30), episodes: 150}
	}
	e.autoDisable = rng.IntN(3) == 0
	if !pipe && rng.IntN(4) == 0 {
		// Sessions that fail (a file's streams end anyway).
		e.failAfter = 500 + rng.IntN(3000)
	}
	sessions := 1 + rng.IntN(2)
	episodes := e.episodes * 6 / (e.lanes + 2)
	if pipe {
		episodes = 1 << 30
	}
	// rlmesh allows disabled autoreset with one lane only, and step caps
	// only under disabled.
	autoreset, lanes := "next-step", e.lanes
	var capArgs []string
	if e.autoDisable {
		autoreset, lanes = "disabled", 1
		capArgs = []string{"--max-steps", strconv.Itoa(e.maxSteps)}
	}
	args := []string{"simulate", "--env", e.name, "--envs", strconv.Itoa(lanes), "--episodes", strconv.Itoa(episodes),
		"--sessions", strconv.Itoa(sessions), "--autoreset", autoreset,
		"--seed", strconv.FormatUint(rng.Uint64()>>1, 10), "--telemetry-interval", fmt.Sprintf("%dms", 1+rng.IntN(5))}
	args = append(args, capArgs...)
	if e.failAfter > 0 {
		args = append(args, "--fail-after", strconv.Itoa(e.failAfter))
	}
	return args
}

// crashRun is one kill: a child records a new stream into lane's ROOT and
// is killed at a random point, then the ROOT is recovered, verified and
// checked against everything its children reported durable.
func crashRun(t *testing.T, bin string, db *sql.DB, lane *crashLane, seed uint64, tally *crashTally) {
	rng := newRand(seed)
	stream := crashStream(rng, lane.pipe)
	t.Logf("rlrec %s -o %s | child into %s", strings.Join(stream, " "), map[bool]string{false: "FILE", true: "-"}[lane.pipe], lane.root)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), crashChildEnv+"="+lane.root, crashLayoutEnv+"="+string(lane.layout),
		crashSeedEnv+"="+strconv.FormatUint(rng.Uint64(), 10))
	var childErr, simErr bytes.Buffer
	child.Stderr = &childErr
	var sim *exec.Cmd
	var readEnd *os.File // the pipe's, closed here once the child has it
	if lane.pipe {
		child.Env = append(child.Env, crashInputEnv+"=-")
		sim = exec.Command(bin, append(stream, "-o", "-")...)
		sim.Stderr = &simErr
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		sim.Stdout, child.Stdin = pw, pr
		if err := sim.Start(); err != nil {
			t.Fatalf("start rlrec simulate: %v", err)
		}
		pw.Close()
		readEnd = pr
		defer func() {
			// The child's death breaks the pipe; make sure of the rest.
			sim.Process.Kill()
			sim.Wait()
		}()
	} else {
		file := filepath.Join(lane.dir, "stream.events")
		gen := exec.Command(bin, append(stream, "-o", file)...)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("rlrec simulate: %v\n%s", err, out)
		}
		defer os.Remove(file)
		child.Env = append(child.Env, crashInputEnv+"="+file)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The kill comes after a random delay (one in eight within the
	// child's first 150 ms: while it opens ROOT, and before its log's
	// first sync), or a little after its k-th report (just after a
	// Flush, with commits in flight).
	delay := time.Duration(rng.IntN(650)) * time.Millisecond
	afterReport := 0
	switch rng.IntN(8) {
	case 0:
		delay = time.Duration(rng.IntN(150)) * time.Millisecond
	case 1, 2:
		afterReport = 1 + rng.IntN(6)
		delay = time.Duration(rng.IntN(30)) * time.Millisecond
	}
	if err := child.Start(); err != nil {
		t.Fatalf("start the recording child: %v", err)
	}
	waited := false
	defer func() {
		if !waited { // a check failed before the kill
			child.Process.Kill()
			child.Wait()
		}
	}()
	if readEnd != nil {
		readEnd.Close()
	}
	var (
		mu      sync.Mutex
		last    *crashReport
		reports int
		readErr error
	)
	reported := make(chan struct{}, 1)
	eof := make(chan struct{}) // closed at the end of the child's output
	go func() {
		defer close(eof)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				// A line cut by the kill is no report.
				if !errors.Is(err, io.EOF) {
					mu.Lock()
					readErr = err
					mu.Unlock()
				}
				return
			}
			var rep crashReport
			err = json.Unmarshal(line, &rep)
			mu.Lock()
			if err != nil {
				readErr = fmt.Errorf("child report %.200q: %w", line, err)
				mu.Unlock()
				return
			}
			last = &rep
			reports++
			if reports == afterReport {
				reported <- struct{}{}
			}
			mu.Unlock()
		}
	}()
	timer := time.After(delay)
	if afterReport > 0 {
		timer = time.After(10 * time.Second) // should the reports not come
	}
	finished := false
	select {
	case <-timer:
	case <-reported:
		time.Sleep(delay)
	case <-eof:
		finished = true
	}
	before := publishedFiles(t, lane.root)
	if !finished {
		if err := child.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatalf("kill the child: %v", err)
		}
	}
	<-eof
	werr := child.Wait()
	waited = true
	var exit *exec.ExitError
	switch {
	case werr == nil:
		finished = true
	case errors.As(werr, &exit) && exit.ExitCode() == -1 && !finished:
	default:
		t.Fatalf("the child ended with %v before it was killed\nstderr:\n%s\nsimulate stderr:\n%s", werr, childErr.String(), simErr.String())
	}
	mu.Lock()
	if readErr != nil {
		mu.Unlock()
		t.Fatalf("read the child's reports: %v", readErr)
	}
	rep := last
	mu.Unlock()
	if finished {
		tally.finished++
		if rep == nil || !rep.Closed {
			t.Fatalf("the child exited 0 without its closing report\nstderr:\n%s", childErr.String())
		}
	} else {
		tally.kills++
		tally.byLane[lane.String()]++
		lane.runs++
	}
	if rep == nil {
		tally.beforeClaim++
	} else {
		for _, cs := range rep.Sessions {
			lane.claims[hive.Recording{SessionID: cs.SessionID, EnvID: cs.EnvID}] = cs
		}
	}
	t.Logf("%s after %d reports (last at event %d); %d published files before the kill", map[bool]string{false: "killed", true: "finished"}[finished], reports, eventsOf(rep), len(before))

	if entries, err := os.ReadDir(lane.root); len(entries) == 0 {
		// Killed before it created ROOT's state: rlrec recover refuses a
		// directory that is no ROOT (and never creates one), and there is
		// nothing to recover.
		t.Logf("no ROOT yet (%v): %d entries", err, len(entries))
		out, err := exec.Command(bin, "recover", lane.root).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !bytes.Contains(out, []byte("not an rlrec ROOT")) && !bytes.Contains(out, []byte("does not exist")) {
			t.Fatalf("rlrec recover %s, a ROOT the child had not created: %v, want exit status 1 and a refusal\n%s", lane.root, err, out)
		}
		if rep != nil {
			t.Fatalf("the child reported %d recordings durable and ROOT is not there", len(rep.Sessions))
		}
		tally.noRoot++
		return
	}
	checkTablesScan(t, db, lane.root, "before recovery")
	t0 := time.Now()
	out, err := exec.Command(bin, "recover", lane.root).CombinedOutput()
	tRecover := time.Since(t0)
	if err != nil {
		t.Fatalf("rlrec recover %s: %v\n%s", lane.root, err, out)
	}
	switch {
	case bytes.Contains(out, []byte("recovered from the log")):
		tally.recovered++
	case bytes.Contains(out, []byte("nothing to recover")):
		tally.clean++
		if !finished && rep != nil {
			t.Logf("rlrec recover found nothing to do after a kill that followed a report:\n%s", out)
		}
	default:
		t.Fatalf("rlrec recover %s: unexpected output:\n%s", lane.root, out)
	}
	t0 = time.Now()
	recovery := out
	out, err = exec.Command(bin, "verify", lane.root).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("no problems")) {
		t.Fatalf("rlrec verify %s after rlrec recover: %v\n%s\nrlrec recover said:\n%s", lane.root, err, out, recovery)
	}
	tVerify := time.Since(t0)
	t0 = time.Now()
	defer func() {
		t.Logf("rlrec recover %v, rlrec verify %v (%s), checks %v",
			tRecover.Round(time.Millisecond), tVerify.Round(time.Millisecond), bytes.TrimSpace(out), time.Since(t0).Round(time.Millisecond))
	}()
	checkNoTemp(t, lane.root)
	tally.preserved += checkPreserved(t, lane.root, before)
	checkClaims(t, db, lane, tally)
	if lane.runs == crashChain && !hasEpisodesFile(t, lane.root) {
		// Every run of the chain was killed before one episode was
		// published: nothing for the whole-ROOT checks to read (DuckDB's
		// glob of no file is an error), and checkClaims above has already
		// checked that nothing acknowledged is missing.
		t.Logf("%s: no episodes file after %d runs; whole-ROOT checks have nothing to read", lane.root, lane.runs)
	} else if lane.runs == crashChain {
		// The ROOT's last run: the slower whole-ROOT checks.
		checkStepsFiles(t, db, lane.root)
		checkContiguousDuck(t, db, lane.root)
	}
}

func eventsOf(rep *crashReport) int {
	if rep == nil {
		return 0
	}
	return rep.Events
}

// hasEpisodesFile reports whether root holds a published episodes file.
func hasEpisodesFile(t *testing.T, root string) bool {
	t.Helper()
	sep := string(filepath.Separator)
	for p := range publishedFiles(t, root) {
		if strings.HasPrefix(p, filepath.Join(root, "episodes")+sep) {
			return true
		}
	}
	return false
}

// publishedFiles lists the published table files under root (final
// .parquet names outside _rlrec) with their file info.
func publishedFiles(t *testing.T, root string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a directory that a recovery did not yet create, or root itself
			}
			return err
		}
		if d.IsDir() {
			if d.Name() == "_rlrec" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".parquet") && !strings.HasPrefix(d.Name(), ".") {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			out[p] = fi
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", root, err)
	}
	return out
}

// checkPreserved checks that every file published before the kill is
// still there, the same file (same inode, size and modification time):
// recovery publishes or removes temp files and never rewrites a published
// one. It returns the number of files checked.
func checkPreserved(t *testing.T, root string, before map[string]os.FileInfo) int {
	t.Helper()
	for p, fi := range before {
		now, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s was published before the kill and is gone after recovery: %v", p, err)
			continue
		}
		if !os.SameFile(fi, now) || fi.Size() != now.Size() || !fi.ModTime().Equal(now.ModTime()) {
			t.Errorf("%s was published before the kill (%d bytes, %v) and is another file after recovery (%d bytes, %v)",
				p, fi.Size(), fi.ModTime(), now.Size(), now.ModTime())
		}
	}
	return len(before)
}

// checkNoTemp checks that nothing under root is a temp file.
func checkNoTemp(t *testing.T, root string) {
	t.Helper()
	for _, rel := range walkFiles(t, root) {
		if strings.HasSuffix(rel, ".tmp") || strings.Contains(filepath.Base(rel), ".tmp") {
			t.Errorf("temp file left after recovery: %s", rel)
		}
	}
}

// checkClaims checks lane's ROOT against every report of the children
// that recorded into it, and that no row is there twice.
func checkClaims(t *testing.T, db *sql.DB, lane *crashLane, tally *crashTally) {
	t.Helper()
	root := lane.root
	// One scan of each table: every episode's steps and distinct steps
	// (a step there twice is a duplicate), the episodes and sessions rows
	// (one there twice is a duplicate).
	steps := scan(tableGlob(root, "steps"), "union_by_name=true")
	type stepAgg struct {
		n, lasts  int64
		lastBelow bool // an is_last row is below the episode's highest step
	}
	got := map[episodeKey]stepAgg{}
	var rows, distinct int64
	for _, r := range queryTable(t, db, "SELECT session_id, env_id, episode_record_id, count(*) AS n, count(DISTINCT step) AS d, count(*) FILTER (is_last) AS lasts, coalesce(max(step) FILTER (is_last) < max(step), false) AS last_below FROM "+steps+" GROUP BY ALL") {
		got[episodeKeyOf(r)] = stepAgg{asInt64(t, r["n"]), asInt64(t, r["lasts"]), r["last_below"] == true}
		rows += asInt64(t, r["n"])
		distinct += asInt64(t, r["d"])
	}
	if rows != distinct {
		t.Errorf("steps: %d rows, %d distinct (session_id, env_id, episode_record_id, step): duplicates", rows, distinct)
	}
	eps := map[episodeKey]row{}
	for _, r := range queryTable(t, db, "SELECT session_id, env_id, episode_record_id, status, step_count, steps_recorded FROM "+scan(tableGlob(root, "episodes"))) {
		k := episodeKeyOf(r)
		if _, dup := eps[k]; dup {
			t.Errorf("%s: more than one episodes row", k)
		}
		eps[k] = r
		n := got[k].n
		checkEq(t, k.String()+" steps rows vs steps_recorded", n, asInt64(t, r["steps_recorded"]))
		switch r["status"] {
		case "completed":
			checkEq(t, k.String()+" rows of a completed episode vs step_count", r["step_count"], n)
			checkEq(t, k.String()+" is_last rows of a completed episode", got[k].lasts, int64(1))
		case "incomplete":
			// rlmesh 0.1 ends an episode with its step's flags and defers
			// the EpisodeCompleted to the lane's roll step under
			// NEXT_STEP: a kill in between leaves an episode whose last
			// row says it ended and that no completion closed, which is
			// recovered as incomplete with that is_last row. Before 0.1
			// (and when no flag ended it) an incomplete episode has none.
			if got[k].lasts > 1 || got[k].lastBelow {
				t.Errorf("%s: an incomplete episode has %d is_last rows (one below its last step: %v), want at most one, on its last step", k, got[k].lasts, got[k].lastBelow)
			}
		default:
			t.Errorf("%s: status %v", k, r["status"])
		}
	}
	for k := range got {
		if _, ok := eps[k]; !ok {
			t.Errorf("%s: steps rows but no episodes row", k)
		}
	}
	sessions := map[hive.Recording]string{}
	for _, r := range queryTable(t, db, "SELECT session_id, env_id, status FROM "+scan(tableGlob(root, "sessions"))) {
		rec := hive.Recording{SessionID: r["session_id"].(string), EnvID: r["env_id"].(string)}
		if _, dup := sessions[rec]; dup {
			t.Errorf("%s: more than one sessions row", rec)
		}
		sessions[rec] = r["status"].(string)
	}
	counts := map[string]map[hive.Recording]int64{}
	for _, table := range []string{"logs", "telemetry"} {
		counts[table] = map[hive.Recording]int64{}
		for _, r := range queryTable(t, db, "SELECT session_id, env_id, count(*) AS n FROM "+scan(tableGlob(root, table))+" GROUP BY ALL") {
			counts[table][hive.Recording{SessionID: r["session_id"].(string), EnvID: r["env_id"].(string)}] = asInt64(t, r["n"])
		}
	}
	for _, rec := range sortedRecordings(lane.claims) {
		cs := lane.claims[rec]
		st, ok := sessions[rec]
		switch {
		case !ok:
			t.Errorf("%s was reported durable and has no sessions row", rec)
		case cs.Status != "open" && st != cs.Status:
			t.Errorf("%s: sessions status %q, it had %s before the kill", rec, st, cs.Status)
		case st != "crashed" && st != "ended" && st != "failed":
			t.Errorf("%s: sessions status %q after recovery", rec, st)
		}
		for rid, e := range cs.Episodes {
			k := episodeKey{rec, rid}
			tally.claimedEpisodes++
			tally.claimedSteps += e.Actions
			n := got[k].n
			if n < e.Actions {
				tally.lostSteps += e.Actions - n
				t.Errorf("%s: %d steps rows, %d were reported durable", k, n, e.Actions)
			}
			r, ok := eps[k]
			if !ok {
				t.Errorf("%s was reported durable (%+v) and has no episodes row", k, e)
				continue
			}
			if e.Completed {
				checkEq(t, k.String()+" status of an episode completed before the kill", r["status"], "completed")
				checkEq(t, k.String()+" step_count", r["step_count"], e.StepCount)
			}
			if e.FlagEnded {
				checkEq(t, k.String()+" is_last rows of an episode its flags ended before the kill", got[k].lasts, int64(1))
			}
		}
		for _, tb := range []struct {
			table   string
			claimed int64
		}{{"logs", cs.Logs}, {"telemetry", cs.Telemetry}} {
			if n := counts[tb.table][rec]; n < tb.claimed {
				tally.lostRows += tb.claimed - n
				t.Errorf("%s %s: %d rows, %d were reported durable", rec, tb.table, n, tb.claimed)
			}
		}
	}
}

// queryTable is query for a query of one table's glob: a table without
// files (no recording reached it before the kill) gives no rows.
func queryTable(t *testing.T, db *sql.DB, q string) []row {
	t.Helper()
	rows, err := tryQuery(db, q)
	if err != nil && strings.Contains(err.Error(), "No files found") {
		return nil
	}
	if err != nil {
		t.Fatalf("duckdb: %v\nquery: %s", err, q)
	}
	return rows
}
