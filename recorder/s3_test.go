package recorder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/filetree"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logcount"
	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
	"github.com/rlrec/rlrec/verify"
)

// s3Bucket is the bucket of the recorder's object storage tests.
const s3Bucket = "rec"

// newS3Store returns a store of s3://rec/prefix on srv, as a separate
// process would have it (its own spool directory).
func newS3Store(t testing.TB, srv *s3server.Server, prefix string) *store.S3 {
	t.Helper()
	return newS3StoreSized(t, srv, prefix, 0)
}

// newS3StoreSized is newS3Store with a part size (0: the default).
func newS3StoreSized(t testing.TB, srv *s3server.Server, prefix string, partSize int64) *store.S3 {
	t.Helper()
	cfg := aws.Config{
		Region:       s3server.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(s3server.AccessKey, s3server.SecretKey, ""),
		BaseEndpoint: aws.String(srv.Endpoint()),
	}
	st, err := store.NewS3(context.Background(), cfg, store.Location{Bucket: s3Bucket, Prefix: prefix},
		store.S3Options{PartSize: partSize, SpoolDir: t.TempDir(), MaxBackoff: 200 * time.Millisecond, MaxAttempts: 50})
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
	out, err := filetree.Read(dir, skip)
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

			want := tree(t, local, filetree.State)
			got := tree(t, filepath.Join(bucketDir, filepath.FromSlash(prefix)), nil)
			layoutRel := hive.StateDir + "/" + hive.LayoutName
			if !bytes.Equal(got[layoutRel], hive.LayoutFile(layout)) {
				t.Errorf("the bucket's %s holds %q, want %q", layoutRel, got[layoutRel], hive.LayoutFile(layout))
			}
			delete(got, layoutRel)
			// Each recording's claim holds the state directory's writer id.
			id, err := os.ReadFile(filepath.Join(state, store.WriterIDName))
			if err != nil {
				t.Fatal(err)
			}
			claims := 0
			for rel, b := range got {
				if strings.HasPrefix(rel, hive.StateDir+"/claims/") {
					claims++
					if !bytes.Equal(b, id) {
						t.Errorf("%s holds %q, want the writer id %q", rel, b, id)
					}
					delete(got, rel)
				}
			}
			if claims != len(s3Sessions) {
				t.Errorf("%d claims in the bucket, want one per recording (%d)", claims, len(s3Sessions))
			}
			// A sessions file in the bucket counts its recording's
			// requests (TestS3StoreRequests); but for that key it is
			// the directory's.
			for rel, b := range got {
				if strings.HasPrefix(rel, schema.TableSessions+"/") {
					if _, ok := sessionsFileMeta(t, rel, b); !ok {
						t.Errorf("%s: no %s in the bucket's sessions file", rel, schema.MetaStoreRequests)
					}
				}
			}
			got, want = canonicalSessions(t, got), canonicalSessions(t, want)
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

// sessionsFileMeta returns a sessions file's key-value metadata but
// rlrec.store_requests, and whether it has that key.
func sessionsFileMeta(t *testing.T, rel string, b []byte) (map[string]string, bool) {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	kv := map[string]string{}
	has := false
	for _, e := range pf.Metadata().KeyValueMetadata {
		if e.Key == schema.MetaStoreRequests {
			has = true
			continue
		}
		kv[e.Key] = e.Value
	}
	return kv, has
}

// canonicalSessions returns the files m with each sessions file's bytes
// replaced by its key-value metadata but rlrec.store_requests and its
// rows, as text: the same for a sessions file written into a bucket,
// which counts its recording's requests, as for one written into a
// directory.
func canonicalSessions(t *testing.T, m map[string][]byte) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte, len(m))
	for rel, b := range m {
		if strings.HasPrefix(rel, schema.TableSessions+"/") {
			kv, _ := sessionsFileMeta(t, rel, b)
			b = fmt.Appendf(nil, "%v\n%q", kv, fileRows(t, rel, b))
		}
		out[rel] = b
	}
	return out
}

