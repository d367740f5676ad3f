package recorder_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logcount"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/verify"
)

const (
	// crashChildState, when set, makes the crash child record into the
	// s3:// ROOT it is given, with its log and lock in this directory.
	crashChildState = "RLREC_CRASH_CHILD_STATE"
	// s3CrashKillsEnv sets the number of kills of TestS3CrashKill (the
	// long form: RELIABILITY.md).
	s3CrashKillsEnv = "RLREC_S3_CRASH_KILLS"
)

// s3PartSize is the part size of the crash test's stores, and the size of
// the pieces a steps file streams while it is written, the least S3
// allows, so that image episodes (layout episode) and packed files
// (layout session) go up in pieces, and kills land among multipart
// uploads too. The crash child's memory budget is one piece and a MiB,
// so that the larger files stream (they go up while written, past the
// budget) and kills land among those uploads as well.
const s3PartSize = store.MinPartSize

// s3ChildStore is the WithStore of the crash child: the store of root
// through the standard AWS chain (the parent passes the server's
// environment), spooling to the state directory.
func s3ChildStore(root, state string) recorder.Option {
	st, err := store.OpenRoot(context.Background(), vfs.OS(), root, store.S3Options{
		PartSize: s3PartSize, StreamPieceSize: s3PartSize, MemoryBytes: s3PartSize + 1<<20, SpoolDir: state, MaxBackoff: 200 * time.Millisecond, MaxAttempts: 50})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child store:", err)
		os.Exit(2)
	}
	return recorder.WithStore(st, state)
}

// TestS3CrashKill is the crash test of a ROOT in a bucket (versitygw):
// a child records into s3://rec/rootN with its log in a local directory
// and is killed with SIGKILL while it uploads; after each kill,
// recovery (Open and Close with the same store and directory) must leave
// every acknowledged event in the tables, verify clean, no object
// replaced (every object's bytes the same as when it was first seen, or
// the object taken back by recovery and never seen again under other
// bytes) and no multipart upload in flight. Every other kill lands as
// soon as a multipart upload is in flight, if one begins. 8 kills here
// (two roots, one of each layout, the session one with images, whose
// packed files go up in pieces);
// RLREC_S3_CRASH_KILLS=n runs n.
func TestS3CrashKill(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		return
	}
	kills := 8
	if v := os.Getenv(s3CrashKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("%s=%q: want a number of kills, at least 2", s3CrashKillsEnv, v)
		}
		kills = n
	}
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, "rec")
	env := srv.Env()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	seed := rng.Uint64()
	t.Logf("seed %d", seed)
	var acked, objects, takenBack, pieces atomic.Int64
	const roots = 2
	perRoot := (kills + roots - 1) / roots
	settled := &logcount.Handler{}
	t.Cleanup(func() {
		t.Logf("%d kills; %d steps acknowledged, all found; %d objects published (%d uploaded in pieces), none replaced; %d taken back by recovery; "+
			"recovery completed %d uploads, aborted %d",
			roots*perRoot, acked.Load(), objects.Load(), pieces.Load(), takenBack.Load(), settled.Count(completedUpload), settled.Count(abortedUpload))
	})
	for r := range roots {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		t.Run(fmt.Sprintf("root%d", r), func(t *testing.T) {
			t.Parallel()
			prefix := fmt.Sprintf("root%d", r)
			root := "s3://rec/" + prefix
			dir := filepath.Join(bucketDir, prefix)
			state := filepath.Join(t.TempDir(), "state")
			layout := hive.LayoutEpisode
			if r%2 == 1 {
				layout = hive.LayoutSession
			}
			// The layout file first, so that the child records in it.
			st := openS3Root(t, srv, root, state)
			rec, err := recorder.Open(root, recorder.WithStore(st, state), recorder.WithLayout(layout))
			if err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			acks := newAckTally()
			seen := map[string][32]byte{}
			for k := range perRoot {
				tag := fmt.Sprintf("r%dk%d", r, k)
				runtime := time.Duration(200+rng.IntN(800)) * time.Millisecond
				if layout == hive.LayoutSession {
					// Past the 2 s batch delay: a packed file of images
					// larger than the part size goes up in pieces.
					runtime = time.Duration(1500+rng.IntN(2500)) * time.Millisecond
				}
				var trigger func() bool
				if k%2 == 1 {
					// Killed while a multipart upload is in flight, when one
					// begins before runtime.
					trigger = func() bool {
						out, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("rec"), Prefix: aws.String(prefix + "/")})
						return err == nil && len(out.Uploads) > 0
					}
				}
				killChildEnv(t, root, tag, true, true, runtime, acks, append([]string{crashChildState + "=" + state}, env...), trigger)
				// No partial object under a final name, before recovery.
				readTables(t, vfs.OS(), dir)
				n, _ := objectsReplaced(t, dir, seen, false, &pieces)

				st := openS3Root(t, srv, root, state)
				rec, err := recorder.Open(root, recorder.WithStore(st, state), fast, recorder.WithLogger(slog.New(settled)))
				if err != nil {
					t.Fatalf("%s: recover: %v", tag, err)
				}
				if err := rec.Close(context.Background()); err != nil {
					t.Fatalf("%s: close: %v", tag, err)
				}
				if ents, err := os.ReadDir(filepath.Join(state, "log")); err != nil || len(ents) != 0 {
					t.Errorf("%s: the log is not empty after recovery: %d entries, %v", tag, len(ents), err)
				}
				n2, gone := objectsReplaced(t, dir, seen, true, &pieces)
				objects.Add(int64(n + n2))
				takenBack.Add(int64(gone))
				tb := readTables(t, vfs.OS(), dir)
				checkAcks(t, tag, tb, acks)
				noUploads(t, srv, "rec", prefix)
				rep, err := verify.Root(context.Background(), dir)
				if err != nil {
					t.Fatalf("%s: verify: %v", tag, err)
				}
				if !rep.OK() {
					t.Errorf("%s: verify after recovery: %+v", tag, rep)
				}
				if k == perRoot-1 {
					for _, ep := range acks.eps {
						acked.Add(ep.steps)
					}
				}
				if t.Failed() {
					t.Fatalf("%s (seed %d): failed", tag, seed)
				}
			}
		})
	}
}

