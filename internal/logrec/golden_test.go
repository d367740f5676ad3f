package logrec

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
)

var update = flag.Bool("update", false, "rewrite the golden records under testdata/ (only when the format changes on purpose)")

// golden reads testdata/name, or writes b there under -update.
func golden(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
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

var (
	goldenRec     = hive.Recording{SessionID: "s/1 ü", EnvID: "env-0"}
	goldenFiles   = []string{"steps/a.parquet", "episodes/b.parquet"}
	goldenUploads = []Upload{{File: "steps/a.parquet", ID: "upload/1 ü", Pieces: []Piece{
		{Number: 1, ETag: `"0123456789abcdef0123456789abcdef"`, Size: 64 << 20},
		{Number: 2, ETag: `"fedcba9876543210fedcba9876543210"`, Size: 12345},
	}}}
	goldenInvalid = &Invalid{SessionID: "s/1 ü", Route: events.RuntimeEnvContext{EnvID: "env-0", ModelComponentID: "model"},
		At: time.Unix(1700000000, 123456789).UTC(), Kind: events.KindActionReceived, Detail: "action: no slab"}
	goldenJournal = [][]byte{
		AppendEpisodeDone(nil, Marker{Recording: hive.Recording{SessionID: "s", EnvID: "e"}, Record: "ep-000001", Files: []string{"x.parquet"}}),
		AppendSessionMarker(nil, TypeSessionDone, Marker{Recording: hive.Recording{SessionID: "s", EnvID: "e"}, Write: 1, Files: []string{"y.parquet", "z.parquet"}}),
	}
)

// TestGolden: the records and the journal in testdata were written by the
// recorder before this package existed (and by every version since). They
// parse to the values they were written from, and those values encode to
// the same bytes.
func TestGolden(t *testing.T) {
	marker := func(typ Type, want Marker) func(t *testing.T, b []byte) {
		return func(t *testing.T, b []byte) {
			if Of(b) != typ {
				t.Fatalf("type %v, want %v", Of(b), typ)
			}
			got, err := ParseMarker(b[1:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("marker %+v, want %+v", got, want)
			}
		}
	}
	invalid := func(want *Invalid) func(t *testing.T, b []byte) {
		return func(t *testing.T, b []byte) {
			if Of(b) != TypeInvalid {
				t.Fatalf("type %v", Of(b))
			}
			got, err := ParseInvalid(b[1:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("invalid event %+v, want %+v", got, want)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		enc   []byte
		check func(t *testing.T, b []byte)
	}{
		{"episode-done.bin", AppendEpisodeDone(nil, Marker{Recording: goldenRec, Record: "ep-000007", Files: goldenFiles}),
			marker(TypeEpisodeDone, Marker{Recording: goldenRec, Record: "ep-000007", Files: goldenFiles})},
		{"session-done.bin", AppendSessionMarker(nil, TypeSessionDone, Marker{Recording: goldenRec, Write: 3, Files: goldenFiles}),
			marker(TypeSessionDone, Marker{Recording: goldenRec, Write: 3, Files: goldenFiles})},
		{"episode-done-upload.bin", AppendEpisodeDone(nil, Marker{Recording: goldenRec, Record: "ep-000007", Files: goldenFiles, Uploads: goldenUploads}),
			marker(TypeEpisodeDone, Marker{Recording: goldenRec, Record: "ep-000007", Files: goldenFiles, Uploads: goldenUploads})},
		{"session-done-upload.bin", AppendSessionMarker(nil, TypeSessionDone, Marker{Recording: goldenRec, Write: 3, Files: goldenFiles, Uploads: goldenUploads}),
			marker(TypeSessionDone, Marker{Recording: goldenRec, Write: 3, Files: goldenFiles, Uploads: goldenUploads})},
		{"upload-begun.bin", AppendUploadBegun(nil, Marker{Recording: goldenRec, Files: goldenFiles}),
			marker(TypeUploadBegun, Marker{Recording: goldenRec, Files: goldenFiles})},
		{"session-write.bin", AppendSessionMarker(nil, TypeSessionWrite, Marker{Recording: hive.Recording{EnvID: "e"}, Write: 1}),
			marker(TypeSessionWrite, Marker{Recording: hive.Recording{EnvID: "e"}, Write: 1})},
		{"sealed.bin", AppendSealed(nil, 1<<40+5), func(t *testing.T, b []byte) {
			if Of(b) != TypeSealed {
				t.Fatalf("type %v", Of(b))
			}
			if asOf, err := ParseSealed(b[1:]); err != nil || asOf != 1<<40+5 {
				t.Fatalf("seal as of %d, %v", asOf, err)
			}
		}},
		{"invalid.bin", AppendInvalid(nil, goldenInvalid), invalid(goldenInvalid)},
		{"invalid-bare.bin", AppendInvalid(nil, &Invalid{}), invalid(&Invalid{})},
		{"journal.bin", AppendJournal(nil, goldenJournal), func(t *testing.T, b []byte) {
			got, err := ParseJournal(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, goldenJournal) {
				t.Errorf("journal markers %q, want %q", got, goldenJournal)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := golden(t, tc.name, tc.enc)
			if !bytes.Equal(tc.enc, want) {
				t.Errorf("encoded % x\nwant    % x", tc.enc, want)
			}
			tc.check(t, want)
		})
	}
}

// TestGoldenSnapshot: a snapshot written by hand-written code before
// snapshot.proto existed parses with the generated code, starts with its
// as_of, and encodes again into bytes that parse to an equal message.
func TestGoldenSnapshot(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "snapshot-inline.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if Of(b) != TypeSnapshot {
		t.Fatalf("type %v", Of(b))
	}
	s, err := ParseSnapshot(b[1:])
	if err != nil {
		t.Fatal(err)
	}
	if asOf, err := SnapshotAsOf(b[1:]); err != nil || asOf != s.AsOf || s.AsOf != 1234 {
		t.Fatalf("as_of %d (%v), message's %d, want 1234", asOf, err, s.AsOf)
	}
	if len(s.Sessions) != 2 || string(s.Sessions[0].Id) != "s/1 ü" || s.Sessions[1].Sequence != 1<<33 {
		t.Fatalf("sessions %v", s.Sessions)
	}
	roundTrip(t, s)
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"marker-field", func() error { _, err := ParseMarker([]byte{0x30, 1}); return err }(), ErrMarker},
		{"marker-cut", func() error { _, err := ParseMarker([]byte{0x0a, 5, 'a'}); return err }(), ErrMarker},
		{"seal-trailing", func() error { _, err := ParseSealed([]byte{8, 1, 0}); return err }(), ErrMarker},
		{"invalid-route", func() error { _, err := ParseInvalid([]byte{0x12, 2, 0x20, 1}); return err }(), ErrInvalid},
		{"snapshot-no-as-of", func() error { _, err := SnapshotAsOf([]byte{0x12, 0}); return err }(), ErrSnapshot},
		{"snapshot-cut", func() error { _, err := ParseSnapshot([]byte{0x12, 5, 0}); return err }(), ErrSnapshot},
		{"journal-magic", func() error { _, err := ParseJournal([]byte("rlrec-journal-2\n\x00\x00\x00\x00")); return err }(), ErrJournal},
		{"journal-checksum", func() error {
			j := AppendJournal(nil, goldenJournal)
			j[len(JournalMagic)+3] ^= 1
			_, err := ParseJournal(j)
			return err
		}(), ErrJournal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Errorf("error %v, want %v", tc.err, tc.want)
			}
		})
	}
}

func TestTypeString(t *testing.T) {
	for typ, want := range map[Type]string{TypeEvent: "event", TypeSnapshot: "snapshot", TypeInvalid: "invalid", 0: "type(0)", 9: "type(9)"} {
		if got := typ.String(); got != want {
			t.Errorf("Type(%d).String() = %q, want %q", typ, got, want)
		}
	}
}

func TestPublished(t *testing.T) {
	rec := hive.Recording{SessionID: "s", EnvID: "e"}
	other := hive.Recording{SessionID: "s", EnvID: "f"}
	p := NewPublished()
	for _, r := range [][]byte{
		AppendEpisodeDone(nil, Marker{Recording: rec, Record: "ep-000001", Files: []string{"a", "b"}}),
		AppendSessionMarker(nil, TypeSessionWrite, Marker{Recording: rec, Write: 2}),
		AppendSessionMarker(nil, TypeSessionWrite, Marker{Recording: rec, Write: 3}),
		AppendSessionMarker(nil, TypeSessionDone, Marker{Recording: rec, Write: 2, Files: []string{"c"}}),
		AppendUploadBegun(nil, Marker{Recording: rec, Files: []string{"u"}}),
		AppendSessionMarker(nil, TypeSessionDone, Marker{Recording: rec, Write: 4, Files: []string{"b", "u"},
			Uploads: []Upload{{File: "u", ID: "id", Pieces: []Piece{{Number: 1, ETag: "e", Size: 5}}}}}),
		AppendSealed(nil, 7),
		{byte(TypeEvent), 1, 2},
	} {
		if err := p.Add(r); err != nil {
			t.Fatalf("add %v: %v", Of(r), err)
		}
	}
	if err := p.Add([]byte{byte(TypeEpisodeDone), 0xff}); !errors.Is(err, ErrMarker) {
		t.Errorf("malformed marker: %v, want ErrMarker", err)
	}
	for _, tc := range []struct {
		name      string
		got, want bool
	}{
		{"episode", p.Episode(rec, "ep-000001"), true},
		{"episode-other-recording", p.Episode(other, "ep-000001"), false},
		{"episode-other-id", p.Episode(rec, "ep-000002"), false},
		{"session-done", p.Session(rec, 2), true},
		{"session-only-handed-over", p.Session(rec, 3), false},
		{"file", p.File("b") && p.File("c"), true},
		{"file-not-named", p.File("d"), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if !p.Begun()["u"] || len(p.Begun()) != 1 {
		t.Errorf("begun uploads %v, want u", p.Begun())
	}
	if ws := p.Writes(); len(ws) != 3 || ws[0].Record != "ep-000001" || ws[1].Marker.Write != 2 || len(ws[2].Uploads) != 1 {
		t.Fatalf("writes %+v", ws)
	}
	// Forgetting a write drops it and the files no other write names.
	p.Forget(p.Writes()[0])
	if p.Episode(rec, "ep-000001") || p.File("a") || !p.File("b") || len(p.Writes()) != 2 {
		t.Errorf("after forgetting ep-000001: episode %v, file a %v, file b %v (also session write 4's), %d writes",
			p.Episode(rec, "ep-000001"), p.File("a"), p.File("b"), len(p.Writes()))
	}
	p.Forget(p.Writes()[0])
	if p.Session(rec, 2) || p.File("c") || !p.Session(rec, 4) {
		t.Errorf("after forgetting session write 2: %v, file c %v, write 4 %v", p.Session(rec, 2), p.File("c"), p.Session(rec, 4))
	}
	if k, ok := p.FirstWrite(rec); !ok || k != 2 {
		t.Errorf("first write %d, %v; want 2", k, ok)
	}
	if _, ok := p.FirstWrite(other); ok {
		t.Errorf("first write of a recording with none")
	}
}
