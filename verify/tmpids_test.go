package verify

import (
	"context"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// TestTmpIDs: ids that end in ".tmp" (the suffix of temp files, which
// readers skip) name partitions readers see: the recording is listed, its
// episodes read, and verify finds nothing wrong.
func TestTmpIDs(t *testing.T) {
	root := t.TempDir()
	rec, err := recorder.Open(root, recorder.WithCompression(recorder.CompressionNone))
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 5, Seed: 1, SessionID: "run.tmp"}
	sum, err := sim.Run(context.Background(), rec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := ds.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Recording.SessionID != "run.tmp" || ss[0].Row() == nil {
		t.Fatalf("sessions %v, want the recording of session run.tmp", ss)
	}
	eps, err := ds.Episodes(ss[0].Recording)
	if err != nil || int64(len(eps)) != sum.Episodes {
		t.Fatalf("%d episodes (%v), want %d", len(eps), err, sum.Episodes)
	}
	rep, err := Root(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("verify: %v", rep.Problems)
	}
}
