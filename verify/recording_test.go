package verify

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// sharedSession is the session id two recordings of sharedRoot share.
const sharedSession = "shared-session"

// concurrentStream runs the sessions concurrently into one stream. Unlike
// sim.RunSessions it lets them share a session id, as runs of one rlmesh
// session on several routes do.
func concurrentStream(t testing.TB, cfgs []sim.Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	hooks := sim.NewStreamHooks(events.NewStreamWriter(&buf))
	var wg sync.WaitGroup
	errs := make([]error, len(cfgs))
	for i := range cfgs {
		wg.Go(func() { _, errs[i] = sim.Run(context.Background(), hooks, cfgs[i]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// recordSessions records the sessions into a new ROOT and returns it.
func recordSessions(t testing.TB, cfgs []sim.Config) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	recordRoot(t, root, concurrentStream(t, cfgs))
	return root
}

// route is a route with the given env id.
func route(env, envID string) events.RuntimeEnvContext {
	return events.RuntimeEnvContext{EnvID: envID, EnvComponentID: "env/" + env, ModelComponentID: "model/" + env + "-policy"}
}

// sharedRoot records two recordings with one session id: two routes, so
// two env ids.
func sharedRoot(t testing.TB) string {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return recordSessions(t, []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 8, Seed: 1, Clock: sim.StepClock(start, time.Millisecond), SessionID: sharedSession, Route: route("cartpole", "cartpole")},
		{Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 6, Seed: 2, Clock: sim.StepClock(start, time.Millisecond), SessionID: sharedSession, Route: route("pick-place", "pick-place")},
	})
}

// verifyRoot runs Root and returns the report and its output.
func verifyRoot(t *testing.T, root string) (*Report, string) {
	t.Helper()
	rep, err := Root(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	return rep, out.String()
}

func list(t *testing.T, root string) *hive.Listing {
	t.Helper()
	l, err := hive.List(vfs.OS(), root)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestVerifySharedSessionID(t *testing.T) {
	root := sharedRoot(t)
	rep, out := verifyRoot(t, root)
	if !rep.OK() {
		t.Fatalf("want no problems, got:\n%s", out)
	}
	envs := map[string]map[string]bool{}
	for _, f := range list(t, root).Files {
		if f.SessionID != sharedSession {
			t.Fatalf("%s: session %q, want %q", f.Rel, f.SessionID, sharedSession)
		}
		if envs[f.Table] == nil {
			envs[f.Table] = map[string]bool{}
		}
		envs[f.Table][f.EnvID] = true
	}
	for _, table := range []string{schema.TableSteps, schema.TableEpisodes, schema.TableSessions} {
		if len(envs[table]) != 2 {
			t.Errorf("%s holds the recordings of env ids %v, want two", table, envs[table])
		}
	}
}

// moveFile moves the file rel (relative to root) to the partition of
// another recording, under the next free part number there.
func moveFile(t *testing.T, root, rel string, to hive.Recording) string {
	t.Helper()
	segs := strings.Split(rel, "/")
	segs[1], segs[2] = hive.Segment(hive.KeySessionID, to.SessionID), hive.Segment(hive.KeyEnvID, to.EnvID)
	dir := filepath.Join(root, filepath.FromSlash(path.Join(segs[:len(segs)-1]...)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		dst := filepath.Join(dir, hive.PartName(n))
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if err := os.Rename(filepath.Join(root, filepath.FromSlash(rel)), dst); err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(must(filepath.Rel(root, dst)))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestVerifyFileInOtherRecording(t *testing.T) {
	base := sharedRoot(t)
	cartpole := hive.Recording{SessionID: sharedSession, EnvID: "cartpole"}
	pickPlace := hive.Recording{SessionID: sharedSession, EnvID: "pick-place"}
	tests := []struct {
		name  string
		table string
		// want lists the checks of the problems, the moved file's
		// first; golden compares the output with testdata.
		want   []Check
		golden bool
	}{
		// The episode's steps_file now names a missing file.
		{name: "steps", table: schema.TableSteps, want: []Check{CheckPartition, CheckEpisode}, golden: true},
		// Its rows stay the cartpole recording's: no totals differ.
		{name: "episodes", table: schema.TableEpisodes, want: []Check{CheckPartition}},
		{name: "sessions", table: schema.TableSessions, want: []Check{CheckPartition}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			roottest.CopyDir(t, base, root)
			var from string
			for _, f := range list(t, root).Files {
				if f.Table == tc.table && f.Recording == cartpole {
					from = f.Rel
					break
				}
			}
			if from == "" {
				t.Fatalf("no %s file of %s", tc.table, cartpole)
			}
			moved := moveFile(t, root, from, pickPlace)
			rep, out := verifyRoot(t, root)
			if len(rep.Problems) != len(tc.want) {
				t.Fatalf("want %d problems (%v), got:\n%s", len(tc.want), tc.want, out)
			}
			got := map[Check]int{}
			for _, p := range rep.Problems {
				got[p.Check]++
				if p.Check == CheckPartition && (p.Path != moved || !strings.Contains(p.Message, `env_id "pick-place"`) || !strings.Contains(p.Message, `"cartpole"`)) {
					t.Errorf("partition problem %+v does not name the moved file %s and both env ids", p, moved)
				}
			}
			for _, c := range tc.want {
				if got[c] == 0 {
					t.Errorf("no %s problem; output:\n%s", c, out)
				}
			}
			if tc.golden {
				golden(t, filepath.Join("testdata", "moved-"+tc.name+".golden"), []byte(out))
			}
		})
	}
}

// longSessionID is a 300-byte session id with bytes that are escaped: its
// partition name is cut and hashed.
func longSessionID() string {
	return strings.Repeat("x", 290) + "/é-é-é!"
}

func TestVerifyLongSessionID(t *testing.T) {
	id := longSessionID()
	if len(id) != 300 {
		t.Fatalf("the id is %d bytes", len(id))
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := recordSessions(t, []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 8, Seed: 1, Clock: sim.StepClock(start, time.Millisecond), SessionID: id, Route: route("cartpole", "cartpole")},
	})
	l := list(t, base)
	if len(l.Files) == 0 {
		t.Fatal("nothing recorded")
	}
	for _, f := range l.Files {
		if f.Exact {
			t.Fatalf("%s: the partition name of a %d-byte id must be cut", f.Rel, len(id))
		}
	}

	t.Run("clean", func(t *testing.T) {
		rep, out := verifyRoot(t, base)
		if !rep.OK() {
			t.Fatalf("want no problems, got:\n%s", out)
		}
		if rep.Files != len(l.Files) || rep.Rows == 0 {
			t.Fatalf("checked %d files, %d rows", rep.Files, rep.Rows)
		}
	})

	// A cut name of another id: every steps file is out of place, and
	// the cross checks still find the steps of every episode.
	t.Run("other-cut-name", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "root")
		roottest.CopyDir(t, base, root)
		old := filepath.Join(root, schema.TableSteps, hive.Segment(hive.KeySessionID, id))
		other := filepath.Join(root, schema.TableSteps, hive.Segment(hive.KeySessionID, id+"z"))
		if err := os.Rename(old, other); err != nil {
			t.Fatal(err)
		}
		rep, out := verifyRoot(t, root)
		var steps int
		for _, f := range l.Files {
			if f.Table == schema.TableSteps {
				steps++
			}
		}
		var partition int
		for _, p := range rep.Problems {
			switch {
			case p.Check == CheckPartition && strings.HasPrefix(p.Path, schema.TableSteps+"/"):
				partition++
			case p.Check == CheckEpisode && strings.Contains(p.Message, "steps_file"):
				// The episodes rows name the steps files where they were.
			default:
				t.Errorf("unexpected problem %+v", p)
			}
		}
		if partition != steps {
			t.Fatalf("want a partition problem for each of the %d steps files, got:\n%s", steps, out)
		}
	})
}
