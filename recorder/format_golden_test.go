package recorder

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

var updateFormat = flag.Bool("update", false, "rewrite the golden log records under testdata/logrec (only when the format changes on purpose)")

// goldenFormat reads testdata/logrec/name, or writes b there under
// -update.
func goldenFormat(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", "logrec", name)
	if *updateFormat {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	return want
}

var goldenInvalidAt = time.Unix(1700000000, 123456789).UTC()

// TestGoldenRecords: the markers, seals and invalid-event records written
// by every earlier version (testdata/logrec, written by the code of the
// time) parse to what was written, and the same values encode to the
// same bytes.
func TestGoldenRecords(t *testing.T) {
	rec := hive.Recording{SessionID: "s/1 ü", EnvID: "env-0"}
	files := []string{"steps/a.parquet", "episodes/b.parquet"}
	inv := &invalidEvent{sessionID: "s/1 ü", route: events.RuntimeEnvContext{EnvID: "env-0", ModelComponentID: "model"},
		kind: events.KindActionReceived, detail: "action: no slab"}
	for _, tc := range []struct {
		name  string
		enc   []byte
		check func(t *testing.T, b []byte)
	}{
		{"episode-done.bin", appendEpisodeMarker(nil, rec, "ep-000007", files), func(t *testing.T, b []byte) {
			checkMarker(t, b, recEpisodeDone, marker{rec: rec, record: "ep-000007", files: files})
		}},
		{"session-done.bin", appendSessionMarker(nil, recSessionDone, rec, 3, files), func(t *testing.T, b []byte) {
			checkMarker(t, b, recSessionDone, marker{rec: rec, write: 3, files: files})
		}},
		{"session-write.bin", appendSessionMarker(nil, recSessionWrite, hive.Recording{SessionID: "", EnvID: "e"}, 1, nil), func(t *testing.T, b []byte) {
			checkMarker(t, b, recSessionWrite, marker{rec: hive.Recording{EnvID: "e"}, write: 1})
		}},
		{"sealed.bin", appendSealed(nil, 1<<40+5), func(t *testing.T, b []byte) {
			if b[0] != recSealed {
				t.Fatalf("type %d", b[0])
			}
			if asOf, err := parseSealed(b[1:]); err != nil || asOf != 1<<40+5 {
				t.Fatalf("seal as of %d, %v", asOf, err)
			}
		}},
		{"invalid.bin", appendInvalid(nil, inv, goldenInvalidAt), func(t *testing.T, b []byte) {
			checkInvalid(t, b, inv, goldenInvalidAt)
		}},
		{"invalid-bare.bin", appendInvalid(nil, &invalidEvent{}, time.Time{}), func(t *testing.T, b []byte) {
			checkInvalid(t, b, &invalidEvent{}, time.Time{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := goldenFormat(t, tc.name, tc.enc)
			if !bytes.Equal(tc.enc, want) {
				t.Errorf("encoded % x\nwant    % x", tc.enc, want)
			}
			tc.check(t, want)
		})
	}
}

func checkMarker(t *testing.T, b []byte, typ byte, want marker) {
	t.Helper()
	if b[0] != typ {
		t.Fatalf("type %d, want %d", b[0], typ)
	}
	got, err := parseMarker(b[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("marker %+v, want %+v", got, want)
	}
}

func checkInvalid(t *testing.T, b []byte, want *invalidEvent, at time.Time) {
	t.Helper()
	if b[0] != recInvalid {
		t.Fatalf("type %d", b[0])
	}
	got, gotAt, err := parseInvalid(b[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !gotAt.Equal(at) {
		t.Errorf("invalid event %+v at %v, want %+v at %v", got, gotAt, want, at)
	}
}

// TestGoldenJournal: a recovery journal written by every earlier version
// reads back to its markers.
func TestGoldenJournal(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, hive.StateDir), 0o755); err != nil {
		t.Fatal(err)
	}
	markers := [][]byte{
		appendEpisodeMarker(nil, hive.Recording{SessionID: "s", EnvID: "e"}, "ep-000001", []string{"x.parquet"}),
		appendSessionMarker(nil, recSessionDone, hive.Recording{SessionID: "s", EnvID: "e"}, 1, []string{"y.parquet", "z.parquet"}),
	}
	fsys := vfs.OS()
	if err := writeJournal(fsys, root, markers); err != nil {
		t.Fatal(err)
	}
	enc, err := os.ReadFile(journalPath(root))
	if err != nil {
		t.Fatal(err)
	}
	want := goldenFormat(t, "journal.bin", enc)
	if !bytes.Equal(enc, want) {
		t.Errorf("journal % x\nwant    % x", enc, want)
	}
	if err := os.WriteFile(journalPath(root), want, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readJournal(fsys, root)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, markers) {
		t.Errorf("journal markers %q, want %q", got, markers)
	}
}

// goldenSnapshotState is the assembly state the golden snapshots hold:
// snapshotScript's session with a route and a sequence number, and a
// second session that only started. With external, its first episode is
// left to the log (as if it had streamed a row).
func goldenSnapshotState(external bool) *assembler {
	a := newAssembler(&capture{}, 1<<20)
	at := time.Unix(1700000000, 0).UTC()
	s := snapshotScript()
	for i, ev := range s.evs {
		a.apply(ev, at.Add(time.Duration(i)*time.Millisecond), uint64(i+1))
	}
	other := &events.SessionStarted{SessionID: "s2", EnvID: "env-b", Route: events.RuntimeEnvContext{EnvID: "env-b", EnvComponentID: "envc", ModelComponentID: "m"}}
	a.apply(other, at.Add(time.Second), uint64(len(s.evs)+1))
	for _, ss := range a.sessions {
		if ss.id == "s2" {
			ss.seq = 1 << 33
		}
	}
	if external {
		a.sessions[hive.Recording{SessionID: s.sid}].episodes["ep-000001"].flushedRows = 1
	}
	return a
}

// TestGoldenSnapshots: snapshots written by every earlier version
// (testdata/logrec/snapshot-*.bin) decode to the state they were taken of.
func TestGoldenSnapshots(t *testing.T) {
	const asOf = 1234
	for _, tc := range []struct {
		name     string
		external bool
	}{{"snapshot-inline.bin", false}, {"snapshot-external.bin", true}} {
		t.Run(tc.name, func(t *testing.T) {
			a := goldenSnapshotState(tc.external)
			if _, ok := a.snapshotable(); !ok {
				t.Fatal("golden state is not snapshotable")
			}
			enc, err := a.appendSnapshot(nil, asOf)
			if err != nil {
				t.Fatal(err)
			}
			b := goldenFormat(t, tc.name, enc)
			if b[0] != recSnapshot {
				t.Fatalf("type %d", b[0])
			}
			gotAsOf, got, err := parseSnapshot(b[1:])
			if err != nil {
				t.Fatal(err)
			}
			if gotAsOf != asOf || len(got) != len(a.sessions) {
				t.Fatalf("as of %d with %d sessions, want %d with %d", gotAsOf, len(got), asOf, len(a.sessions))
			}
			sort.Slice(got, func(i, j int) bool { return got[i].id < got[j].id })
			for _, g := range got {
				want := a.sessions[g.rec()]
				if want == nil {
					t.Fatalf("decoded session %s is not in the state", g.rec())
				}
				w := normalize(want)
				if tc.external {
					w = normalizeExternal(want)
				}
				if !reflect.DeepEqual(normalize(g), w) {
					t.Errorf("session %s decodes to\n %+v\nwant %+v", g.id, normalize(g), w)
				}
				if g.seq != want.seq || g.rowDone != want.rowDone || g.logRows != want.logRows || g.teleRows != want.teleRows {
					t.Errorf("session %s: seq %d rowDone %v rows %d/%d, want %d %v %d/%d", g.id, g.seq, g.rowDone,
						g.logRows, g.teleRows, want.seq, want.rowDone, want.logRows, want.teleRows)
				}
			}
		})
	}
}

// normalizeExternal is normalize of s as a snapshot holds it when its
// streamed episodes are left to the log: without rows, replayed from
// their first position.
func normalizeExternal(s *session) map[string]any {
	n := normalize(s)
	eps := n["episodes"].(map[string]any)
	for rid, ep := range s.episodes {
		if external(ep) {
			e := eps[rid].([]any)
			c := e[0].(episode)
			c.replayFrom, c.flushedRows = ep.firstPos, 0
			rows := reflect.ValueOf(e[1])
			eps[rid] = []any{c, reflect.MakeSlice(rows.Type(), 0, 0).Interface()}
		}
	}
	return n
}