// fileRows returns the rows of a Parquet file, as text, in file order.
func fileRows(t *testing.T, rel string, b []byte) []string {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	var out []string
	for {
		row := make([]parquet.Row, 1)
		n, err := r.ReadRows(row)
		if n == 1 {
			out = append(out, fmt.Sprint(row[0]))
		}
		if err != nil {
			return out
		}
	}
}

// storeRequestsOf returns the rlrec.store_requests of a sessions file,
// and whether it has one.
func storeRequestsOf(t *testing.T, file string) (store.Requests, bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	v, ok := pf.Lookup(schema.MetaStoreRequests)
	if !ok {
		return store.Requests{}, false
	}
	var r store.Requests
	if err := r.UnmarshalJSON([]byte(v)); err != nil {
		t.Fatalf("%s: %s: %v", file, schema.MetaStoreRequests, err)
	}
	return r, true
}

// TestS3StoreRequests records sessions into a bucket, in both layouts,
// and reads each recording's sessions file: its rlrec.store_requests is
// what the store counted for the recording (RequestsOf) but the puts of
// its final write, its logs, telemetry and sessions files, exactly (the
// recorder publishes the recording's earlier files before it counts).
// On a server that does not fail, each of a recording's requests is its
// claim's put, a listing, or the one put of one of its table files. The
// recordings' counts and the store's own add up to the store's total; a
// directory ROOT's sessions files count nothing.
func TestS3StoreRequests(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, s3Bucket)
	for _, layout := range []hive.Layout{hive.LayoutEpisode, hive.LayoutSession} {
		t.Run(string(layout), func(t *testing.T) {
			prefix := "requests/" + string(layout)
			st := newS3Store(t, srv, prefix)
			r := recordSim(t, "s3://"+s3Bucket+"/"+prefix, s3Sessions, WithLayout(layout), WithStore(st, filepath.Join(t.TempDir(), "state")))
			if err := r.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(bucketDir, filepath.FromSlash(prefix))
			files := map[hive.Recording]int64{}
			var sessions []string
			for rel := range tree(t, root, filetree.State) {
				_, rec, ok := hive.RecordingOf(rel)
				if !ok {
					t.Fatalf("%s: no recording's", rel)
				}
				files[rec]++
				if strings.HasPrefix(rel, schema.TableSessions+"/") {
					sessions = append(sessions, rel)
				}
			}
			if len(sessions) != len(s3Sessions) {
				t.Errorf("%d sessions files, want %d", len(sessions), len(s3Sessions))
			}
			sum := st.OwnRequests()
			for _, rel := range sessions {
				_, rec, _ := hive.RecordingOf(rel)
				got, ok := storeRequestsOf(t, filepath.Join(root, filepath.FromSlash(rel)))
				if !ok {
					t.Errorf("%s: no %s", rel, schema.MetaStoreRequests)
					continue
				}
				all := st.RequestsOf(rec)
				sum = sum.Add(all)
				n := files[rec]
				if all.Ops[store.OpPut] != n+1 || all.Total() != n+1+all.Ops[store.OpList] || all.Attempts != all.Total() {
					t.Errorf("%s: the store counted %+v, want a put for its claim and for each of its %d files, listings, and no retry", rec, all, n)
				}
				var final store.Requests
				final.Ops[store.OpPut], final.Attempts = 3, 3
				if gap := all.Sub(got); gap != final {
					t.Errorf("%s: %s %+v, the store counted %+v: a gap of %+v, want the puts of the logs, telemetry and sessions files %+v",
						rel, schema.MetaStoreRequests, got, all, gap, final)
				}
				t.Logf("%s: %s %s, %d requests in all", rec, schema.MetaStoreRequests, mustJSON(t, got), all.Total())
			}
			if all := st.Requests(); sum != all {
				t.Errorf("the recordings' and the store's own requests add up to %+v, the store sent %+v", sum, all)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		local := filepath.Join(t.TempDir(), "root")
		r := recordSim(t, local, s3Sessions)
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for rel := range tree(t, local, func(rel string) bool { return !strings.HasPrefix(rel, schema.TableSessions+"/") }) {
			if got, ok := storeRequestsOf(t, filepath.Join(local, filepath.FromSlash(rel))); ok {
				t.Errorf("%s: %s %+v in a directory ROOT", rel, schema.MetaStoreRequests, got)
			}
		}
	})
}

func mustJSON(t *testing.T, r store.Requests) string {
	t.Helper()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failingStore is an S3 store whose Sync or Publish fails, after the real
// Sync in the first case, so that the recorder keeps its log with uploads
// in flight, as a crash would leave them.
type failingStore struct {
	*store.S3
	failSync bool
	// failPublish, when set, fails the publishing of the parts it
	// reports; the others are published.
	failPublish func(p store.Part) bool
}

var errInjected = errors.New("injected failure")

func (f *failingStore) Sync(parts []store.Part) error {
	if err := f.S3.Sync(parts); err != nil || !f.failSync {
		return err
	}
	return errInjected
}

func (f *failingStore) Publish(parts []store.Part) error {
	if f.failPublish == nil {
		return f.S3.Publish(parts)
	}
	ge := &store.GroupError{}
	var rest []store.Part
	for _, p := range parts {
		if !f.failPublish(p) {
			rest = append(rest, p)
			continue
		}
		ge.Parts = append(ge.Parts, &store.PartError{Part: p, Path: p.Name(), Err: errInjected})
	}
	if err := f.S3.Publish(rest); err != nil {
		return err
	}
	if len(ge.Parts) == 0 {
		return nil
	}
	return ge
}

// TestS3RecoverUploads: recovery completes the multipart upload a marker
// records (a publish that failed after the marker, as a crash would
// leave it), takes back the small parts of that group and writes them
// again, and aborts an upload that only an upload-begun record names (a
// sync that failed before the marker). The bucket then holds what a
// directory recorded from the same sessions holds, byte for byte, with no
// upload in flight.
func TestS3RecoverUploads(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, s3Bucket)
	// Image episodes packed into one steps file of more than the least
	// part size: it goes up in pieces.
	sessions := []sim.Config{{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 24, TimeLimit: 25, Seed: 3, SessionID: "s3-images"}}
	opts := []Option{WithLayout(hive.LayoutSession), WithCompression(CompressionNone)}
	local := filepath.Join(t.TempDir(), "root")
	r := recordSim(t, local, sessions, opts...)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := tree(t, local, filetree.State)
	big := 0
	for _, b := range want {
		if len(b) > store.MinPartSize {
			big++
		}
	}
	if big == 0 {
		t.Fatalf("no file over %d bytes: nothing would go up in pieces", store.MinPartSize)
	}
	all := func(store.Part) bool { return true }
	table := func(name string) func(store.Part) bool {
		return func(p store.Part) bool { return strings.HasPrefix(p.Rel(), name+"/") }
	}
	for _, tc := range []struct {
		name                          string
		failSync                      bool
		failPublish                   func(store.Part) bool
		completed, aborted, takenBack int
	}{
		// The small parts published, the large ones' uploads left in
		// flight: completed.
		{name: "publish-large-fails", failPublish: table("steps"), completed: big},
		// Nothing published: the group's writes are done again, their
		// uploads aborted.
		{name: "publish-fails", failPublish: all, aborted: big},
		// The session write half published (its logs and telemetry
		// files, not its sessions file): taken back and done again.
		{name: "publish-sessions-fails", failPublish: table("sessions"), takenBack: 2},
		// The uploads made, no marker: aborted by the upload-begun
		// record.
		{name: "sync-fails", failSync: true, aborted: big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := tc.name
			root := "s3://" + s3Bucket + "/" + prefix
			state := filepath.Join(t.TempDir(), "state")
			st := &failingStore{S3: newS3StoreSized(t, srv, prefix, store.MinPartSize), failSync: tc.failSync, failPublish: tc.failPublish}
			r := recordSim(t, root, sessions, append(opts, WithStore(st, state))...)
			if err := r.Close(context.Background()); !errors.Is(err, errInjected) {
				t.Fatalf("close: %v, want the injected failure", err)
			}
			if ents, _ := os.ReadDir(filepath.Join(state, logDir)); len(ents) == 0 {
				t.Fatal("the log was not kept")
			}
			if n := uploadsInFlight(t, srv, prefix); n != tc.completed+tc.aborted {
				t.Fatalf("%d uploads in flight after the failure, want %d", n, tc.completed+tc.aborted)
			}

			logs := &logcount.Handler{}
			st2 := newS3StoreSized(t, srv, prefix, store.MinPartSize)
			r, err := Open(root, WithStore(st2, state), WithLogger(slog.New(logs)), WithWriters(1))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := logs.Count("completed an upload the crashed recorder had made whole"); got != tc.completed {
				t.Errorf("%d uploads completed, want %d", got, tc.completed)
			}
			if got := logs.Count("aborted an upload the crashed recorder left in flight"); got != tc.aborted {
				t.Errorf("%d uploads aborted, want %d", got, tc.aborted)
			}
			if got := logs.Count("took back a file of a write a crash left half published; the write is done again whole"); got != tc.takenBack {
				t.Errorf("%d files taken back, want %d", got, tc.takenBack)
			}
			if n := uploadsInFlight(t, srv, prefix); n != 0 {
				t.Errorf("%d uploads in flight after recovery", n)
			}
			got := tree(t, filepath.Join(bucketDir, prefix), filetree.State)
			sameRows(t, want, got)
		})
	}
}

