package recorder_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// TestFaultInjection fails one kind of file-system operation at its k-th
// use while recording. The recorder must fail loudly (an error wrapping
// recorder.ErrFailed or the injected error from a hook, Flush or Close;
// for a part file, a *RecordingError of its recording),
// leave no partial file under a final name, and a later Open on the same
// file system without faults must recover everything acknowledged before
// the failure.
func TestFaultInjection(t *testing.T) {
	evs := simEvents(t, []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 6, Seed: 3, SessionID: "f-next"},
		{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 4, Seed: 4, SessionID: "f-disabled"},
	})
	ops := []struct {
		name string
		op   vfs.Op
	}{
		{"fsync", vfs.OpSync},
		{"write", vfs.OpWrite},
		{"rename", vfs.OpRename},
		{"create", vfs.OpCreate},
		{"syncdir", vfs.OpSyncDir},
		{"syncfs", vfs.OpSyncFS},
	}
	for _, o := range ops {
		// How many such operations a clean recording does.
		count := vfs.FailAt(0, o.op)
		{
			mem := vfs.NewMem()
			rec, err := recorder.Open(memRoot, fast, recorder.WithFS(vfs.WithErrors(mem, count)), recorder.WithSyncPolicy(recorder.SyncEach))
			if err != nil {
				t.Fatal(err)
			}
			replay(t, rec, evs)
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		total := count.Seen()
		if total == 0 {
			t.Fatalf("%s: a recording does no such operation", o.name)
		}
		// Counts vary with timing (how writes group into commits and log
		// syncs), so k stays within what every run does: three quarters of
		// the count, and for syncfs the two syncs of the one group every
		// recording commits (before and after its renames).
		last := max(total*3/4, 1)
		if o.op == vfs.OpSyncFS {
			last = min(last, 2)
		}
		for _, k := range spread(last, 4) {
			t.Run(o.name+"/"+itoa(k), func(t *testing.T) {
				mem := vfs.NewMem()
				trig := vfs.FailAt(k, o.op)
				rec, err := recorder.Open(memRoot, fast, recorder.WithFS(vfs.WithErrors(mem, trig)), recorder.WithSyncPolicy(recorder.SyncEach))
				if err != nil {
					// Failing during Open is a clean error too.
					if !errors.Is(err, vfs.ErrInjected) {
						t.Fatalf("open: %v, want the injected error", err)
					}
					return
				}
				ta := newTally()
				hooks := &countingHooks{inner: rec, t: ta}
				var failed error
				for _, ev := range evs {
					if err := events.Dispatch(context.Background(), hooks, ev); err != nil && failed == nil {
						failed = err
					}
				}
				if err := rec.Flush(context.Background()); err != nil && failed == nil {
					failed = err
				}
				if err := rec.Close(context.Background()); err != nil && failed == nil {
					failed = err
				}
				if trig.Fired() == 0 {
					t.Fatalf("operation %d of %d never happened", k, total)
				}
				switch {
				case failed == nil && o.op == vfs.OpSyncFS:
					// A failed file-system sync is retried file by file
					// and directory by directory: when those pass, the
					// files are durable and nothing failed (the crash
					// below checks it).
				case failed == nil:
					t.Fatalf("the injected %s failure went unreported", o.name)
				case !errors.Is(failed, recorder.ErrFailed) && !errors.Is(failed, vfs.ErrInjected):
					t.Fatalf("error %v wraps neither recorder.ErrFailed nor the injected error", failed)
				}
				// No partial file under a final name, now or after a crash.
				readTables(t, mem, memRoot)
				crashed := mem.Crash()
				readTables(t, crashed, memRoot)

				// Recovery without faults keeps everything acknowledged.
				for name, fsys := range map[string]vfs.FS{"as left": mem, "after a crash": crashed} {
					openClose(t, fsys)
					tb := readTables(t, fsys, memRoot)
					checkTables(t, tb, ta, expect{atLeast: true, crashed: true})
					if t.Failed() {
						t.Fatalf("recovery %s lost acknowledged events (first error: %v)", name, failed)
					}
				}
			})
		}
	}
}

// spread picks up to n values in 1..total, first and last included.
func spread(total int64, n int) []int64 {
	if total <= int64(n) {
		out := make([]int64, total)
		for i := range out {
			out[i] = int64(i + 1)
		}
		return out
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = 1 + int64(i)*(total-1)/int64(n-1)
	}
	return out
}

func itoa(k int64) string {
	var b strings.Builder
	if k == 0 {
		return "0"
	}
	var d []byte
	for ; k > 0; k /= 10 {
		d = append([]byte{byte('0' + k%10)}, d...)
	}
	b.Write(d)
	return b.String()
}
