package recorder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

const memRoot = "/data/root"

// fast keeps the recovery tests quick: compression plays no part in them.
var fast = recorder.WithCompression(recorder.CompressionNone)

// recoverySessions is the simulated run the recovery tests cut.
func recoverySessions(t testing.TB) []events.Event {
	return simEvents(t, []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 5, Seed: 1, SessionID: "s-next"},
		{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 4, Seed: 2, SessionID: "s-disabled"},
	})
}

// cutPoint picks how many of evs are handed over before the crash.
type cutPoint struct {
	name string
	at   func(evs []events.Event) int
}

func firstIndex(evs []events.Event, match func(events.Event) bool) int {
	for i, ev := range evs {
		if match(ev) {
			return i
		}
	}
	return -1
}

var cutPoints = []cutPoint{
	{"nothing", func([]events.Event) int { return 0 }},
	{"before any episode completes", func(evs []events.Event) int {
		return firstIndex(evs, func(ev events.Event) bool { return ev.Kind() == events.KindEpisodeCompleted })
	}},
	{"mid-episode", func(evs []events.Event) int {
		i := firstIndex(evs, func(ev events.Event) bool { return ev.Kind() == events.KindEpisodeCompleted })
		return i + (len(evs)-i)/3
	}},
	{"right after EpisodeCompleted", func(evs []events.Event) int {
		return firstIndex(evs, func(ev events.Event) bool { return ev.Kind() == events.KindEpisodeCompleted }) + 1
	}},
	{"after a step's action, before its reward", func(evs []events.Event) int {
		n := 0
		return firstIndex(evs, func(ev events.Event) bool {
			if ev.Kind() == events.KindActionReceived {
				n++
			}
			return n == 7
		}) + 1
	}},
	{"after SessionEnded before the final telemetry", func(evs []events.Event) int {
		return firstIndex(evs, func(ev events.Event) bool { return ev.Kind() == events.KindSessionEnded }) + 1
	}},
	{"after everything", func(evs []events.Event) int { return len(evs) }},
}

// replay hands evs to h in order and fails the test on a hook error.
func replay(t testing.TB, h events.Hooks, evs []events.Event) {
	t.Helper()
	for i, ev := range evs {
		if err := events.Dispatch(context.Background(), h, ev); err != nil {
			t.Fatalf("event %d (%s): %v", i, ev.Kind(), err)
		}
	}
}

// checkNoPartialFiles fails on a final-named file that is not a complete
// Parquet file and on any file that is not a part or temp file (readTables
// does both); it returns the tables.
func checkNoPartialFiles(t testing.TB, fsys vfs.FS) *tables {
	t.Helper()
	return readTables(t, fsys, memRoot)
}

// openClose recovers root on fsys and closes the recorder.
func openClose(t testing.TB, fsys vfs.FS) recorder.RecoveryReport {
	t.Helper()
	rec, err := recorder.Open(memRoot, fast, recorder.WithFS(fsys))
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	rep := rec.Recovered()
	if err := rec.Close(context.Background()); err != nil {
		t.Fatalf("close after recovery: %v", err)
	}
	return rep
}

