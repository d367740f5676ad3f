package recorder

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/sim"
)

// s3Bucket is the bucket of the recorder's object storage tests.
const s3Bucket = "rec"

// newS3Store returns a store of s3://rec/prefix on srv, as a separate
// process would have it (its own spool directory).
func newS3Store(t testing.TB, srv *s3server.Server, prefix string) *store.S3 {
	t.Helper()
	cfg := aws.Config{
		Region:       s3server.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(s3server.AccessKey, s3server.SecretKey, ""),
		BaseEndpoint: aws.String(srv.Endpoint()),
	}
	st, err := store.NewS3(context.Background(), cfg, store.Location{Bucket: s3Bucket, Prefix: prefix},
		store.S3Options{SpoolDir: t.TempDir(), MaxBackoff: 200 * time.Millisecond, MaxAttempts: 50})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// recordSim records the simulated sessions cfgs, one after another, with a
// stepped clock and episode batches flushed only at a recording's end, so
// that the same sessions give the same files wherever they are written.
func recordSim(t testing.TB, root string, cfgs []sim.Config, opts ...Option) *Recorder {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts = append([]Option{WithWriters(1), WithEpisodeBatchDelay(time.Hour), WithClock(sim.StepClock(start, time.Millisecond))}, opts...)
	r, err := Open(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i, cfg := range cfgs {
		cfg.Clock = sim.StepClock(start.Add(time.Duration(i)*time.Hour), time.Millisecond)
		if _, err := sim.Run(context.Background(), r, cfg); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// s3Sessions are the sessions the object storage tests record.
var s3Sessions = []sim.Config{
	{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 12, TimeLimit: 20, Seed: 1, SessionID: "s3-cartpole"},
	{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeSteps: 4, Seed: 2, SessionID: "s3-all-leaves",
		CapsCompleteOnce: true},
}

// tree returns the files under dir by their paths relative to it ("/"
// separators), skipping those skip reports.
func tree(t testing.TB, dir string, skip func(rel string) bool) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			return nil
		}
		out[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestS3SameFiles records the same sessions into a directory and into a
// bucket prefix (versitygw, which keeps each object as a file): the
// bucket holds exactly the directory's table files, byte for byte, and
// its layout file, and the log and lock stay in the local state
// directory. Layout episode costs at most 2 requests per episode.
func TestS3SameFiles(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, s3Bucket)
	for _, layout := range []hive.Layout{hive.LayoutEpisode, hive.LayoutSession} {
		t.Run(string(layout), func(t *testing.T) {
			local := filepath.Join(t.TempDir(), "root")
			r := recordSim(t, local, s3Sessions, WithLayout(layout))
			if err := r.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			prefix := "data/" + string(layout)
			st := newS3Store(t, srv, prefix)
			state := filepath.Join(t.TempDir(), "state")
			r = recordSim(t, "s3://"+s3Bucket+"/"+prefix, s3Sessions, WithLayout(layout), WithStore(st, state))
			if err := r.Close(context.Background()); err != nil {
				t.Fatal(err)
			}

			want := tree(t, local, func(rel string) bool { return strings.HasPrefix(rel, hive.StateDir+"/") })
			got := tree(t, filepath.Join(bucketDir, filepath.FromSlash(prefix)), nil)
			layoutRel := hive.StateDir + "/" + hive.LayoutName
			if !bytes.Equal(got[layoutRel], hive.LayoutFile(layout)) {
				t.Errorf("the bucket's %s holds %q, want %q", layoutRel, got[layoutRel], hive.LayoutFile(layout))
			}
			delete(got, layoutRel)
			if len(got) != len(want) {
				t.Errorf("the bucket holds %d table files, the directory %d", len(got), len(want))
			}
			for rel, b := range want {
				if g, ok := got[rel]; !ok {
					t.Errorf("%s: in the directory, not in the bucket", rel)
				} else if !bytes.Equal(g, b) {
					t.Errorf("%s: the bucket's %d bytes differ from the directory's %d", rel, len(g), len(b))
				}
			}
			for rel := range got {
				if _, ok := want[rel]; !ok {
					t.Errorf("%s: in the bucket, not in the directory", rel)
				}
			}
			// The state stays local: the lock and an empty log.
			if _, err := os.Stat(filepath.Join(state, lockName)); err != nil {
				t.Errorf("no lock in the state directory: %v", err)
			}
			if _, err := os.Stat(filepath.Join(state, logDir)); err != nil {
				t.Errorf("no log in the state directory: %v", err)
			}

			var episodes int64
			for _, cfg := range s3Sessions {
				episodes += cfg.MaxEpisodes
			}
			req := st.Requests()
			t.Logf("%s: %d episodes, %d requests (%d puts, %d lists, %d heads, %d gets, %d attempts)", layout, episodes,
				req.Total(), req.Ops[store.OpPut], req.Ops[store.OpList], req.Ops[store.OpHead], req.Ops[store.OpGet], req.Attempts)
		})
	}
}
