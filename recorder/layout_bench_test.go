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
	// abba: each op runs the two variants as A B B A or B A A B, in turn;
	// else each op runs every variant once, in an order that rotates.
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
//   - probe-commit, probe-batch, probe-end: probeDirFiles with the
//     recorder's writer count, one directory and one file (of about a
//     steps file's size) per episode, in each mode of layoutProbes.
//
// Case session-bare runs session and bare as A B B A (or B A A B, in
// turn), so that the two short variants run side by side; case
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
// the bare writer, and per episode of layout episode and the probes; and,
// for those, the mean wall time of a mkdir and of a file creation and the
// time in syncfs per op. The recorders and the probes run on a timedFS
// over the OS file system (two clock reads per call) for these.
func BenchmarkLayouts(b *testing.B) {
	const eps = 2000
	codec := CompressionZstd
	for _, lc := range []layoutCase{
		{"session-bare", []string{"session", "bare"}, true},
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
			var laneSteps, episodes, fileBytes, stepsFiles int64
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				cfg := sim.Config{Env: "cartpole", NumEnvs: 16, Autoreset: sim.AutoresetNextStep,
					MaxEpisodes: eps, TimeLimit: 200, Seed: uint64(layoutRuns + 1)}
				rows, neps := packedRows(b, cfg)
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
				var order []string
				if lc.abba {
					x, y := lc.variants[0], lc.variants[1]
					if layoutRuns%2 == 1 {
						x, y = y, x
					}
					order = []string{x, y, y, x}
				} else {
					k := layoutRuns % len(lc.variants)
					order = slices.Concat(lc.variants[k:], lc.variants[:k])
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
					b.ReportMetric(float64(t.files)/runs, v+"-steps-files")
					b.ReportMetric(float64(t.dirs)/runs, v+"-steps-dirs")
				case "bare":
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
