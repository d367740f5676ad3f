package serve_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// TestFailedRecordingAcked serves two clients into a ROOT where one
// client's recording cannot get its episodes partition (a file is in the
// way). Every batch of both is acknowledged (the log holds them durably),
// the recorder's Close names the failed recording, and once the obstacle
// is gone a recovery writes it: the ROOT then holds what recording both in
// process gives.
func TestFailedRecordingAcked(t *testing.T) {
	workloads := [][]sim.Config{workload(0, 2, 6), workload(1, 1, 6)}
	want := reference(t, workloads)
	root := t.TempDir()
	obstacle := filepath.Join(root, "episodes", "session_id=client-1")
	if err := os.MkdirAll(filepath.Dir(obstacle), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obstacle, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, root, "127.0.0.1:0")
	stats := runClients(t, ts.Addr, workloads)
	for i, s := range stats {
		if s.Queued == 0 || s.Acked != s.Queued || s.Refused != 0 {
			t.Errorf("client %d: %+v; want every event acknowledged", i, s)
		}
	}
	err := ts.shutdown(t)
	failed := recorder.RecordingErrors(err)
	if len(failed) != 1 || failed[0].SessionID != "client-1" || errors.Is(err, recorder.ErrFailed) {
		t.Fatalf("close: %v; want the failed recording of client-1 only", err)
	}

	if err := os.Remove(obstacle); err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.Open(root, fast)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := digest(t, root); got != want {
		t.Errorf("the recovered ROOT differs from recording in process:\n%s", diffLines(want, got))
	}
}
