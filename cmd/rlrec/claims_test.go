package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
)

// TestClaimBlocked: a bucket recording claimed by a writer that stopped
// before its first publish, its log directory lost, is named by verify,
// inspect and recover (which exits 0: nothing to recover here), blocks
// ingest until 'rlrec release-claim' releases it, and is then recorded;
// a claim whose recording has published files is not released.
func TestClaimBlocked(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, "rec")
	srv.SetEnv(t)
	dir := t.TempDir()
	stream := filepath.Join(dir, "cartpole.events")
	if code, _, errOut := runReadCmd(t, "simulate", "--env", "cartpole", "--envs", "2", "--episodes", "6", "--reproducible", "-o", stream); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut)
	}
	local := filepath.Join(dir, "local")
	if code, _, errOut := runReadCmd(t, "ingest", "-o", local, stream); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}
	d, err := dataset.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	recs := d.Recordings()
	if len(recs) != 1 {
		t.Fatalf("%d recordings in the stream, want 1", len(recs))
	}
	rec := hive.Recording{SessionID: recs[0].SessionID, EnvID: recs[0].EnvID}
	url := "s3://rec/blocked"
	// What a writer killed after its claim and before its first publish
	// leaves once its log directory is lost: the claim alone.
	st, err := store.OpenRoot(context.Background(), vfs.OS(), url, store.S3Options{SpoolDir: filepath.Join(dir, "spool")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateState(hive.ClaimName(rec), []byte("0badc0de\n")); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "log")

	steps := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"verify names the claim", []string{"verify", url}, 1, []string{"claimed by writer 0badc0de but has nothing published", "release-claim command"}},
		{"inspect names the claim", []string{"inspect", "--published", url}, 0, []string{"claim of session " + `"` + rec.SessionID + `"`, "with nothing published"}},
		{"recover without a log exits 0", []string{"recover", "--log-dir", filepath.Join(dir, "never-made"), url}, 0, []string{"nothing to recover", "writer 0badc0de"}},
		{"ingest is refused", []string{"ingest", "-o", url, "--log-dir", logDir, stream}, 1, []string{"another writer"}},
		{"release-claim of a directory ROOT", []string{"release-claim", "--session", rec.SessionID, "--env", rec.EnvID, local}, 1, []string{"no s3:// ROOT"}},
		{"release-claim of another recording", []string{"release-claim", "--session", "nobody", url}, 1, []string{"no such claim"}},
		{"release-claim", []string{"release-claim", "--session", rec.SessionID, "--env", rec.EnvID, url}, 0, []string{"released the claim", "0badc0de"}},
		{"verify after the release", []string{"verify", url}, 0, nil},
		{"ingest after the release", []string{"ingest", "-o", url, "--log-dir", logDir, stream}, 0, nil},
		{"verify after the ingest", []string{"verify", url}, 0, nil},
		{"release-claim of a published recording", []string{"release-claim", "--session", rec.SessionID, "--env", rec.EnvID, url}, 1, []string{"has published files"}},
		{"ingest again is refused", []string{"ingest", "-o", url, "--log-dir", logDir, stream}, 1, []string{"already holds"}},
	}
	for _, s := range steps {
		code, out, errOut := runReadCmd(t, s.args...)
		all := out + errOut
		if code != s.code {
			t.Errorf("%s: exit %d, want %d:\n%s", s.name, code, s.code, all)
		}
		for _, w := range s.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: output lacks %q:\n%s", s.name, w, all)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "never-made")); err == nil {
		t.Error("recover made the log directory it was given")
	}
}
