//go:build !race

package recorder

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPeakRSSLargeEvents records events near the maximum event size
// (observation events of 4 lanes of 3.6 MiB frames, 14.3 MiB each, the
// default maximum being a sixteenth of the 256 MiB budget: 16 MiB) into
// open episodes, 640 MiB in all, in a child process under the Go memory
// limit the rlrec command sets (GCMemoryLimit), and checks the two bounds
// docs/recording.md documents, each less the driver's own event buffers (the
// caller's memory) and, for the RSS, what the process held before Open:
//
//   - the data kept live (the most live heap a garbage collection found)
//     is within the budget, plus two events of the maximum size, which a
//     collection counts as live when they are allocated while it marks;
//   - the recorder's share of the peak RSS (VmHWM) is within the budget
//     plus 64 MiB, plus the pages of the log's pending file
//     (internal/wal), which is mapped into the process: two halves of the
//     log's share of the budget (an eighth), 64 MiB at the default budget.
//
// An event held in more places than the budget counts takes them past
// their bounds: queued without its charge, the RSS doubles; copied eight
// more times on its way to the assembler, the live heap is 60 MiB over.
//
// It is not built with the race detector, whose shadow memory is part of
// the RSS; .ci/run runs it on its own without -race.
func TestPeakRSSLargeEvents(t *testing.T) {
	const (
		lanes = 4
		total = 640 << 20
		// slack is the documented bound above the budget.
		slack = 64 << 20
	)
	spec := "large:" + strconv.Itoa(lanes) + ":" + strconv.Itoa(total) + ":gclimit"
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memChildEnv+"="+spec, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("the child recording %s did not finish in 50 s: its hooks wait for budget that is never given back?", spec)
	}
	if err != nil {
		t.Fatalf("child %s: %v", spec, err)
	}
	var res memResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	const mib = 1 << 20
	if res.Bytes < total*9/10 {
		t.Fatalf("the child recorded %d MiB, want about %d", res.Bytes/mib, total/mib)
	}
	liveBound := res.Budget + 2*memoryBudget(res.Budget).maxEvent()
	live := res.LiveMax - res.Held
	if live > liveBound {
		t.Errorf("the recorder kept %d MiB live, over the budget (%d MiB) plus two %d MiB events", live/mib, res.Budget/mib, memoryBudget(res.Budget).maxEvent()/mib)
	}
	pending := 2*int64(memoryBudget(res.Budget).logPending()) + 4096
	bound := res.Budget + slack + pending
	added := res.HWM - res.Baseline - res.Held
	t.Logf("live heap at most %d MiB, %d less the driver's buffers; bound %d MiB", res.LiveMax/mib, (res.LiveMax-res.Held)/mib, liveBound/mib)
	t.Logf("%d MiB of %d-lane events in %.1f s: peak RSS %d MiB, of which %d before Open and %d the driver's buffers: the recorder's %d MiB, bound %d MiB (with the pending file's %d); RSS after each eighth (MiB): %v",
		res.Bytes/mib, lanes, res.Seconds, res.HWM/mib, res.Baseline/mib, res.Held/mib, added/mib, bound/mib, pending/mib, mibs(res.RSS))
	if added > bound {
		t.Errorf("the recorder added %d MiB to the peak RSS, over the budget (%d MiB) plus %d MiB plus the pending file's %d MiB", added/mib, res.Budget/mib, slack/mib, pending/mib)
	}
}

func mibs(v []int64) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = x >> 20
	}
	return out
}

// TestPeakRSSManyLogEvents: a session with many large log events (15 MB
// of random text each, near the maximum event size, so that neither the
// log nor the files compress them much) keeps the two bounds
// TestPeakRSSLargeEvents checks, less the driver's own buffers (its frames
// and the message): the live heap within the budget plus two maximum
// events, the recorder's share of the peak RSS within the budget plus 64
// MiB plus the log's pending file, for 6, 24 and 60 log events, and so
// does the recovery of a recorder killed right after 24 of them (its log
// holds all 24, the session's open episode keeping it). Each log event
// is a session write of its own, charged to the rows in flight so that
// the hooks wait for its file instead of queueing writes (before that
// charge the peak grew by about 15 MB a log event: 512 MiB for 12, 1,219
// MiB for 60), and its file holds the message once: with page statistics
// on the message column, parquet-go copied it about ten times while
// writing it (into the page header's min and max, the column index, a
// header buffer grown by doubling) and the peak was 457-492 MiB.
func TestPeakRSSManyLogEvents(t *testing.T) {
	const mib = 1 << 20
	child := func(spec string, env ...string) memResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), memChildEnv+"="+spec, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
		cmd.Env = append(cmd.Env, env...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if ctx.Err() != nil {
			t.Fatalf("the child %s did not finish in 5 minutes: its hooks wait for budget that is never given back?", spec)
		}
		if err != nil {
			t.Fatalf("child %s: %v", spec, err)
		}
		var res memResult
		if len(env) > 0 {
			return res // it crashed on purpose, before reporting
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("child output %q: %v", out, err)
		}
		return res
	}
	var added []int64
	for _, tc := range []struct {
		name  string
		n     int
		crash bool
	}{
		{"6 log events", 6, false},
		{"24 log events", 24, false},
		{"60 log events", 60, false},
		{"recovery of 24 log events", 24, true},
	} {
		spec := "logs:" + strconv.Itoa(tc.n) + ":gclimit"
		var res memResult
		if tc.crash {
			dir := t.TempDir()
			child(spec, memCrashDirEnv+"="+dir)
			// The log holds every log event (s2 leaves random text at
			// about three quarters of its size), for recovery to replay.
			if n, want := segmentBytes(t, filepath.Join(dir, "_rlrec", "log")), int64(tc.n)*15_000_000/2; n < want {
				t.Fatalf("%s: the crashed child left %d MiB of log segments, want at least %d", tc.name, n/mib, want/mib)
			}
			res = child("recover:" + dir + ":gclimit")
		} else {
			res = child(spec)
			if want := int64(tc.n) * 15_000_000; res.Bytes < want {
				t.Fatalf("%s: the child recorded %d MiB, want at least the %d MiB of its log events", tc.name, res.Bytes/mib, want/mib)
			}
		}
		maxEvent := memoryBudget(res.Budget).maxEvent()
		liveBound := res.Budget + 2*maxEvent
		live := res.LiveMax - res.Held
		pending := 2*int64(memoryBudget(res.Budget).logPending()) + 4096
		bound := res.Budget + 64*mib + pending
		a := res.HWM - res.Baseline - res.Held
		if !tc.crash {
			added = append(added, a)
		}
		t.Logf("%s: live heap at most %d MiB (bound %d); the recorder's peak RSS %d MiB (bound %d); RSS after each eighth (MiB): %v",
			tc.name, live/mib, liveBound/mib, a/mib, bound/mib, mibs(res.RSS))
		if live > liveBound {
			t.Errorf("%s: the recorder kept %d MiB live, over the budget (%d MiB) plus two %d MiB events", tc.name, live/mib, res.Budget/mib, maxEvent/mib)
		}
		if a > bound {
			t.Errorf("%s: the recorder added %d MiB to the peak RSS, over the budget (%d MiB) plus 64 MiB plus the pending file's %d MiB", tc.name, a/mib, res.Budget/mib, pending/mib)
		}
	}
	if grow := added[len(added)-1] - added[0]; grow > 64*mib {
		t.Errorf("54 more log events of 15 MB added %d MiB to the peak RSS: their session writes are not bounded", grow/mib)
	}
}

// segmentBytes is the size of the log segments in dir.
func segmentBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wal") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}