// dump renders every table as sorted text, for comparing two ROOTs.
func dump(t testing.TB, tb *tables) string {
	t.Helper()
	var lines []string
	for _, f := range tb.files {
		// How episodes rows split into files follows when batches were
		// flushed, which timing decides; the rows are compared below.
		if !strings.HasPrefix(f, schema.TableEpisodes+string(filepath.Separator)) {
			lines = append(lines, "file "+f)
		}
	}
	for k, v := range tb.steps {
		lines = append(lines, fmt.Sprintf("steps %v %s", k, js(v)))
	}
	for k, v := range tb.episodes {
		lines = append(lines, fmt.Sprintf("episodes %v %s", k, js(v)))
	}
	for k, v := range tb.sessions {
		lines = append(lines, fmt.Sprintf("sessions %v %s", k, js(v)))
	}
	for k, v := range tb.logs {
		lines = append(lines, fmt.Sprintf("logs %v %s", k, js(v)))
	}
	for k, v := range tb.telemetry {
		lines = append(lines, fmt.Sprintf("telemetry %v %s", k, js(v)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestRecoverAfterCrash(t *testing.T) {
	evs := recoverySessions(t)
	crashes := []struct {
		name  string
		crash func(m *vfs.MemFS) *vfs.MemFS
	}{
		{"crash", func(m *vfs.MemFS) *vfs.MemFS { return m.Crash() }},
		{"torn", func(m *vfs.MemFS) *vfs.MemFS { return m.CrashTorn(7) }},
	}
	for _, cp := range cutPoints {
		for _, cr := range crashes {
			t.Run(cp.name+"/"+cr.name, func(t *testing.T) {
				cut := cp.at(evs)
				if cut < 0 || cut > len(evs) {
					t.Fatalf("cut point %d out of range", cut)
				}
				mem := vfs.NewMem()
				rec, err := recorder.Open(memRoot, fast, recorder.WithFS(mem), recorder.WithSyncPolicy(recorder.SyncEach))
				if err != nil {
					t.Fatal(err)
				}
				ta := newTally()
				replay(t, &countingHooks{inner: rec, t: ta}, evs[:cut])
				crashed := cr.crash(mem)
				// The crashed recorder is abandoned: its goroutines keep
				// running on mem, which the test no longer looks at.
				t.Cleanup(func() { rec.Close(context.Background()) })

				checkNoPartialFiles(t, crashed)
				rep := openClose(t, crashed)
				tb := readTables(t, crashed, memRoot)
				checkTables(t, tb, ta, expect{crashed: true})
				assertEmptyLog(t, crashed, memRoot)

				// The report: every session the log held, crashed ones counted.
				var ended, open int
				for _, s := range ta.sessions {
					if s.ended || s.failed {
						ended++
					} else {
						open++
					}
				}
				if rep.Crashed > open || rep.Sessions > ended+open {
					t.Errorf("report %+v: %d sessions ended, %d open", rep, ended, open)
				}
				if cut > 0 && rep.Records == 0 && len(tb.sessions) == 0 {
					t.Errorf("report %+v: nothing recovered from %d events", rep, cut)
				}
				if rep.Damage.Records < 0 {
					t.Errorf("report %+v", rep)
				}

				// Recovery is idempotent: a second open finds nothing to do
				// and changes nothing.
				before := dump(t, tb)
				rep2 := openClose(t, crashed)
				if rep2.Records != 0 || rep2.Sessions != 0 {
					t.Errorf("second recovery replayed %+v", rep2)
				}
				if after := dump(t, readTables(t, crashed, memRoot)); after != before {
					t.Errorf("a second open changed the tables:\n%s", diffLines(before, after))
				}
			})
		}
	}
}

// diffLines shows the lines of a and b that the other lacks.
func diffLines(a, b string) string {
	in := func(s string) map[string]bool {
		m := make(map[string]bool)
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	am, bm := in(a), in(b)
	var out []string
	for l := range am {
		if !bm[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range bm {
		if !am[l] {
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("... %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// failDirList fails every listing of one directory.
type failDirList struct {
	dir   string
	fired int
}

func (f *failDirList) Inject(op vfs.Op, name string) error {
	if op == vfs.OpReadDir && name == f.dir {
		f.fired++
		return &vfs.InjectedError{Op: op, Name: name}
	}
	return nil
}

// TestRecoverUnlistableDir recovers a crash that left a stale temp file in
// the partition directory of an episode the recovery has to write, while
// that directory cannot be listed. The recovery must not settle around
// it (a temp a marker names would stay unpublished, a stale one would
// push the episode to part 1): the recording fails, its events stay in the
// log, and the next recovery gives the tables of an undisturbed one.
func TestRecoverUnlistableDir(t *testing.T) {
	evs := recoverySessions(t)
	mem := vfs.NewMem()
	rec, err := recorder.Open(memRoot, fast, recorder.WithFS(mem), recorder.WithSyncPolicy(recorder.SyncEach))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close(context.Background()) })
	replay(t, rec, evs[:cutPoints[2].at(evs)])
	crashed := mem.Crash()

	ref := crashed.Crash()
	openClose(t, ref)
	want := dump(t, readTables(t, ref, memRoot))
	// An episode the recovery wrote: the crash left no file of it.
	var dir string
	for _, f := range readTables(t, ref, memRoot).files {
		if !strings.HasPrefix(f, schema.TableSteps+string(filepath.Separator)) {
			continue
		}
		if _, err := crashed.Stat(filepath.Join(memRoot, f)); errors.Is(err, fs.ErrNotExist) {
			dir = filepath.Join(memRoot, filepath.Dir(f))
			break
		}
	}
	if dir == "" {
		t.Fatal("the recovery wrote no steps file the crash had not left")
	}
	// What a crashed writer leaves: the episode's directory and a temp
	// file of its part 0.
	if err := crashed.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	tmp, err := crashed.Create(filepath.Join(dir, hive.TempName(0)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write([]byte("PAR1 a crashed write")); err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if err := crashed.SyncFS(memRoot); err != nil {
		t.Fatal(err)
	}

	m := crashed.Crash()
	inj := &failDirList{dir: dir}
	r, err := recorder.Open(memRoot, fast, recorder.WithFS(vfs.WithErrors(m, inj)))
	if err != nil {
		t.Fatalf("recover with %s unlistable: %v; want only its recording failed", dir, err)
	}
	err = r.Close(context.Background())
	if failed := recorder.RecordingErrors(err); len(failed) != 1 || inj.fired == 0 {
		t.Errorf("close after recovering with %s unlistable (%d listings failed): %v; want its recording failed", dir, inj.fired, err)
	}
	after := m.Crash()
	openClose(t, after)
	if got := dump(t, readTables(t, after, memRoot)); got != want {
		t.Errorf("tables after the directory could be listed again differ from an undisturbed recovery:\n%s", diffLines(want, got))
	}
}

// TestRecoverCrashDuringRecovery crashes the recovery itself at the k-th
// file-system operation, for a sweep of k, and checks that the next Open
// produces the same tables as an undisturbed recovery.
func TestRecoverCrashDuringRecovery(t *testing.T) {
	evs := recoverySessions(t)
	cuts := []cutPoint{cutPoints[2], cutPoints[6]}
	for _, cp := range cuts {
		t.Run(cp.name, func(t *testing.T) {
			mem := vfs.NewMem()
			rec, err := recorder.Open(memRoot, fast, recorder.WithFS(mem), recorder.WithSyncPolicy(recorder.SyncEach))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rec.Close(context.Background()) })
			ta := newTally()
			replay(t, &countingHooks{inner: rec, t: ta}, evs[:cp.at(evs)])
			crashed := mem.Crash()

			// The undisturbed recovery, and how many operations it does.
			ref := crashed.Crash()
			count := vfs.FailAt(0)
			rec2, err := recorder.Open(memRoot, fast, recorder.WithFS(vfs.WithErrors(ref, count)))
			if err != nil {
				t.Fatal(err)
			}
			ops := count.Seen()
			if err := rec2.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := readTables(t, ref, memRoot)
			checkTables(t, want, ta, expect{crashed: true})
			wantDump := dump(t, want)

			step := max(ops/8, 1)
			for k := int64(1); k <= ops; k += step {
				m := crashed.Crash()
				trig := vfs.FailAt(k)
				r, err := recorder.Open(memRoot, fast, recorder.WithFS(vfs.WithErrors(m, trig)))
				if err == nil {
					// The failed operation did not stop recovery (a
					// failed read of the part directory is not fatal);
					// what matters is the result after a crash now.
					if trig.Fired() == 0 {
						t.Fatalf("k=%d of %d: nothing failed", k, ops)
					}
				}
				// Crash now, the failed recorder abandoned (or not).
				after := m.Crash()
				if r != nil {
					r.Close(context.Background())
				}
				checkNoPartialFiles(t, after)
				openClose(t, after)
				got := readTables(t, after, memRoot)
				if d := dump(t, got); d != wantDump {
					t.Fatalf("k=%d of %d (%v): tables differ from an undisturbed recovery:\n%s", k, ops, err, diffLines(wantDump, d))
				}
			}
		})
	}
}
