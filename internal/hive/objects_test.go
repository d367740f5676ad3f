package hive

import (
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
)

// TestListObjects lists one tree both ways, as directories (List) and as
// the flat keys an object store returns (ListObjects): the same files
// and the same strays.
func TestListObjects(t *testing.T) {
	fsys := vfs.NewMem()
	root := filepath.FromSlash("/root")
	a := Recording{SessionID: "local-1", EnvID: "env-a"}
	b := Recording{SessionID: "a/b%c", EnvID: "env-b"}
	long := Recording{SessionID: strings.Repeat("é", 42), EnvID: "env-c"}
	var objs []Object
	write := func(rel string, size int) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := fsys.MkdirAll(filepath.Dir(p)); err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(make([]byte, size))
		f.Close()
		objs = append(objs, Object{Rel: rel, Size: int64(size)})
	}
	for i, rel := range []string{
		EpisodePartition("steps", a, "ep-000002").File(0),
		EpisodePartition("steps", a, "ep-000001").File(0),
		EpisodePartition("steps", a, "ep-000001").File(3),
		RecordingPartition("steps", b).File(1),
		RecordingPartition("episodes", b).File(0),
		RecordingPartition("episodes", a).File(0),
		RecordingPartition("sessions", long).File(0),
		path.Join(RecordingPartition("logs", a).Rel(), TempName(4)),
		path.Join(RecordingPartition("logs", a).Rel(), "notes.tmp"),
		path.Join(RecordingPartition("logs", a).Rel(), "notes.txt"),
		path.Join(RecordingPartition("logs", a).Rel(), ".hidden"),
		path.Join(RecordingPartition("logs", a).Rel(), ".dir", "x"),
		"stray.txt",
		"_rlrec/log/000001.log",
		".hidden/x",
		"telemetry/session_id=x/oops.parquet",
		"telemetry/what=x/env_id=y/part-00000.parquet",
		"telemetry/what=x/env_id=z/part-00000.parquet",
		"telemetry/session_id=x/env_id=y/deep/part-00000.parquet",
		"telemetry/session_id=x/env_id=y/deep/part-00001.parquet",
		"steps/session_id=x/env_id=y/bad=1/part-00000.parquet",
		"steps/session_id=x/env_id=y/episode_record_id=e/deep/part-00000.parquet",
		path.Join(RecordingPartition("episodes", a).Rel(), "episode_record_id=ep-000001", PartName(0)),
	} {
		write(rel, i+1)
	}
	if err := fsys.MkdirAll(filepath.Join(root, "telemetry", "session_id=empty")); err != nil { // no keys
		t.Fatal(err)
	}
	want, err := List(fsys, root)
	if err != nil {
		t.Fatal(err)
	}
	// The order of a bucket's listing is the keys' byte order.
	sort.Slice(objs, func(i, j int) bool { return objs[i].Rel < objs[j].Rel })
	objs = append(objs, Object{Rel: "steps/"}, Object{Rel: ""})
	got := ListObjects(objs)
	if !reflect.DeepEqual(got.Files, want.Files) {
		t.Errorf("files:\n got %+v\nwant %+v", got.Files, want.Files)
	}
	strays := func(l *Listing) []string {
		var out []string
		for _, s := range l.Strays {
			out = append(out, s.Rel+": "+s.Reason+map[bool]string{true: " (temp)"}[s.Temp]+map[bool]string{true: " (err)"}[s.Err != nil])
		}
		sort.Strings(out)
		return out
	}
	if g, w := strays(got), strays(want); !reflect.DeepEqual(g, w) {
		t.Errorf("strays:\n got %q\nwant %q", g, w)
	}
	if len(want.Files) != 7 || len(want.Strays) != 10 {
		t.Fatalf("the tree lists as %d files and %d strays: the test no longer covers what it should", len(want.Files), len(want.Strays))
	}
}