// openS3Root is the store a recovery of root uses.
func openS3Root(t *testing.T, srv *s3server.Server, root, state string) store.Root {
	t.Helper()
	loc, err := store.ParseURL(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{
		Region:       s3server.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(s3server.AccessKey, s3server.SecretKey, ""),
		BaseEndpoint: aws.String(srv.Endpoint()),
	}
	st, err := store.NewS3(context.Background(), cfg, loc, store.S3Options{
		PartSize: s3PartSize, SpoolDir: t.TempDir(), MaxBackoff: 200 * time.Millisecond, MaxAttempts: 50})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// objectsReplaced checks every object file under dir against seen (its
// hash when first seen): an object whose bytes changed was replaced,
// which fails the test. It returns how many objects it saw first, and,
// after a recovery (recovered), how many seen ones are gone (taken back
// by recovery, which is allowed; they are forgotten, and a later object
// of the same name is new).
// Objects over s3PartSize are counted in large.
func objectsReplaced(t *testing.T, dir string, seen map[string][32]byte, recovered bool, large *atomic.Int64) (added, gone int) {
	t.Helper()
	now := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, hive.StateDir) || strings.Contains(rel, ".sgwtmp") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		now[rel] = true
		if old, ok := seen[rel]; !ok {
			seen[rel] = sum
			added++
			if len(b) > s3PartSize {
				large.Add(1)
			}
		} else if old != sum {
			t.Errorf("%s: replaced (%d bytes now)", rel, len(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range seen {
		if !now[rel] {
			if !recovered {
				t.Errorf("%s: gone before recovery", rel)
			}
			delete(seen, rel)
			gone++
		}
	}
	return added, gone
}

// noUploads fails the test if any multipart upload is in flight under
// prefix. versitygw lists uploads by prefix, which covers every key the
// recorder's recovery lists by exact key (the way that works on MinIO
// too) and any key it might have missed.
func noUploads(t *testing.T, srv *s3server.Server, bucket, prefix string) {
	t.Helper()
	ctx := context.Background()
	c := srv.Client()
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	if err != nil {
		t.Fatalf("list uploads: %v", err)
	}
	for _, u := range out.Uploads {
		t.Errorf("upload %s of %s left in flight", aws.ToString(u.UploadId), aws.ToString(u.Key))
	}
}

// The recovery messages TestS3CrashKill counts.
const (
	completedUpload = "completed an upload the crashed recorder had made whole"
	abortedUpload   = "aborted an upload the crashed recorder left in flight"
)
