package recorder_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
	"github.com/rlrec/rlrec/verify"
)

// recordingFault fails chosen operations on the paths under one
// recording's partitions (those containing sub), as EACCES on its
// directory or EIO on its files would. With syncFS set it also fails every
// file-system sync while a file under sub is written and not yet synced,
// removed or renamed: a write-back error of that file, which syncfs(2)
// reports without saying whose it is.
type recordingFault struct {
	sub    string
	ops    []vfs.Op
	syncFS bool
	// err, when set, is the error of the failing operations.
	err   error
	off   atomic.Bool
	fired atomic.Int64

	mu      sync.Mutex
	pending map[string]bool
}

func (f *recordingFault) Inject(op vfs.Op, name string) error {
	if f.off.Load() {
		return nil
	}
	under := strings.Contains(name, f.sub)
	if f.syncFS {
		f.mu.Lock()
		if f.pending == nil {
			f.pending = map[string]bool{}
		}
		switch {
		case under && op == vfs.OpCreate:
			f.pending[name] = true
		case op == vfs.OpRemove || op == vfs.OpRename:
			delete(f.pending, name)
		}
		busy := len(f.pending) > 0
		f.mu.Unlock()
		if op == vfs.OpSyncFS && busy {
			f.fired.Add(1)
			return &vfs.InjectedError{Op: op, Name: name, N: f.fired.Load()}
		}
	}
	if !under {
		return nil
	}
	for _, o := range f.ops {
		if o == op {
			f.fired.Add(1)
			if f.err != nil {
				return &fs.PathError{Op: op.String(), Path: name, Err: f.err}
			}
			return &vfs.InjectedError{Op: op, Name: name, N: f.fired.Load()}
		}
	}
	return nil
}

// TestRecordingFailureIsolated fails the files of one recording of three
// at each point a file is made (its directory, its creation, a write, its
// sync, its publishing). The other two must be recorded completely, the
// hooks must never fail, Close must return a *RecordingError naming the
// failed recording (and not recorder.ErrFailed), and its events must stay
// in the log: an Open once the fault is gone writes it, and verify is
// then clean.
func TestRecordingFailureIsolated(t *testing.T) {
	for _, layout := range []hive.Layout{hive.LayoutEpisode, hive.LayoutSession} {
		cases := []struct {
			name   string
			ops    []vfs.Op
			syncFS bool
		}{
			{"mkdir", []vfs.Op{vfs.OpMkdirAll}, false},
			{"create", []vfs.Op{vfs.OpCreate}, false},
			{"write", []vfs.Op{vfs.OpWrite}, false},
			{"sync", []vfs.Op{vfs.OpSync}, true},
			{"publish", []vfs.Op{vfs.OpRename}, false},
		}
		for _, tc := range cases {
			t.Run(string(layout)+"/"+tc.name, func(t *testing.T) {
				testRecordingFailure(t, layout, tc.ops, tc.syncFS)
			})
		}
	}
}

func testRecordingFailure(t *testing.T, layout hive.Layout, ops []vfs.Op, syncFS bool) {
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5, TimeLimit: 8, Seed: 11, SessionID: "iso-a"},
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5, TimeLimit: 8, Seed: 12, SessionID: "iso-bad"},
		{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeSteps: 5, Seed: 13, SessionID: "iso-c"},
	}
	evs := simEvents(t, cfgs)
	okTally, allTally := newTally(), newTally()
	for _, ev := range evs {
		allTally.add(ev)
		if sid, _ := ev.Header(); sid != "iso-bad" {
			okTally.add(ev)
		}
	}
	root := t.TempDir()
	fault := &recordingFault{sub: "session_id=iso-bad", ops: ops, syncFS: syncFS}
	rec, err := recorder.Open(root, fast, recorder.WithLayout(layout), recorder.WithFS(vfs.WithErrors(vfs.Default, fault)))
	if err != nil {
		t.Fatal(err)
	}
	replay(t, rec, evs) // no hook may fail
	if err := rec.Flush(context.Background()); err != nil && recorder.RecordingErrors(err) == nil {
		t.Fatalf("Flush: %v, want nil or only recording errors", err)
	}
	err = rec.Close(context.Background())
	if fault.fired.Load() == 0 {
		t.Fatal("the fault never fired")
	}
	checkRecordingError(t, err, "iso-bad")

	// The others are complete; the failed one has no sessions row, so
	// nothing claims it complete.
	l, err := hive.List(vfs.Default, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range l.Strays {
		if !st.Temp || !strings.Contains(st.Rel, fault.sub) {
			t.Errorf("stray %s (%s) outside the failed recording", st.Rel, st.Reason)
		}
	}
	sessions := map[string]int{}
	for _, f := range l.Files {
		if f.Table == "sessions" {
			sessions[f.SessionID]++
		}
	}
	if sessions["iso-a"] != 1 || sessions["iso-c"] != 1 || sessions["iso-bad"] != 0 {
		t.Errorf("sessions files by session %v; want one of iso-a and iso-c, none of iso-bad", sessions)
	}
	if layout == hive.LayoutEpisode {
		// (The test's reader knows the episode layout only.)
		tb := readTables(t, vfs.Default, root)
		clearTemps(tb)
		checkTables(t, tb, okTally, expect{})
	}
	if t.Failed() {
		t.FailNow()
	}

	// A recovery while the fault lasts (as rlrec recover, and as rlrec
	// serve with its resume mode) writes nothing of it, fails again and
	// keeps it in the log.
	for _, resume := range []bool{true, false} {
		rec, err = recorder.Open(root, fast, recorder.WithResume(resume), recorder.WithFS(vfs.WithErrors(vfs.Default, fault)))
		if err != nil {
			t.Fatalf("recover while the fault lasts (resume %v): %v", resume, err)
		}
		if got := rec.Recovered().Failed; len(got) != 1 || got[0].SessionID != "iso-bad" {
			t.Errorf("resume %v: RecoveryReport.Failed = %v, want the failed recording", resume, got)
		}
		checkRecordingError(t, rec.Close(context.Background()), "iso-bad")
	}

	// The operator fixes the cause: recovery writes it.
	fault.off.Store(true)
	rec, err = recorder.Open(root, fast)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if got := rec.Recovered().Failed; len(got) != 0 {
		t.Errorf("recovery without the fault failed %v", got)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatalf("close after recovery: %v", err)
	}
	assertEmptyLog(t, vfs.Default, root)
	if layout == hive.LayoutEpisode {
		checkTables(t, readTables(t, vfs.Default, root), allTally, expect{})
	}
	rep, err := verify.Root(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b strings.Builder
		rep.Write(&b)
		t.Fatalf("verify after recovery:\n%s", b.String())
	}
}

