package recorder_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// TestPublishedSequence records sessions that end and leave the log, and
// reads their last sequence back from ROOT's files with a new recorder:
// the number of their last event (a late window snapshot, which goes to
// a later telemetry part, included), 0 for unnumbered events and unknown
// recordings, and an error naming a file that cannot be read.
func TestPublishedSequence(t *testing.T) {
	cfg := func(id string) sim.Config {
		return sim.Config{SessionID: id, Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, Seed: 5, LateWindow: true}
	}
	mem := vfs.NewMem()
	rec, err := recorder.Open(memRoot, fast, recorder.WithFS(mem))
	if err != nil {
		t.Fatal(err)
	}
	numbered := simEvents(t, []sim.Config{cfg("numbered")})
	seqs := numberEvents(numbered)
	// The late window snapshot comes after the session's files.
	if last := numbered[len(numbered)-1]; last.Kind() != events.KindTelemetrySnapshot {
		t.Fatalf("the session ends with %s, want its late window snapshot", last.Kind())
	}
	sequencedRun(t, rec, numbered, seqs, 0, len(numbered))
	for i, ev := range simEvents(t, []sim.Config{cfg("unnumbered")}) {
		if err := rec.RecordAt(context.Background(), ev, time.Unix(1_700_000_000, int64(i)*1e6)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	rec, err = recorder.Open(memRoot, fast, recorder.WithFS(mem), recorder.WithResume(true))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(context.Background())
	env := numbered[0]
	_, route := env.Header()
	for _, c := range []struct {
		name, session string
		want          uint64
	}{
		{"numbered", "numbered", seqs[len(seqs)-1]},
		{"unnumbered", "unnumbered", 0},
		{"unknown", "nobody", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rec.RecoveredSequence(c.session, route.EnvID); got != 0 {
				t.Errorf("RecoveredSequence = %d, want 0: the recording left the log", got)
			}
			got, err := rec.PublishedSequence(c.session, route.EnvID)
			if err != nil || got != c.want {
				t.Errorf("PublishedSequence = %d, %v; want %d", got, err, c.want)
			}
		})
	}

	// A sessions file that is no Parquet: the error names it.
	dir := hive.RecordingPartition(schema.TableSessions, hive.Recording{SessionID: "numbered", EnvID: route.EnvID}).Dir(memRoot)
	file := filepath.Join(dir, hive.PartName(0))
	if err := vfs.WriteFile(mem, file+".tmp", file, []byte("not parquet")); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.PublishedSequence("numbered", route.EnvID); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("PublishedSequence over a broken file: %v, want an error naming %s", err, file)
	} else if errors.Is(err, recorder.ErrFailed) {
		t.Errorf("a broken file failed the recorder: %v", err)
	}
}
