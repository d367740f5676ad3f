package recswap

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
)

// tree returns the files under dir (its _rlrec left out) and their
// contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, hive.StateDir) {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplace: the recordings' directories are replaced whole, every
// other file stays, and a swap stopped before each of its steps (a crash)
// is completed by Finish to the same result.
func TestReplace(t *testing.T) {
	a := hive.Recording{SessionID: "s-a", EnvID: "e"}
	b := hive.Recording{SessionID: "s-b", EnvID: "e"}
	rel := func(table string, r hive.Recording, name string) string {
		return hive.RecordingPartition(table, r).Rel() + "/" + name
	}
	live := map[string]string{
		rel(schema.TableSteps, a, "episode_record_id=ep-000001/part-00000.parquet"): "old a steps",
		rel(schema.TableEpisodes, a, "part-00000.parquet"):                          "old a episodes",
		rel(schema.TableSessions, a, "part-00000.parquet"):                          "old a crashed",
		rel(schema.TableTelemetry, a, "part-00000.parquet"):                         "old a telemetry, none staged",
		rel(schema.TableSessions, b, "part-00000.parquet"):                          "b stays",
	}
	staged := map[string]string{
		rel(schema.TableSteps, a, "episode_record_id=ep-000001/part-00000.parquet"): "new a steps 1",
		rel(schema.TableSteps, a, "episode_record_id=ep-000002/part-00000.parquet"): "new a steps 2",
		rel(schema.TableEpisodes, a, "part-00000.parquet"):                          "new a episodes",
		rel(schema.TableLogs, a, "part-00000.parquet"):                              "new a logs",
		rel(schema.TableSessions, a, "part-00000.parquet"):                          "new a ended",
	}
	want := map[string]string{rel(schema.TableSessions, b, "part-00000.parquet"): "b stays"}
	for k, v := range staged {
		want[k] = v
	}
	for stop := 0; stop <= 5; stop++ {
		root := t.TempDir()
		write(t, root, live)
		write(t, StageDir(root), staged)
		stopBefore = stop
		err := Replace(root, []hive.Recording{a})
		stopBefore = -1
		if stop < 5 {
			if err != errStopped {
				t.Fatalf("stop before %d: Replace = %v", stop, err)
			}
			if _, err := os.Stat(journalPath(root)); err != nil {
				t.Fatalf("stop before %d: no journal: %v", stop, err)
			}
			found, err := Finish(root)
			if err != nil || !found {
				t.Fatalf("stop before %d: Finish = %t, %v", stop, found, err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if got := tree(t, root); !reflect.DeepEqual(got, want) {
			t.Errorf("stop before %d: ROOT holds\n%v\nwant\n%v", stop, got, want)
		}
		if _, err := os.Stat(filepath.Join(root, hive.StateDir, Dir)); !os.IsNotExist(err) {
			t.Errorf("stop before %d: %s left: %v", stop, Dir, err)
		}
		// Finish again: nothing to do.
		if found, err := Finish(root); found || err != nil {
			t.Errorf("stop before %d: a second Finish = %t, %v", stop, found, err)
		}
	}
}

// TestFinishWithoutJournal: a staging ROOT without a journal (a resume
// killed before it swapped) is removed, and ROOT is left alone.
func TestFinishWithoutJournal(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"sessions/session_id=s/env_id=e/part-00000.parquet": "x"})
	write(t, StageDir(root), map[string]string{"sessions/session_id=s/env_id=e/part-00000.parquet": "y"})
	found, err := Finish(root)
	if found || err != nil {
		t.Fatalf("Finish = %t, %v", found, err)
	}
	if got := tree(t, root); got["sessions/session_id=s/env_id=e/part-00000.parquet"] != "x" || len(got) != 1 {
		t.Errorf("ROOT holds %v", got)
	}
	if _, err := os.Stat(filepath.Join(root, hive.StateDir, Dir)); !os.IsNotExist(err) {
		t.Errorf("the staging ROOT is left: %v", err)
	}
}

func TestParseJournal(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"good", "rlrec-swap 1\n12 steps/session_id=s/env_id=e\n0 sessions/session_id=s/env_id=e\n", true},
		{"empty plan", "rlrec-swap 1\n", true},
		{"another version", "rlrec-swap 2\n", false},
		{"cut", "rlrec-swap 1\n12 steps/session_id=s/env_id=e", false},
		{"outside the tables", "rlrec-swap 1\n1 _rlrec/log\n", false},
		{"a parent", "rlrec-swap 1\n1 steps/session_id=s/env_id=e/../../x\n", false},
		{"no inode", "rlrec-swap 1\nsteps/session_id=s/env_id=e\n", false},
		{"an unknown table", "rlrec-swap 1\n1 other/session_id=s/env_id=e\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseJournal([]byte(c.in))
			if (err == nil) != c.ok {
				t.Errorf("parseJournal = %v, want ok %t", err, c.ok)
			}
		})
	}
}

func FuzzParseJournal(f *testing.F) {
	f.Add([]byte("rlrec-swap 1\n12 steps/session_id=s/env_id=e\n"))
	f.Add([]byte("rlrec-swap 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		plan, err := parseJournal(b)
		if err != nil {
			return
		}
		for _, e := range plan {
			if !recordingDir(e.rel) {
				t.Fatalf("took %q", e.rel)
			}
		}
	})
}
