package hive

import (
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
)

func TestList(t *testing.T) {
	fsys := vfs.NewMem()
	root := filepath.FromSlash("/root")
	a := Recording{SessionID: "local-1", EnvID: "env-a"}
	b := Recording{SessionID: "local-1", EnvID: "env-b"}
	long := Recording{SessionID: strings.Repeat("é", 42), EnvID: "env-c"}
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := fsys.MkdirAll(filepath.Dir(p)); err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("x"))
		f.Close()
	}
	write(EpisodePartition("steps", a, "ep-000002").File(0))
	write(EpisodePartition("steps", a, "ep-000001").File(0))
	write(RecordingPartition("steps", b).File(1)) // layout session
	write(RecordingPartition("episodes", b).File(0))
	write(RecordingPartition("episodes", a).File(0))
	write(RecordingPartition("sessions", long).File(0))
	write(path.Join(RecordingPartition("logs", a).Rel(), TempName(4)))
	write(path.Join(RecordingPartition("logs", a).Rel(), "notes.txt"))
	write(path.Join(RecordingPartition("logs", a).Rel(), ".hidden"))
	write("stray.txt")
	write("_rlrec/log/000001.log")
	write("telemetry/session_id=x/oops.parquet")
	write(path.Join(RecordingPartition("episodes", a).Rel(), "episode_record_id=ep-000001", PartName(0)))

	l, err := List(fsys, root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range l.Files {
		got = append(got, f.Rel)
		if f.Size != 1 {
			t.Errorf("%s: size %d", f.Rel, f.Size)
		}
		if f.Exact != (f.Table != "sessions") {
			t.Errorf("%s: exact %v; only the long session id's file is inexact", f.Rel, f.Exact)
		}
	}
	want := []string{
		RecordingPartition("sessions", long).File(0),
		RecordingPartition("episodes", a).File(0),
		RecordingPartition("episodes", b).File(0),
		EpisodePartition("steps", a, "ep-000001").File(0),
		EpisodePartition("steps", a, "ep-000002").File(0),
		RecordingPartition("steps", b).File(1),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("files:\n got %q\nwant %q", got, want)
	}
	if f := l.Files[0]; f.Exact || f.EnvID != "env-c" {
		t.Fatalf("long session id: exact %v env %q, want a cut value", f.Exact, f.EnvID)
	}
	if f := l.Files[1]; !f.Exact || f.Recording != a || f.Episode {
		t.Fatalf("episodes file: %+v", f)
	}
	if f := l.Files[3]; !f.Episode || f.EpisodeRecordID != "ep-000001" || f.Part != 0 {
		t.Fatalf("steps file: %+v", f)
	}
	strays := map[string]bool{}
	temps := 0
	for _, s := range l.Strays {
		strays[s.Rel] = true
		if s.Temp {
			temps++
		}
	}
	for _, rel := range []string{
		"stray.txt",
		path.Join(RecordingPartition("logs", a).Rel(), "notes.txt"),
		path.Join(RecordingPartition("logs", a).Rel(), TempName(4)),
		"telemetry/session_id=x/oops.parquet",
		path.Join(RecordingPartition("episodes", a).Rel(), "episode_record_id=ep-000001"),
	} {
		if !strays[rel] {
			t.Errorf("%s not reported as a stray; strays: %v", rel, l.Strays)
		}
	}
	if temps != 1 || len(l.Strays) != 5 {
		t.Errorf("strays %v, want 5 with 1 temp", l.Strays)
	}
}

func TestListMissingRoot(t *testing.T) {
	if _, err := List(vfs.NewMem(), "/nope"); err == nil {
		t.Fatal("listing a missing ROOT must fail")
	}
}