// sameRows checks that two ROOTs' files hold the same rows, partition
// by partition (as multisets: recovery may number and group parts
// otherwise than the recorder that crashed).
func sameRows(t *testing.T, want, got map[string][]byte) {
	t.Helper()
	byDir := func(m map[string][]byte) map[string][]string {
		out := map[string][]string{}
		for rel, b := range m {
			dir := path.Dir(rel)
			out[dir] = append(out[dir], fileRows(t, rel, b)...)
		}
		for _, v := range out {
			slices.Sort(v)
		}
		return out
	}
	w, g := byDir(want), byDir(got)
	for dir, rows := range w {
		if !slices.Equal(rows, g[dir]) {
			t.Errorf("%s: %d rows, want %d, or they differ", dir, len(g[dir]), len(rows))
			for i := range min(len(rows), len(g[dir])) {
				if rows[i] != g[dir][i] {
					t.Logf("first difference:\n got %.600s\nwant %.600s", g[dir][i], rows[i])
					break
				}
			}
		}
	}
	for dir := range g {
		if _, ok := w[dir]; !ok {
			t.Errorf("%s: in the bucket only", dir)
		}
	}
}

// uploadsInFlight counts the multipart uploads in flight under prefix.
func uploadsInFlight(t *testing.T, srv *s3server.Server, prefix string) int {
	t.Helper()
	out, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(s3Bucket), Prefix: aws.String(prefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// TestS3ManyWriters: recorders with their own stores and state
// directories, as on different machines, record into one bucket prefix.
// Different recordings at once: both are there, whole, and verify is
// clean. The same recording (same session and env ids, other content),
// one after the other: the second is refused at its SessionStarted. The
// same recording at once: at least one writer gets an error, and every
// object holds the bytes one of the two would have written, never a
// replaced one.
func TestS3ManyWriters(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, s3Bucket)
	ctx := context.Background()
	cfg := func(sid string, seed uint64) []sim.Config {
		// The env id is given, so that two seeds record one recording
		// (the same ids) with other content.
		return []sim.Config{{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 30, TimeLimit: 20, Seed: seed, SessionID: sid,
			Route: events.RuntimeEnvContext{EnvID: "env-" + sid, EnvComponentID: "env/cartpole", ModelComponentID: "model/cartpole-policy"}}}
	}
	open := func(prefix string) (Option, string) {
		state := filepath.Join(t.TempDir(), "state")
		return WithStore(newS3Store(t, srv, prefix), state), state
	}
	// recordAsync records cfgs into prefix through a store of its own
	// and returns the Close error on the channel.
	recordAsync := func(prefix string, cfgs []sim.Config) <-chan error {
		done := make(chan error, 1)
		opt, _ := open(prefix)
		go func() {
			r, err := Open("s3://"+s3Bucket+"/"+prefix, opt, WithEpisodeBatchDelay(time.Hour), WithClock(sim.StepClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)))
			if err != nil {
				done <- err
				return
			}
			var runErr error
			for _, c := range cfgs {
				c.Clock = sim.StepClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)
				if _, err := sim.Run(ctx, r, c); err != nil && runErr == nil {
					runErr = err
				}
			}
			done <- errors.Join(runErr, r.Close(ctx))
		}()
		return done
	}

	t.Run("different-recordings", func(t *testing.T) {
		a, b := recordAsync("shared", cfg("writer-a", 1)), recordAsync("shared", cfg("writer-b", 2))
		if err := errors.Join(<-a, <-b); err != nil {
			t.Fatal(err)
		}
		rep, err := verify.Root(ctx, filepath.Join(bucketDir, "shared"))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Errorf("verify: %+v", rep.Problems)
		}
		for _, sid := range []string{"writer-a", "writer-b"} {
			if _, err := os.Stat(filepath.Join(bucketDir, "shared", "sessions", "session_id="+sid)); err != nil {
				t.Errorf("recording %s missing: %v", sid, err)
			}
		}
	})

	t.Run("same-recording-later", func(t *testing.T) {
		if err := <-recordAsync("later", cfg("same", 1)); err != nil {
			t.Fatal(err)
		}
		before := tree(t, filepath.Join(bucketDir, "later"), nil)
		err := <-recordAsync("later", cfg("same", 2))
		if !errors.Is(err, ErrRecordingExists) {
			t.Errorf("the second writer's error is %v, want ErrRecordingExists", err)
		}
		if after := tree(t, filepath.Join(bucketDir, "later"), nil); !reflect.DeepEqual(after, before) {
			t.Errorf("the second writer changed the bucket")
		}
	})

	t.Run("same-recording-at-once", func(t *testing.T) {
		// What each writer alone writes.
		want := map[uint64]map[string][]byte{}
		for _, seed := range []uint64{1, 2} {
			dir := filepath.Join(t.TempDir(), "root")
			r, err := Open(dir, WithEpisodeBatchDelay(time.Hour), WithClock(sim.StepClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)))
			if err != nil {
				t.Fatal(err)
			}
			c := cfg("race", seed)[0]
			c.Clock = sim.StepClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)
			if _, err := sim.Run(ctx, r, c); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(ctx); err != nil {
				t.Fatal(err)
			}
			want[seed] = canonicalSessions(t, tree(t, dir, filetree.State))
		}
		a, b := recordAsync("race", cfg("race", 1)), recordAsync("race", cfg("race", 2))
		errA, errB := <-a, <-b
		t.Logf("writer a: %v; writer b: %v", errA, errB)
		if errA == nil && errB == nil {
			t.Fatal("two writers of one recording both succeeded")
		}
		for _, err := range []error{errA, errB} {
			if err != nil && !errors.Is(err, store.ErrExists) && !errors.Is(err, ErrRecordingExists) {
				t.Errorf("a writer's error is %v, want a name taken or the recording refused", err)
			}
		}
		// The loser is refused at SessionStarted, by the winner's claim,
		// before any file of its own is published: the bucket holds the
		// winner's recording alone, not files of both.
		got := canonicalSessions(t, tree(t, filepath.Join(bucketDir, "race"), filetree.State))
		if !reflect.DeepEqual(got, want[1]) && !reflect.DeepEqual(got, want[2]) {
			for rel, b := range got {
				if !bytes.Equal(b, want[1][rel]) && !bytes.Equal(b, want[2][rel]) {
					t.Errorf("%s holds bytes neither writer alone writes", rel)
				}
			}
			t.Errorf("the bucket holds files of both writers (%d files), not one writer's recording", len(got))
		}
	})
}

