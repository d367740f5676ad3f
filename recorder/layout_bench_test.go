//go:build unix

package recorder

// Benchmarks of the two steps layouts of schema version 2 (hive.LayoutSession
// and hive.LayoutEpisode) against the targets in BENCHMARKS.md, section
// "Schema version 2 layouts". ROOT is under b.TempDir() (the OS file
// system, on the disk the other figures used). Every op runs all the
// compared variants side by side (A B B A, or in an order that rotates
// from op to op) and reports their ratios: compare ratios, not absolute
// figures, on a shared machine.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/sim"
)

// benchPackedStep is benchStep with the column episode_record_id that the
// packed steps files of layout "session" carry: the bare writer's rows.
type benchPackedStep struct {
	EpisodeID       string    `parquet:"episode_id,dict"`
	EpisodeIndex    int64     `parquet:"episode_index"`
	EnvIndex        int32     `parquet:"env_index"`
	Step            int64     `parquet:"step"`
	SessionStep     int64     `parquet:"session_step"`
	ObservationBlob []byte    `parquet:"observation_blob,optional,plain"`
	ActionBlob      []byte    `parquet:"action_blob,optional,plain"`
	Reward          float64   `parquet:"reward"`
	IsFirst         bool      `parquet:"is_first"`
	IsLast          bool      `parquet:"is_last"`
	Terminated      bool      `parquet:"terminated"`
	Truncated       bool      `parquet:"truncated"`
	RecordedAt      int64     `parquet:"recorded_at,timestamp(microsecond:utc)"`
	EpisodeRecordID string    `parquet:"episode_record_id,dict"`
	Observation     []float32 `parquet:"observation,optional,list"`
	Action          *int64    `parquet:"action,optional"`
}

// benchStepV3 is a row of the steps file layout "session" writes under
// schema version 3, with every column it has for cartpole: benchPackedStep's
// columns and the version 3 columns after the typed ones
// (TestBenchStepV3Columns). The bare3 variant of BenchmarkLayouts writes
// these, read back from a file the recorder wrote, so that it writes the
// same rows as the recorder: the same columns and the same values (the
// infos JSON of every row included).
type benchStepV3 struct {
	benchPackedStep
	Lane               *int64   `parquet:"lane,optional"`
	Infos              *string  `parquet:"infos,optional"`
	RawObservationBlob []byte   `parquet:"raw_observation_blob,optional,plain"`
	RawActionBlob      []byte   `parquet:"raw_action_blob,optional,plain"`
	PredictMs          *float64 `parquet:"predict_ms,optional"`
	StepMs             *float64 `parquet:"step_ms,optional"`
	ObservationInfos   *string  `parquet:"observation_infos,optional"`
}

// TestBenchStepV3Columns checks that benchStepV3 has the columns of the
// steps file the recorder writes for the simulator's cartpole, in the
// file's order: a column it lacked would leave bare3 less to write.
func TestBenchStepV3Columns(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, WithLayout(hive.LayoutSession))
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 8, TimeLimit: 50, Seed: 1}
	if _, err := sim.Run(context.Background(), r, cfg); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "steps", "*", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no steps file under %s: %v", dir, err)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	names := func(s *parquet.Schema) []string {
		var out []string
		for _, c := range s.Fields() {
			out = append(out, c.Name())
		}
		return out
	}
	got, want := names(parquet.SchemaOf(benchStepV3{})), names(pf.Schema())
	if !slices.Equal(got, want) {
		t.Errorf("benchStepV3 columns\n %v\nthe recorder's steps file\n %v", got, want)
	}
}

