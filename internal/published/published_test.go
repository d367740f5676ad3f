package published

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

const root = "/root"

var rec = hive.Recording{SessionID: "s", EnvID: "e"}

// put writes rows as a file of table, part n of rec's partition (a temp
// file when temp), with last as its rlrec.last_sequence.
func put[T parquetout.Row](t *testing.T, fsys vfs.FS, table string, n int, temp bool, last uint64, rows []T) string {
	t.Helper()
	var b bytes.Buffer
	meta := parquetout.Metadata{SessionID: rec.SessionID, EnvID: rec.EnvID, LastSequence: last}
	if err := parquetout.EncodeTable(&b, table, meta, parquetout.Config{}, rows); err != nil {
		t.Fatal(err)
	}
	dir := hive.RecordingPartition(table, rec).Dir(root)
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	name := hive.PartName(n)
	if temp {
		name = hive.TempName(n)
	}
	path := filepath.Join(dir, name)
	if err := vfs.WriteFile(fsys, path+".w", path, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLastSequence: the highest rlrec.last_sequence of the published
// sessions, logs and telemetry files; files without one, temp files and
// other recordings count for nothing; an unreadable file is an error
// naming it.
func TestLastSequence(t *testing.T) {
	fsys := vfs.NewMem()
	if got, err := LastSequence(store.NewFS(fsys, root), rec); err != nil || got != 0 {
		t.Fatalf("an empty ROOT: %d, %v; want 0", got, err)
	}
	logs := []schema.LogRow{{Time: time.Unix(1, 0).UTC(), Level: "info", Message: "m"}}
	put(t, fsys, schema.TableLogs, 0, false, 7, logs)
	put(t, fsys, schema.TableLogs, 1, false, 0, logs)
	put(t, fsys, schema.TableTelemetry, 0, false, 12, []schema.TelemetryRow{{}})
	put(t, fsys, schema.TableLogs, 2, true, 99, logs) // a temp file: not published
	if got, err := LastSequence(store.NewFS(fsys, root), rec); err != nil || got != 12 {
		t.Fatalf("LastSequence = %d, %v; want 12", got, err)
	}
	if got, err := LastSequence(store.NewFS(fsys, root), hive.Recording{SessionID: "other", EnvID: "e"}); err != nil || got != 0 {
		t.Fatalf("another recording: %d, %v; want 0", got, err)
	}
	bad := filepath.Join(hive.RecordingPartition(schema.TableSessions, rec).Dir(root), hive.PartName(0))
	if err := fsys.MkdirAll(filepath.Dir(bad)); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFile(fsys, bad+".w", bad, []byte("not parquet")); err != nil {
		t.Fatal(err)
	}
	if _, err := LastSequence(store.NewFS(fsys, root), rec); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("over an unreadable file: %v, want an error naming %s", err, bad)
	}
}

// TestEpisodeIDs: the episode record ids of the published episodes files,
// not of temp files.
func TestEpisodeIDs(t *testing.T) {
	fsys := vfs.NewMem()
	put(t, fsys, schema.TableEpisodes, 0, false, 0, []schema.EpisodeRow{{EpisodeRecordID: "a"}, {EpisodeRecordID: "b"}})
	put(t, fsys, schema.TableEpisodes, 1, false, 0, []schema.EpisodeRow{{EpisodeRecordID: "c"}})
	put(t, fsys, schema.TableEpisodes, 2, true, 0, []schema.EpisodeRow{{EpisodeRecordID: "tmp"}})
	got := EpisodeIDs(store.NewFS(fsys, root), rec)
	if len(got) != 3 || !got["a"] || !got["b"] || !got["c"] {
		t.Fatalf("EpisodeIDs = %v, want a, b and c", got)
	}
	if got := EpisodeIDs(store.NewFS(fsys, root), hive.Recording{SessionID: "none", EnvID: "e"}); len(got) != 0 {
		t.Fatalf("a recording without files: %v", got)
	}
}