// TestS3ServerRestart: the server is stopped for a while and started
// again (on the same directory) while a recorder writes into it; the
// store's retries wait it out and nothing is lost: the bucket then holds
// the rows a directory recorded from the same sessions holds.
func TestS3ServerRestart(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, s3Bucket)
	sessions := []sim.Config{{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1000, TimeLimit: 20, Seed: 5, SessionID: "s3-restart"}}
	local := filepath.Join(t.TempDir(), "root")
	r := recordSim(t, local, sessions, WithEpisodeBatchDelay(20*time.Millisecond))
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := tree(t, local, filetree.State)

	st := newS3Store(t, srv, "restart")
	// The server is stopped once the recording has made some requests
	// (so it is mid-recording, however slow the machine), kept down until
	// a request has failed against it and been retried (or 5 s), then
	// started again: timing the stop by the clock let a loaded machine
	// stop it before the first request and restart it before the next.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		deadline := time.Now().Add(2 * time.Minute)
		for st.Requests().Total() < 10 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
		down := time.Now().Add(5 * time.Second)
		for time.Now().Before(down) {
			if req := st.Requests(); req.Attempts > req.Total() {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		if err := srv.Restart(); err != nil {
			t.Error(err)
		}
	}()
	r = recordSim(t, "s3://"+s3Bucket+"/restart", sessions, WithEpisodeBatchDelay(20*time.Millisecond), WithStore(st, filepath.Join(t.TempDir(), "state")))
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-stopped
	req := st.Requests()
	t.Logf("%d requests, %d HTTP attempts (retries while the server was down)", req.Total(), req.Attempts)
	if req.Attempts <= req.Total() {
		t.Errorf("no request was retried: the server was not stopped while the recorder wrote")
	}
	got := tree(t, filepath.Join(bucketDir, "restart"), filetree.State)
	sameRows(t, want, got)
}

