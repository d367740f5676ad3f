package recorder_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// snapshotWorkloads are runs long enough for several log segments, cut
// while their sessions run.
var snapshotWorkloads = []struct {
	name string
	cfgs []sim.Config
	// images: open image episodes outgrow what a snapshot holds inline
	// (and under the test's small budget stream their rows to their steps
	// files), so recovery rebuilds them from the log before the snapshot,
	// and the log is kept from their first event.
	images bool
}{
	{"small", []sim.Config{
		{Env: "cartpole", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 400, TimeLimit: 12, Seed: 5, SessionID: "long-cartpole"},
		{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 40, MaxEpisodeSteps: 9, Seed: 6, SessionID: "long-leaves"},
	}, false},
	{"images", []sim.Config{
		{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 300, TimeLimit: 12, Seed: 5, SessionID: "long-cartpole"},
		{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 24, TimeLimit: 40, Seed: 7, SessionID: "long-images"},
		{Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 12, MaxEpisodeSteps: 30, Seed: 8, SessionID: "long-images-disabled"},
	}, true},
}

// interleave merges event lists, one event of each in turn.
func interleave(lists ...[]events.Event) []events.Event {
	var out []events.Event
	for i := 0; ; i++ {
		more := false
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// stepClock returns a clock that advances a microsecond a call.
func stepClock() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Microsecond); return t }
}

// TestRecoverFromSnapshot records long sessions into a log of small
// segments (and under a small memory budget, so image episodes stream), so that the recorder snapshots its state and removes the
// segments before it while the sessions run; a crash then leaves a log
// that starts after the sessions' first events. Recovery must restore the
// snapshot and rebuild exactly the tables that recovering the whole log
// (no snapshots) rebuilds, for crashes at several points.
func TestRecoverFromSnapshot(t *testing.T) {
	for _, wl := range snapshotWorkloads {
		t.Run(wl.name, func(t *testing.T) {
			// The sessions' events in a fixed order (one of each in turn),
			// not as their goroutines happened to run: how long an episode
			// stays open, in log positions, depends on it.
			var each [][]events.Event
			for _, cfg := range wl.cfgs {
				each = append(each, simEvents(t, []sim.Config{cfg}))
			}
			rebuilt := testRecoverFromSnapshot(t, interleave(each...), wl.images)
			if wl.images && rebuilt == 0 {
				t.Errorf("no image episode was rebuilt from the log before a snapshot")
			}
		})
	}
}

// testRecoverFromSnapshot crashes the recording of evs at several points
// and returns how many episodes recovery rebuilt from before a snapshot.
func testRecoverFromSnapshot(t *testing.T, evs []events.Event, images bool) (rebuilt int) {
	for _, frac := range []struct {
		name string
		num  int
	}{{"third", 1}, {"half", 2}, {"most", 4}} {
		t.Run(frac.name, func(t *testing.T) {
			cut := len(evs) * frac.num / (frac.num + 2)
			segment := int64(32 << 10)
			if images {
				segment = 64 << 10
			}
			run := func(snapshots bool) (*vfs.MemFS, recorder.RecoveryReport, int, []string) {
				mem := vfs.NewMem()
				opts := []recorder.Option{fast, recorder.WithFS(mem), recorder.WithSyncPolicy(recorder.SyncEach), recorder.WithClock(stepClock()),
					recorder.WithMemoryBudget(16 << 20)}
				if snapshots {
					opts = append(opts, recorder.WithSegmentSize(segment), recorder.WithReclaimEvery(64))
				}
				rec, err := recorder.Open(memRoot, opts...)
				if err != nil {
					t.Fatal(err)
				}
				ta := newTally()
				// In chunks, letting the writers and the snapshots catch
				// up in between: a snapshot is sealed only once the writes
				// in flight when it was taken are durable, which a writer
				// far behind the events (as here, where handing over is
				// free) delays, and a busy machine more: how many segments
				// are left must not depend on it.
				for i := 0; i < cut; i += 150 {
					replay(t, &countingHooks{inner: rec, t: ta}, evs[i:min(i+150, cut)])
					if err := rec.SettleSnapshots(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				taken, sealed := rec.SnapshotsTaken(), rec.SealedAsOf()
				if snapshots && sealed == 0 {
					t.Fatalf("%d snapshots taken, none sealed", taken)
				}
				segs, err := mem.ReadDir(filepath.Join(memRoot, "_rlrec", "log"))
				if err != nil {
					t.Fatal(err)
				}
				crashed := mem.Crash()
				t.Cleanup(func() { rec.Close(context.Background()) })
				rep := openClose(t, crashed)
				checkTables(t, readTables(t, crashed, memRoot), ta, expect{crashed: true})
				assertEmptyLog(t, crashed, memRoot)
				var names []string
				for _, e := range segs {
					if strings.HasSuffix(e.Name(), ".wal") {
						names = append(names, e.Name())
					}
				}
				return crashed, rep, taken, names
			}
			plain, plainRep, _, plainSegs := run(false)
			snap, snapRep, taken, segs := run(true)
			if plainRep.Snapshot {
				t.Fatalf("recovery without snapshots reports one: %+v", plainRep)
			}
			if taken == 0 || !snapRep.Snapshot {
				t.Fatalf("no snapshot used: %d taken, report %+v", taken, snapRep)
			}
			if snapRep.Records >= plainRep.Records {
				t.Errorf("recovery from the snapshot replayed %d records, the whole log %d", snapRep.Records, plainRep.Records)
			}
			// Segments are numbered from 1: the last one's number is how
			// many were written. Some must have been removed, and most of
			// a long run's.
			written, err := strconv.Atoi(strings.TrimSuffix(segs[len(segs)-1], ".wal"))
			if err != nil {
				t.Fatalf("segment names %v: %v", segs, err)
			}
			rebuilt += snapRep.Rebuilt
			if !images && (len(segs) == written || (written >= 16 && len(segs) > written/2)) {
				t.Errorf("%d of %d log segments left at the crash: %v", len(segs), written, segs)
			}
			t.Logf("%d of %d events: %d snapshots, %d of %d segments (%d KiB) left, replayed %d records, %d episodes rebuilt from before the snapshot (whole log: %d in %v)",
				cut, len(evs), taken, len(segs), written, segment>>10, snapRep.Records, snapRep.Rebuilt, plainRep.Records, plainSegs)
			want, got := dump(t, readTables(t, plain, memRoot)), dump(t, readTables(t, snap, memRoot))
			if got != want {
				t.Errorf("tables recovered from the snapshot differ from the whole log's:\n%s", diffLines(want, got))
			}
		})
	}
	return rebuilt
}
