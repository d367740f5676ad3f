package recorder_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// TestSessionStartedAfterItsFiles: a stream whose events come before
// their SessionStarted (reversed) gets its files written first; the
// SessionStarted that follows is out of order, not a recording ROOT
// already held: it is not refused with ErrRecordingExists (the assembler
// counts it). A SessionStarted of a recording whose files an earlier
// recorder wrote is still refused.
func TestSessionStartedAfterItsFiles(t *testing.T) {
	cfg := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 5, Seed: 3, SessionID: "rev"}
	evs := simEvents(t, []sim.Config{cfg})
	var start events.Event
	var rest []events.Event
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind() == events.KindSessionStarted {
			start = evs[i]
			continue
		}
		rest = append(rest, evs[i])
	}
	root := t.TempDir()
	ctx := context.Background()
	base := time.Unix(1_700_000_000, 0)
	rec, err := recorder.Open(root, fast)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range rest {
		if err := rec.RecordAt(ctx, ev, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatalf("event %d (%s): %v", i, ev.Kind(), err)
		}
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Its files are published in the committer's next group.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		published := false
		for _, f := range walkFiles(t, vfs.OS(), root, root) {
			published = published || strings.HasSuffix(f, "/part-00000.parquet")
		}
		if published {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no file published: %v", walkFiles(t, vfs.OS(), root, root))
		}
	}
	if err := rec.RecordAt(ctx, start, base.Add(time.Hour)); errors.Is(err, recorder.ErrRecordingExists) {
		t.Fatalf("the stream's own SessionStarted, after its files: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// A later recorder: ROOT held the recording before it saw it.
	rec, err = recorder.Open(root, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(ctx)
	if err := rec.RecordAt(ctx, start, base.Add(2*time.Hour)); !errors.Is(err, recorder.ErrRecordingExists) {
		t.Fatalf("SessionStarted of a recording an earlier recorder wrote: %v, want ErrRecordingExists", err)
	}
}