// TestS3RequestsPerEpisode counts the requests of layout episode: at
// most 2 per episode, and none that grows with the episodes but the
// steps files' puts and the batches' episodes files (no listing per
// episode: a new partition's part 0 needs none).
func TestS3RequestsPerEpisode(t *testing.T) {
	srv := s3server.Start(t)
	bucketDir := srv.Bucket(t, s3Bucket)
	count := func(episodes int64) store.Requests {
		prefix := fmt.Sprint("count", episodes)
		st := newS3Store(t, srv, prefix)
		sessions := []sim.Config{{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: episodes, TimeLimit: 20, Seed: 7, SessionID: prefix}}
		r := recordSim(t, "s3://"+s3Bucket+"/"+prefix, sessions, WithStore(st, filepath.Join(t.TempDir(), "state")))
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		// What inspect shows: the sessions file's count, which the
		// puts of its final write are not in.
		files := tree(t, filepath.Join(bucketDir, prefix, schema.TableSessions), nil)
		for rel := range files {
			if got, ok := storeRequestsOf(t, filepath.Join(bucketDir, prefix, schema.TableSessions, filepath.FromSlash(rel))); ok {
				t.Logf("%d episodes: the sessions file counts %d requests, %.3f per episode (%s)", episodes, got.Total(), float64(got.Total())/float64(episodes), mustJSON(t, got))
			}
		}
		return st.Requests()
	}
	small, large := count(100), count(400)
	for _, c := range []struct {
		name     string
		episodes int64
		req      store.Requests
	}{{"100 episodes", 100, small}, {"400 episodes", 400, large}} {
		per := float64(c.req.Total()) / float64(c.episodes)
		t.Logf("%s: %d requests, %.3f per episode (%d puts, %d lists)", c.name, c.req.Total(), per, c.req.Ops[store.OpPut], c.req.Ops[store.OpList])
		if per > 2 {
			t.Errorf("%s: %.3f requests per episode, want at most 2", c.name, per)
		}
	}
	if small.Ops[store.OpList] != large.Ops[store.OpList] {
		t.Errorf("listings grow with the episodes: %d for 100, %d for 400", small.Ops[store.OpList], large.Ops[store.OpList])
	}
	// An episode beyond a recording's fixed requests costs its steps
	// file's put (its row shares the batch's episodes file).
	if d := float64(large.Total()-small.Total()) / 300; d > 1.05 {
		t.Errorf("%.3f requests per added episode, want 1 (its steps file)", d)
	}
}