// TestRecordingFailureKeepsLog fails one recording early while another
// runs long enough for snapshots and the removal of log segments: the
// failed recording's records must all stay in the log, so that recovery
// writes every one of its episodes.
func TestRecordingFailureKeepsLog(t *testing.T) {
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 300, TimeLimit: 20, Seed: 21, SessionID: "keep-long"},
		{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 60, TimeLimit: 20, Seed: 22, SessionID: "keep-bad"},
	}
	evs := simEvents(t, cfgs)
	ta := newTally()
	for _, ev := range evs {
		ta.add(ev)
	}
	mem := vfs.NewMem()
	fault := &recordingFault{sub: "session_id=keep-bad", ops: []vfs.Op{vfs.OpCreate}}
	rec, err := recorder.Open(memRoot, fast, recorder.WithFS(vfs.WithErrors(mem, fault)),
		recorder.WithSegmentSize(16<<10), recorder.WithReclaimEvery(16), recorder.WithEpisodeBatchDelay(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := events.Dispatch(context.Background(), rec, ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if i%500 == 0 {
			// Let batches flush and snapshots seal, as a live run does.
			if err := rec.Flush(context.Background()); err != nil && recorder.RecordingErrors(err) == nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if rec.SnapshotsTaken() == 0 {
		t.Fatal("no snapshot was taken: the test does not exercise them")
	}
	checkRecordingError(t, rec.Close(context.Background()), "keep-bad")
	fault.off.Store(true)
	openClose(t, mem)
	checkTables(t, readTables(t, mem, memRoot), ta, expect{})
}

// TestFileSystemFullFailsRecorder checks the other side of the rule: a
// full file system (ENOSPC), reported on one recording's file, is the
// whole ROOT's, and fails the recorder as before.
func TestFileSystemFullFailsRecorder(t *testing.T) {
	evs := simEvents(t, []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 6, Seed: 31, SessionID: "full-a"},
		{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 6, Seed: 32, SessionID: "full-bad"},
	})
	mem := vfs.NewMem()
	fault := &recordingFault{sub: "session_id=full-bad", ops: []vfs.Op{vfs.OpWrite}, err: syscall.ENOSPC}
	rec, err := recorder.Open(memRoot, fast, recorder.WithFS(vfs.WithErrors(mem, fault)))
	if err != nil {
		t.Fatal(err)
	}
	var failed error
	for _, ev := range evs {
		if err := events.Dispatch(context.Background(), rec, ev); err != nil && failed == nil {
			failed = err
		}
	}
	if err := rec.Close(context.Background()); err != nil && failed == nil {
		failed = err
	}
	if fault.fired.Load() == 0 {
		t.Fatal("the fault never fired")
	}
	if !errors.Is(failed, recorder.ErrFailed) || !errors.Is(failed, syscall.ENOSPC) || recorder.RecordingErrors(failed) != nil {
		t.Fatalf("error %v; want recorder.ErrFailed wrapping ENOSPC", failed)
	}
}

// checkRecordingError asserts that err reports exactly the failure of the
// recording of session sid, and nothing that failed the recorder.
func checkRecordingError(t *testing.T, err error, sid string) {
	t.Helper()
	if err == nil {
		t.Fatal("Close returned nil; want the failed recording")
	}
	if errors.Is(err, recorder.ErrFailed) {
		t.Fatalf("Close: %v; one recording's error failed the recorder", err)
	}
	if !errors.Is(err, recorder.ErrRecordingFailed) || !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Close: %v; want ErrRecordingFailed wrapping the injected error", err)
	}
	res := recorder.RecordingErrors(err)
	if len(res) != 1 {
		t.Fatalf("Close: %v; want one recording error, got %d", err, len(res))
	}
	re := res[0]
	if re.SessionID != sid || re.EnvID == "" || !strings.Contains(re.Path, "session_id="+sid) {
		t.Fatalf("RecordingError %+v: want session %q, its env id and a path in its partition", re, sid)
	}
	if !strings.Contains(err.Error(), sid) || !strings.Contains(err.Error(), re.EnvID) {
		t.Fatalf("Close: %q does not name the recording", err)
	}
}

// clearTemps drops the temp files from tb's file list.
func clearTemps(tb *tables) {
	keep := tb.files[:0]
	for _, rel := range tb.files {
		if _, temp, _ := hive.ParsePartName(filepath.Base(rel)); !temp {
			keep = append(keep, rel)
		}
	}
	tb.files = keep
}
