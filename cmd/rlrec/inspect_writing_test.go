package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// TestInspectWritingTemp: a part's temp file in a ROOT a recorder is
// writing is a write in progress, not one "left by an unfinished write";
// once the recorder is gone, the same file is.
func TestInspectWritingTemp(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			rec.Close(context.Background())
		}
	}()
	if _, err := sim.Run(context.Background(), rec, sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2, Seed: 1, SessionID: "writing"}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A temp part as a write in progress holds it.
	dir := filepath.Join(root, "episodes", "session_id=writing")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(dir, hive.TempName(7))
	if err := os.WriteFile(temp, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		close         bool
		want, notWant string
	}{
		{name: "writing", want: "write in progress", notWant: "left by an unfinished write"},
		{name: "stopped", close: true, want: "left by an unfinished write", notWant: "write in progress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.close {
				if err := rec.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				closed = true
				// Close removed nothing of a name it did not write.
				if err := os.WriteFile(temp, []byte("PAR1"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, out, errOut := runReadCmd(t, "inspect", "--published", root)
			all := out + errOut
			if !strings.Contains(all, hive.TempName(7)) {
				t.Fatalf("inspect does not list the temp file:\n%s", all)
			}
			if !strings.Contains(all, tc.want) || strings.Contains(all, tc.notWant) {
				t.Errorf("inspect: want %q and not %q:\n%s", tc.want, tc.notWant, all)
			}
		})
	}
}