// recordedRows records the session cfg runs with layout "session" into a
// new ROOT under dir (outside any timer) and returns the rows of its
// steps files in the order they were written, then removes the ROOT.
func recordedRows(b *testing.B, dir string, cfg sim.Config) []benchStepV3 {
	b.Helper()
	r := openBench(b, dir, WithLayout(hive.LayoutSession), WithCompression(CompressionZstd))
	if _, err := sim.Run(context.Background(), r, cfg); err != nil {
		b.Fatal(err)
	}
	closeBench(b, r)
	defer os.RemoveAll(dir)
	var files []string
	err := filepath.WalkDir(filepath.Join(dir, "steps"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(files)
	var rows []benchStepV3
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		rd := parquet.NewGenericReader[benchStepV3](f)
		buf := make([]benchStepV3, rd.NumRows())
		n, err := rd.Read(buf)
		if n != len(buf) {
			b.Fatalf("read %d of %d rows of %s: %v", n, len(buf), name, err)
		}
		rows = append(rows, buf...)
		rd.Close()
		f.Close()
	}
	return rows
}

// writeBare3 writes rows as the bare variant writes its rows (writeBare),
// with statistics skipped on the two raw blob columns as on the other two,
// as the recorder does.
func writeBare3(b *testing.B, dir string, rows []benchStepV3, codec Compression) {
	b.Helper()
	writeBare(b, dir, rows, len(rows), benchCodec(codec), parquet.PageBufferSize(256<<10),
		parquet.SkipPageStatistics("raw_observation_blob"), parquet.SkipPageBounds("raw_observation_blob"),
		parquet.SkipPageStatistics("raw_action_blob"), parquet.SkipPageBounds("raw_action_blob"))
}

// logOnly is the durable log alone, the part of a recorder that no bare
// writer has: each event is encoded as the recorder's hooks encode it
// (events.AppendMarshal) and appended to a log with the recorder's log
// options (internal/wal, S2, group fsyncs; the mapped pending file when
// the file system maps). The log variant of BenchmarkLayouts runs the
// session into it: with bare3 it is the floor of any recorder that keeps
// every event in the log before its hook returns and writes the rows.
type logOnly struct {
	events.NoopHooks
	log *wal.Log
	buf []byte
}

func (h *logOnly) RecordAt(_ context.Context, ev events.Event, t time.Time) error {
	var err error
	h.buf, err = events.AppendMarshal(h.buf[:0], ev, t)
	if err == nil {
		_, err = h.log.Append(h.buf)
	}
	return err
}

// runLogOnly runs the session cfg into a logOnly under dir and closes the
// log (which writes and fsyncs what is left).
func runLogOnly(b *testing.B, fsys vfs.FS, dir string, cfg sim.Config) {
	b.Helper()
	l, err := wal.Open(fsys, filepath.Join(dir, hive.StateDir, "log"), wal.Options{MaxPending: memoryBudget(defaultOptions().memoryBudget).logPending()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sim.Run(context.Background(), &logOnly{log: l}, cfg); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// packedCollector is a rowCollector that also keeps each row's episode
// record id.
type packedCollector struct {
	*rowCollector
	rids []string
}

func (c *packedCollector) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	before := len(c.rows)
	err := c.rowCollector.OnActionReceived(ctx, ev)
	for i := before; i < len(c.rows); i++ {
		c.rids = append(c.rids, ev.EpisodeRecordIDs[i-before])
	}
	return err
}

// packedRows collects the steps rows of the session cfg runs, as the bare
// writer writes them, and counts the episodes that have rows (each is one
// steps partition under layout "episode").
func packedRows(b *testing.B, cfg sim.Config) ([]benchPackedStep, int) {
	b.Helper()
	col := &packedCollector{rowCollector: &rowCollector{limit: 1 << 24}}
	if _, err := sim.Run(context.Background(), col, cfg); err != nil {
		b.Fatal(err)
	}
	rows := make([]benchPackedStep, len(col.rows))
	eps := map[string]bool{}
	for i, r := range col.rows {
		rows[i] = benchPackedStep{EpisodeID: r.EpisodeID, EpisodeIndex: r.EpisodeIndex, EnvIndex: r.EnvIndex,
			Step: r.Step, SessionStep: r.SessionStep, ObservationBlob: r.ObservationBlob, ActionBlob: r.ActionBlob,
			Reward: r.Reward, IsFirst: r.IsFirst, IsLast: r.IsLast, Terminated: r.Terminated, Truncated: r.Truncated,
			RecordedAt: r.RecordedAt, EpisodeRecordID: col.rids[i], Observation: r.Observation, Action: r.Action}
		eps[col.rids[i]] = true
	}
	return rows, len(eps)
}

// cpuTimes is the user and the system CPU time this process has used,
// and its minor page faults (first touches of fresh memory, most of the
// system time of a new recorder's warm-up).
type cpuTimes struct {
	user, sys time.Duration
	minflt    int64
}

func cpuTime() cpuTimes {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpuTimes{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), ru.Minflt}
}

func (c cpuTimes) sub(d cpuTimes) cpuTimes {
	return cpuTimes{c.user - d.user, c.sys - d.sys, c.minflt - d.minflt}
}

func (c cpuTimes) add(d cpuTimes) cpuTimes {
	return cpuTimes{c.user + d.user, c.sys + d.sys, c.minflt + d.minflt}
}

// settle makes the disk quiet between timed variants: everything written
// or removed so far is flushed (sync(2)), outside the timer.
func settle() { syscall.Sync() }

// countFiles counts the .parquet files and the directories under dir.
func countFiles(b *testing.B, dir string) (files, dirs int) {
	b.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == hive.StateDir {
				return filepath.SkipDir
			}
			dirs++
		} else if strings.HasSuffix(d.Name(), ".parquet") {
			files++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return files, dirs
}

// layoutProbeFileBytes is what each probe file holds: about the mean size
// of a steps file of a 46-step cartpole episode under layout "episode"
// (5.8 KB; BenchmarkLayouts reports it as episode-steps-file-B).
const layoutProbeFileBytes = 6 << 10

// probeMode is how probeDirFiles makes its files durable.
type probeMode struct {
	// group: each file is created under a temp name and a committer
	// publishes the finished ones in groups, as the recorder does; else
	// every file is created under its final name and the file system is
	// synced once at the end.
	group bool
	// window and maxGroup bound a group: the committer waits up to window
	// after the first file of a group, or until maxGroup files.
	window   time.Duration
	maxGroup int
}

// The probes of BenchmarkLayouts. probe-commit groups as the recorder's
// committer does (commitWindow, commitMaxParts); probe-batch as layout
// "episode" does in effect, since its steps files are handed to the
// committer with their episodes batch (WithEpisodeBatchDelay's default,
// or batchMaxRows episodes); probe-end syncs once at the end.
var layoutProbes = map[string]probeMode{
	"probe-commit": {true, commitWindow, commitMaxParts},
	"probe-batch":  {true, defaultOptions().batchDelay, batchMaxRows},
	"probe-end":    {false, 0, 1},
}

// probeDirFiles creates n partition directories under parent, each with one
// file of size bytes, with writers goroutines. In a group mode it works as
// the recorder's writers and committer do: each directory is made with one
// mkdir (vfs.Mkdir; parent exists), its file created under a temp name,
// written and closed without a sync; a committer goroutine takes the
// finished files in groups (mode.window, mode.maxGroup), syncs the file
// system (syncfs(2)), renames each file to its final name without
// replacing (vfs.RenameNoReplace: one renameat2) and syncs the file system
// again. Otherwise it creates every file under its final name and syncs
// the file system once at the end: the cheapest way to make n directories
// and files durable.
func probeDirFiles(b *testing.B, fsys vfs.FS, parent string, n, size, writers int, mode probeMode) time.Duration {
	b.Helper()
	group, window, maxGroup := mode.group, mode.window, mode.maxGroup
	payload := make([]byte, size)
	fillFrames(payload, len(payload), 1)
	type item struct{ tmp, final string }
	done := make(chan item, maxGroup)
	var next atomic.Int64
	var failed atomic.Value
	fail := func(err error) { failed.CompareAndSwap(nil, err) }
	if err := fsys.MkdirAll(parent); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				dir := filepath.Join(parent, "episode_record_id=ep-"+strconv.FormatInt(i, 10))
				if err := vfs.Mkdir(fsys, dir); err != nil {
					fail(err)
					return
				}
				final := filepath.Join(dir, hive.PartName(0))
				name := final
				if group {
					name = filepath.Join(dir, hive.TempName(0))
				}
				f, err := fsys.Create(name)
				if err == nil {
					_, err = f.Write(payload)
					if cerr := f.Close(); err == nil {
						err = cerr
					}
				}
				if err != nil {
					fail(err)
					return
				}
				if group {
					done <- item{name, final}
				}
			}
		}()
	}
	if !group {
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		if err := fsys.SyncFS(parent); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	go func() { wg.Wait(); close(done) }()
	var g []item
	commit := func() {
		if err := fsys.SyncFS(parent); err != nil {
			b.Fatal(err)
		}
		for _, it := range g {
			if err := vfs.RenameNoReplace(fsys, it.tmp, it.final); err != nil {
				b.Fatal(err)
			}
		}
		if err := fsys.SyncFS(parent); err != nil {
			b.Fatal(err)
		}
		g = g[:0]
	}
	for it := range done {
		g = append(g, it)
		timer := time.NewTimer(window)
	gather:
		for len(g) < maxGroup {
			select {
			case it, ok := <-done:
				if !ok {
					break gather
				}
				g = append(g, it)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		commit()
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// layoutRuns counts the ops of BenchmarkLayouts in this process (across
// -count runs), so that each op starts its rotation of the variants one
// further on.
var layoutRuns int

// layoutCase is one comparison of BenchmarkLayouts: the variants each op
// runs, in the order of the first op.
type layoutCase struct {
	name     string
	variants []string
	// abba: each op runs the variants forth and back (A B C C B A), each
	// op starting one variant further on; else each op runs every
	// variant once, in an order that rotates.
	abba bool
}

// BenchmarkLayouts records the same simulated session (cartpole, 16
// lanes, the simulator's default policy, next-step autoreset, 200-step
// cap: about 46 steps an episode, 2,000 episodes) in each op with every
// variant of its case:
//
//   - session: sim.Run into a recorder on a new ROOT with
//     WithLayout(hive.LayoutSession) and the default options (durable log,
//     SyncGroup, zstd), then Close;
//   - episode: the same with hive.LayoutEpisode;
//   - bare: a bare parquet-go GenericWriter writes the same rows (the
//     fixed steps columns, episode_record_id and the typed observation and
//     action, built from the simulator's events) with the same codec to one
//     file, fsynced once at the end (writeBare);
//   - bare3: the same bare writer writes the rows the recorder's steps
//     file holds, with every column of schema version 3 (the typed ones,
//     lane, the infos JSON, the raw blobs, the times) and their values,
//     read from a session recorded outside the timer (recordedRows);
//   - log: the session into the durable log alone (logOnly), as the
//     recorder's hooks log it;
//   - probe-commit, probe-batch, probe-end: probeDirFiles with the
//     recorder's writer count, one directory and one file (of about a
//     steps file's size) per episode, in each mode of layoutProbes.
//
// Case session-bare runs session, bare, bare3 and log forth and back
// (A B C D D C B A, each op starting one variant further on), so that the
// short variants run side by side; case
// episode-probes runs episode, the three probes and bare once each, in an
// order that rotates from op to op. The session is also run into
// events.NoopHooks first; net figures subtract that time (the
// simulator's own) from the recorder's. Between variants, outside the
// timer, the previous variant's files are removed and the disk is synced
// (settle).
//
// Reported per variant: session- and episode- net and gross rows/s
// (lane-steps/s) and episodes/s; bare-rows/s; each probe's eps/s
// (directories with a file per second); the ratios session/bare and
// episode/bare (net rows/s) and episode/<probe> (net episodes/s; the
// -gross ratios without the subtraction); the files each layout wrote;
// the CPU time of the process (user and system, all goroutines and the
// kernel's work on their behalf) per row of the simulator, each layout and
// the bare writers, and per episode of layout episode and the probes; the
// CPU ratios layout/bare-cpu and layout/bare3-cpu (user + system per row;
// -net subtracts the simulator's CPU from the layout's), and
// floor/bare3-cpu, (log + bare3)/bare3: what a recorder that logs every
// event and writes the rows costs at the least; and,
// for those, the mean wall time of a mkdir and of a file creation and the
// time in syncfs per op. The recorders and the probes run on a timedFS
// over the OS file system (two clock reads per call) for these.
func BenchmarkLayouts(b *testing.B) {
	const eps = 2000
	codec := CompressionZstd
	for _, lc := range []layoutCase{
		{"session-bare", []string{"session", "bare", "bare3", "log"}, true},
		{"episode-probes", []string{"episode", "probe-commit", "probe-batch", "probe-end", "bare"}, false},
	} {
		b.Run(fmt.Sprintf("%s/cartpole/n=16/eps=%d/%s", lc.name, eps, codec), func(b *testing.B) {
			base := b.TempDir()
			type timing struct {
				d     time.Duration
				cpu   cpuTimes
				fs    timedFS
				files int
				dirs  int
				runs  int
			}
			sum := map[string]*timing{}
			for _, v := range append([]string{"sim"}, lc.variants...) {
				sum[v] = &timing{fs: timedFS{FS: vfs.OS()}}
			}
			var laneSteps, episodes, fileBytes, stepsFiles, steps3 int64
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				cfg := sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep,
					MaxEpisodes: eps, TimeLimit: 200, Seed: uint64(layoutRuns + 1)}
				rows, neps := packedRows(b, cfg)
				var rows3 []benchStepV3
				if slices.Contains(lc.variants, "bare3") {
					// Fewer than rows: an autoreset roll is a step of no
					// episode, which the recorder counts and does not write.
					rows3 = recordedRows(b, filepath.Join(base, "rows3"), cfg)
					steps3 += int64(len(rows3))
				}
				settle()
				b.StartTimer()
				t0, c0 := time.Now(), cpuTime()
				s0, err := sim.Run(context.Background(), events.NoopHooks{}, cfg)
				if err != nil {
					b.Fatal(err)
				}
				sum["sim"].d += time.Since(t0)
				sum["sim"].cpu = sum["sim"].cpu.add(cpuTime().sub(c0))
				sum["sim"].runs++
				if int(s0.LaneSteps) != len(rows) {
					b.Fatalf("the simulator ran %d lane-steps, the collector saw %d rows", s0.LaneSteps, len(rows))
				}
				k := layoutRuns % len(lc.variants)
				order := slices.Concat(lc.variants[k:], lc.variants[:k])
				if lc.abba {
					order = append(order, order...)
					slices.Reverse(order[len(lc.variants):])
				}
				layoutRuns++
				for j, v := range order {
					dir := filepath.Join(base, v+"-"+strconv.Itoa(i)+"-"+strconv.Itoa(j))
					t0, c0 := time.Now(), cpuTime()
					switch v {
					case "session", "episode":
						layout := hive.LayoutSession
						if v == "episode" {
							layout = hive.LayoutEpisode
						}
						r := openBench(b, dir, WithLayout(layout), WithCompression(codec), WithFS(&sum[v].fs))
						s, err := sim.Run(context.Background(), r, cfg)
						if err != nil {
							b.Fatal(err)
						}
						closeBench(b, r)
						if s.LaneSteps != s0.LaneSteps {
							b.Fatalf("runs differ: %d and %d lane-steps", s0.LaneSteps, s.LaneSteps)
						}
					case "bare":
						if err := os.MkdirAll(dir, 0o755); err != nil {
							b.Fatal(err)
						}
						writeBare(b, dir, rows, len(rows), benchCodec(codec), parquet.PageBufferSize(256<<10))
					case "log":
						runLogOnly(b, &sum[v].fs, dir, cfg)
					case "bare3":
						if err := os.MkdirAll(dir, 0o755); err != nil {
							b.Fatal(err)
						}
						writeBare3(b, dir, rows3, codec)
					default:
						parent := filepath.Join(dir, "steps", "session_id=s", "env_id=e")
						probeDirFiles(b, &sum[v].fs, parent, neps, layoutProbeFileBytes, defaultOptions().workers, layoutProbes[v])
					}
					d, c := time.Since(t0), cpuTime().sub(c0)
					b.StopTimer()
					sum[v].d += d
					sum[v].cpu = sum[v].cpu.add(c)
					sum[v].runs++
					if v == "session" || v == "episode" {
						f, n := countFiles(b, filepath.Join(dir, "steps"))
						sum[v].files += f
						sum[v].dirs += n
						if v == "episode" {
							fileBytes += dirBytes(b, filepath.Join(dir, "steps"))
							stepsFiles += int64(f)
						}
					}
					os.RemoveAll(dir)
					settle()
					b.StartTimer()
				}
				laneSteps += s0.LaneSteps
				episodes += int64(neps)
			}
			b.StopTimer()
			// Per run of a variant: an op may run one twice.
			ls, ne := float64(laneSteps)/float64(b.N), float64(episodes)/float64(b.N)
			per := func(v string) time.Duration { return sum[v].d / time.Duration(sum[v].runs) }
			rate := func(n float64, d time.Duration) float64 { return n / d.Seconds() }
			bare := rate(ls, per("bare"))
			b.ReportMetric(bare, "bare-rows/s")
			b.ReportMetric(ls, "rows")
			b.ReportMetric(ne, "episodes")
			if steps3 > 0 {
				b.ReportMetric(float64(steps3)/float64(b.N), "bare3-rows")
			}
			for _, v := range lc.variants {
				t := sum[v]
				runs := float64(t.runs)
				if !strings.HasPrefix(v, "probe-") {
					b.ReportMetric(float64(t.cpu.user)/ls/runs, v+"-user-ns/row")
					b.ReportMetric(float64(t.cpu.sys)/ls/runs, v+"-sys-ns/row")
					b.ReportMetric(float64(t.cpu.minflt)/runs, v+"-minflt/op")
				}
				switch v {
				case "session", "episode":
					net := per(v) - per("sim")
					b.ReportMetric(rate(ls, net), v+"-net-rows/s")
					b.ReportMetric(rate(ls, per(v)), v+"-gross-rows/s")
					b.ReportMetric(rate(ne, net), v+"-net-eps/s")
					b.ReportMetric(rate(ls, net)/bare, v+"/bare")
					b.ReportMetric(rate(ls, per(v))/bare, v+"-gross/bare")
					if sum["bare3"] != nil {
						b.ReportMetric(rate(ls, per(v))/rate(ls, per("bare3")), v+"-gross/bare3")
					}
					b.ReportMetric(float64(t.files)/runs, v+"-steps-files")
					b.ReportMetric(float64(t.dirs)/runs, v+"-steps-dirs")
				case "bare", "bare3", "log":
				default:
					p := rate(ne, per(v))
					b.ReportMetric(p, v+"-eps/s")
					b.ReportMetric(rate(ne, per("episode")-per("sim"))/p, "episode/"+v)
					b.ReportMetric(rate(ne, per("episode"))/p, "episode-gross/"+v)
				}
				if v == "episode" || strings.HasPrefix(v, "probe-") {
					b.ReportMetric(float64(t.cpu.user)/ne/runs/1e3, v+"-user-us/ep")
					b.ReportMetric(float64(t.cpu.sys)/ne/runs/1e3, v+"-sys-us/ep")
					for _, k := range []ioKind{ioMkdir, ioCreate} {
						if n := t.fs.n[k].Load(); n > 0 {
							b.ReportMetric(float64(t.fs.ns[k].Load())/float64(n)/1e3, v+"-"+ioKindNames[k]+"-us")
						}
					}
					b.ReportMetric(float64(t.fs.ns[ioSyncFS].Load())/1e6/runs, v+"-syncfs-ms")
				}
			}
			b.ReportMetric(float64(sum["sim"].cpu.user)/ls/float64(sum["sim"].runs), "sim-user-ns/row")
			// CPU per row (user + system) of a layout against each bare
			// writer: gross counts the simulator's CPU on the layout's side,
			// as the session's own counters do; net subtracts the
			// simulator's CPU measured alone in the same op.
			cpuRow := func(v string) float64 {
				return float64(sum[v].cpu.user+sum[v].cpu.sys) / ls / float64(sum[v].runs)
			}
			simRow := float64(sum["sim"].cpu.user+sum["sim"].cpu.sys) / ls / float64(sum["sim"].runs)
			if sum["log"] != nil {
				// The floor: the log and the bare writer of the same rows.
				b.ReportMetric((cpuRow("log")+cpuRow("bare3"))/cpuRow("bare3"), "floor/bare3-cpu")
				b.ReportMetric((cpuRow("log")-simRow+cpuRow("bare3"))/cpuRow("bare3"), "floor-net/bare3-cpu")
			}
			for _, v := range []string{"session", "episode"} {
				for _, w := range []string{"bare", "bare3"} {
					if sum[v] == nil || sum[w] == nil {
						continue
					}
					b.ReportMetric(cpuRow(v)/cpuRow(w), v+"/"+w+"-cpu")
					b.ReportMetric((cpuRow(v)-simRow)/cpuRow(w), v+"-net/"+w+"-cpu")
				}
			}
			if stepsFiles > 0 {
				b.ReportMetric(float64(fileBytes)/float64(stepsFiles), "episode-steps-file-B")
			}
			b.ReportMetric(0, "ns/op") // one op runs every variant: its time means nothing alone
		})
	}
}

// ---------------------------------------------------------------------------
// Where the time goes

// ioKind names the file-system calls timedFS times.
type ioKind int

const (
	ioMkdir ioKind = iota
	ioCreate
	ioStat
	ioRename
	ioSyncFS
	ioSyncDir
	ioPQWrite
	ioPQClose
	ioLogWrite
	ioLogSync
	ioOther
	numIOKinds
)

var ioKindNames = [numIOKinds]string{"mkdir", "create", "stat", "rename", "syncfs", "syncdir",
	"pq-write", "pq-close", "log-write", "log-fsync", "other"}

// timedFS wraps a vfs.FS and sums the wall time spent in each kind of
// call, on whichever goroutine makes it. Calls on files under the
// recorder's state directory (the log) are counted apart from the Parquet
// files'.
type timedFS struct {
	vfs.FS
	ns, n [numIOKinds]atomic.Int64
}

// MapShared and Epoch pass the log's pending file through to the wrapped
// file system, so that the recorder logs as it does on the OS file system
// (without them the log would run without its pending file, a path
// production does not take).
func (t *timedFS) MapShared(name string, size int64) (vfs.Mapping, error) {
	m, ok := t.FS.(vfs.Mapper)
	if !ok {
		return nil, fmt.Errorf("map %s: %T cannot map files", name, t.FS)
	}
	return m.MapShared(name, size)
}

func (t *timedFS) Epoch() (string, error) {
	m, ok := t.FS.(vfs.Mapper)
	if !ok {
		return "", fmt.Errorf("%T cannot map files", t.FS)
	}
	return m.Epoch()
}

func (t *timedFS) add(k ioKind, t0 time.Time) {
	t.ns[k].Add(int64(time.Since(t0)))
	t.n[k].Add(1)
}

func isState(name string) bool {
	return strings.Contains(name, string(filepath.Separator)+hive.StateDir+string(filepath.Separator))
}

func (t *timedFS) Create(name string) (vfs.File, error) {
	t0 := time.Now()
	f, err := t.FS.Create(name)
	t.add(ioCreate, t0)
	if err != nil {
		return nil, err
	}
	return &timedFile{File: f, t: t, log: isState(name)}, nil
}

func (t *timedFS) OpenAppend(name string) (vfs.File, error) {
	t0 := time.Now()
	f, err := t.FS.OpenAppend(name)
	t.add(ioOther, t0)
	if err != nil {
		return nil, err
	}
	return &timedFile{File: f, t: t, log: isState(name)}, nil
}

func (t *timedFS) MkdirAll(name string) error {
	t0 := time.Now()
	defer t.add(ioMkdir, t0)
	return t.FS.MkdirAll(name)
}

func (t *timedFS) Mkdir(name string) error {
	t0 := time.Now()
	defer t.add(ioMkdir, t0)
	return vfs.Mkdir(t.FS, name)
}

func (t *timedFS) Stat(name string) (fs.FileInfo, error) {
	t0 := time.Now()
	defer t.add(ioStat, t0)
	return t.FS.Stat(name)
}

func (t *timedFS) RenameNoReplace(a, b string) error {
	t0 := time.Now()
	defer t.add(ioRename, t0)
	return vfs.RenameNoReplace(t.FS, a, b)
}

func (t *timedFS) Rename(a, b string) error {
	t0 := time.Now()
	defer t.add(ioRename, t0)
	return t.FS.Rename(a, b)
}

func (t *timedFS) SyncFS(name string) error {
	t0 := time.Now()
	defer t.add(ioSyncFS, t0)
	return t.FS.SyncFS(name)
}

func (t *timedFS) SyncDir(name string) error {
	t0 := time.Now()
	defer t.add(ioSyncDir, t0)
	return t.FS.SyncDir(name)
}

func (t *timedFS) Remove(name string) error {
	t0 := time.Now()
	defer t.add(ioOther, t0)
	return t.FS.Remove(name)
}

func (t *timedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	t0 := time.Now()
	defer t.add(ioOther, t0)
	return t.FS.ReadDir(name)
}

type timedFile struct {
	vfs.File
	t   *timedFS
	log bool
}

func (f *timedFile) Write(p []byte) (int, error) {
	t0 := time.Now()
	n, err := f.File.Write(p)
	if f.log {
		f.t.add(ioLogWrite, t0)
	} else {
		f.t.add(ioPQWrite, t0)
	}
	return n, err
}

func (f *timedFile) Sync() error {
	t0 := time.Now()
	err := f.File.Sync()
	if f.log {
		f.t.add(ioLogSync, t0)
	} else {
		f.t.add(ioOther, t0)
	}
	return err
}

func (f *timedFile) Close() error {
	t0 := time.Now()
	err := f.File.Close()
	if f.log {
		f.t.add(ioOther, t0)
	} else {
		f.t.add(ioPQClose, t0)
	}
	return err
}

// BenchmarkLayoutRecord records the session of BenchmarkLayouts with one
// layout only (one op is one session into a new ROOT, then Close), through
// a file system that times its calls: run it under -cpuprofile to see
// where the CPU goes, and read the <call>-ms metrics (wall time summed
// over the goroutines that made the calls, per op) for the time spent in
// the file system. <call>-frac is that time over the op's wall time (the
// calls run on several goroutines at once, so the fractions may add up
// to more than 1).
func BenchmarkLayoutRecord(b *testing.B) {
	for _, layout := range []hive.Layout{hive.LayoutSession, hive.LayoutEpisode} {
		b.Run(string(layout), func(b *testing.B) {
			tfs := &timedFS{FS: vfs.OS()}
			var laneSteps int64
			var total time.Duration
			for i := 0; b.Loop(); i++ {
				cfg := sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep,
					MaxEpisodes: 2000, TimeLimit: 200, Seed: uint64(i + 1)}
				dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
				t0 := time.Now()
				r := openBench(b, dir, WithLayout(layout), WithFS(tfs))
				s, err := sim.Run(context.Background(), r, cfg)
				if err != nil {
					b.Fatal(err)
				}
				closeBench(b, r)
				total += time.Since(t0)
				laneSteps += s.LaneSteps
				b.StopTimer()
				os.RemoveAll(dir)
				settle()
				b.StartTimer()
			}
			b.ReportMetric(float64(laneSteps)/total.Seconds(), "gross-rows/s")
			for k := range numIOKinds {
				ns := tfs.ns[k].Load()
				if ns == 0 {
					continue
				}
				b.ReportMetric(float64(ns)/1e6/float64(b.N), ioKindNames[k]+"-ms")
				b.ReportMetric(float64(ns)/float64(total), ioKindNames[k]+"-frac")
				b.ReportMetric(float64(tfs.n[k].Load())/float64(b.N), ioKindNames[k]+"-calls")
			}
		})
	}
}
