package logrec

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
)

// seeds adds every golden record under testdata to f.
func seeds(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("testdata", "*.bin"))
	if len(names) == 0 {
		f.Fatal("no seeds under testdata")
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// roundTrip checks that s encodes into a record that parses to an equal
// message.
func roundTrip(t *testing.T, s *Snapshot) {
	t.Helper()
	rec, err := AppendSnapshot(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseSnapshot(rec[1:])
	if err != nil {
		t.Fatalf("re-encoded snapshot does not parse: %v", err)
	}
	if !proto.Equal(s, again) {
		t.Fatalf("re-encoded snapshot parses to\n%v\nwant %v", again, s)
	}
	if s.AsOf != 0 {
		if asOf, err := SnapshotAsOf(rec[1:]); err != nil || asOf != s.AsOf {
			t.Fatalf("re-encoded snapshot's as_of %d (%v), want %d", asOf, err, s.AsOf)
		}
	}
}

// FuzzSnapshot: the snapshot decoder never panics, and what it accepts
// encodes into a record that parses to an equal message.
func FuzzSnapshot(f *testing.F) {
	seeds(f)
	f.Add([]byte{8, 1, 18, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		s, err := ParseSnapshot(b[1:])
		if err != nil {
			return
		}
		roundTrip(t, s)
	})
}

// FuzzMarker: the marker, seal and invalid-event decoders never panic, and
// what they accept encodes into bytes that parse to the same value.
func FuzzMarker(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		body := b[1:]
		if m, err := ParseMarker(body); err == nil {
			for _, enc := range [][]byte{AppendEpisodeDone(nil, m), AppendSessionMarker(nil, TypeSessionDone, m), AppendUploadBegun(nil, m)} {
				again, err := ParseMarker(enc[1:])
				if err != nil {
					t.Fatalf("re-encoded marker does not parse: %v", err)
				}
				switch Type(enc[0]) {
				case TypeEpisodeDone:
					again.Write = m.Write
				case TypeUploadBegun:
					again.Write, again.Record, again.Uploads = m.Write, m.Record, m.Uploads
				default:
					again.Record = m.Record
				}
				if !reflect.DeepEqual(again, m) {
					t.Fatalf("marker %+v re-parses as %+v", m, again)
				}
			}
		}
		if asOf, err := ParseSealed(body); err == nil {
			if again, err := ParseSealed(AppendSealed(nil, asOf)[1:]); err != nil || again != asOf {
				t.Fatalf("seal %d re-parses as %d, %v", asOf, again, err)
			}
		}
		if e, err := ParseInvalid(body); err == nil {
			again, err := ParseInvalid(AppendInvalid(nil, e)[1:])
			if err != nil {
				t.Fatalf("re-encoded invalid event does not parse: %v", err)
			}
			if again.SessionID != e.SessionID || again.Route != e.Route || again.Kind != e.Kind || again.Detail != e.Detail {
				t.Fatalf("invalid event %+v re-parses as %+v", e, again)
			}
		}
	})
}

// FuzzJournal: the journal decoder never panics, and what it accepts
// encodes into a journal that parses to the same markers.
func FuzzJournal(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		markers, err := ParseJournal(b)
		if err != nil {
			return
		}
		again, err := ParseJournal(AppendJournal(nil, markers))
		if err != nil || !reflect.DeepEqual(again, markers) {
			t.Fatalf("journal %q re-parses as %q, %v", markers, again, err)
		}
	})
}
