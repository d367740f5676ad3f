//go:build !race

package recorder

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strconv"
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
// each, near the maximum event size) makes each a session write whose
// rows are charged to the rows in flight, so that the hooks wait for
// their files instead of queueing writes: the peak RSS does not grow
// with their number. Before the charge it grew by about 15 MB a log event
// (512 MiB for 12, 1,219 MiB for 60). The peak is still above the
// documented bound of the image workloads (RELIABILITY.md, round four).
func TestPeakRSSManyLogEvents(t *testing.T) {
	run := func(n int) memResult {
		t.Helper()
		spec := "logs:" + strconv.Itoa(n) + ":gclimit"
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), memChildEnv+"="+spec, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child %s: %v", spec, err)
		}
		var res memResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("child output %q: %v", out, err)
		}
		return res
	}
	const mib = 1 << 20
	few, many := run(6), run(24)
	added := func(r memResult) int64 { return r.HWM - r.Baseline - r.Held }
	t.Logf("peak RSS added by the recorder: %d MiB with 6 log events of 15 MB, %d MiB with 24 (budget %d MiB); live heap at most %d and %d MiB",
		added(few)/mib, added(many)/mib, many.Budget/mib, few.LiveMax/mib, many.LiveMax/mib)
	if grow := added(many) - added(few); grow > 64*mib {
		t.Errorf("18 more log events of 15 MB added %d MiB to the peak RSS: their session writes are not bounded", grow/mib)
	}
}
