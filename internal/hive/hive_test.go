package hive

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "ep-000001", "ep-000001"},
		{"uuid", "0190c0de-7a3b-7c2d-8e9f-0123456789ab", "0190c0de-7a3b-7c2d-8e9f-0123456789ab"},
		{"unreserved", "aZ09-_.~", "aZ09-_.~"},
		{"dot", ".", "%2E"},
		{"dotdot", "..", "%2E%2E"},
		{"three dots", "...", "..."},
		{"dotdot slash", "../x", "..%2Fx"},
		{"slash", "a/b", "a%2Fb"},
		{"backslash", `a\b`, "a%5Cb"},
		{"nul", "a\x00b", "a%00b"},
		{"percent", "100%", "100%25"},
		{"equals", "k=v", "k%3Dv"},
		{"space", "a b", "a%20b"},
		{"plus", "a+b", "a%2Bb"},
		{"colon star", "c:*?", "c%3A%2A%3F"},
		{"unicode", "é", "%C3%A9"},
		{"high byte", "\xff", "%FF"},
		{"newline", "a\nb", "a%0Ab"},
		// A name ending in ".tmp" is a temp file to every reader.
		{"tmp suffix", "run.tmp", "run%2Etmp"},
		{"tmp alone", ".tmp", "%2Etmp"},
		{"tmp twice", "a.tmp.tmp", "a.tmp%2Etmp"},
		{"tmp escaped before", "a b.tmp", "a%20b%2Etmp"},
		{"tmp upper case", "run.TMP", "run.TMP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escape(tt.in)
			if got != tt.want {
				t.Fatalf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if Hidden("episode_record_id=" + got) {
				t.Fatalf("partition of %q (%q) is hidden from readers", tt.in, got)
			}
			back, err := Unescape(got)
			if err != nil || back != tt.in {
				t.Fatalf("Unescape(%q) = %q, %v, want %q", got, back, err, tt.in)
			}
		})
	}
}

func TestUnescape(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"lower hex", "a%2fb", "a/b", nil},
		{"unescaped bytes kept", "a b=c", "a b=c", nil},
		{"trailing percent", "abc%", "", ErrBadEscape},
		{"one digit", "abc%2", "", ErrBadEscape},
		{"bad digit", "%G0", "", ErrBadEscape},
		{"bad second digit", "%0z", "", ErrBadEscape},
		{"dots", "%2E%2E", "..", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unescape(tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Unescape(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("Unescape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEncodeValueLong(t *testing.T) {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	tests := []struct {
		name string
		in   string
		cut  bool
	}{
		{"short", "local-4242", false},
		{"at limit", long("a", MaxValueLen), false},
		{"one over", long("a", MaxValueLen+1), true},
		{"245 ascii", long("s", 245), true},
		{"42 e-acute", long("é", 42), true},
		{"10 KB", long("x", 10<<10), true},
		{"escape at the cut", long("a", MaxValueLen-1) + "/" + long("b", 50), true},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := EncodeValue(tt.in)
			if Cut(e) != tt.cut {
				t.Fatalf("EncodeValue(%d bytes) = %d bytes, cut %v, want %v", len(tt.in), len(e), Cut(e), tt.cut)
			}
			if len(Segment(KeyEpisodeRecordID, tt.in)) > 255 {
				t.Fatalf("segment is %d bytes", len(Segment(KeyEpisodeRecordID, tt.in)))
			}
			if _, err := Unescape(e); err != nil {
				t.Fatalf("a cut value must still decode: %v", err)
			}
			if !tt.cut {
				if e != Escape(tt.in) {
					t.Fatalf("a value within the limit must be kept whole")
				}
				return
			}
			if len(e) <= MaxValueLen {
				t.Fatalf("a cut value (%d bytes) must be longer than any kept whole", len(e))
			}
			if other, ok := seen[e]; ok && other != tt.in {
				t.Fatalf("two values share %q", e)
			}
			seen[e] = tt.in
			// A value differing only past the cut gets another name.
			if EncodeValue(tt.in+"z") == e {
				t.Fatalf("values differing past the cut share a name")
			}
		})
	}
}

func TestPartitionRel(t *testing.T) {
	rec := Recording{SessionID: "local-7", EnvID: "0190c0de-7a3b-7c2d-8e9f-0123456789ab"}
	tests := []struct {
		name string
		p    Partition
		want string
	}{
		{"episode", EpisodePartition("steps", rec, "ep-000001"), "steps/session_id=local-7/env_id=0190c0de-7a3b-7c2d-8e9f-0123456789ab/episode_record_id=ep-000001"},
		{"recording", RecordingPartition("episodes", rec), "episodes/session_id=local-7/env_id=0190c0de-7a3b-7c2d-8e9f-0123456789ab"},
		{"empty ids", EpisodePartition("steps", Recording{}, ""), "steps/session_id=/env_id=/episode_record_id="},
		{"escape attempt", EpisodePartition("steps", Recording{SessionID: "../..", EnvID: "/etc"}, ".."), "steps/session_id=..%2F../env_id=%2Fetc/episode_record_id=%2E%2E"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Rel(); got != tt.want {
				t.Fatalf("Rel() = %q, want %q", got, tt.want)
			}
			root := filepath.FromSlash("/data/root")
			if d := tt.p.Dir(root); !strings.HasPrefix(d, root+string(filepath.Separator)) {
				t.Fatalf("%q is outside %q", d, root)
			}
			if got, want := tt.p.File(3), tt.want+"/part-00003.parquet"; got != want {
				t.Fatalf("File(3) = %q, want %q", got, want)
			}
		})
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", ".", "..", "/", "a/../b", "\x00", "%", "%2E", "=", "é", " ", "ep-000001", "\xff\xfe", strings.Repeat("a", 245), strings.Repeat("é", 42)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		back, err := Unescape(e)
		if err != nil || back != s {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, back, err)
		}
		if s != "" && (e == "" || e == "." || e == "..") {
			t.Fatalf("Escape(%q) = %q is not a safe segment", s, e)
		}
		if !utf8.ValidString(e) {
			t.Fatalf("Escape(%q) = %q is not valid UTF-8", s, e)
		}
		for i := 0; i < len(e); i++ {
			if !unreserved(e[i]) && e[i] != '%' {
				t.Fatalf("Escape(%q) = %q holds byte %q", s, e, e[i])
			}
		}
		seg := Segment(KeySessionID, s)
		if filepath.Base(seg) != seg || strings.ContainsRune(seg, filepath.Separator) {
			t.Fatalf("Segment(%q) = %q is not one path segment", s, seg)
		}
		if len(seg) > 255 {
			t.Fatalf("Segment(%q) is %d bytes, over a file name's 255", s, len(seg))
		}
		root := filepath.FromSlash("/r")
		d := EpisodePartition("steps", Recording{SessionID: s, EnvID: s}, s).Dir(root)
		rel, err := filepath.Rel(root, d)
		if err != nil || strings.Count(rel, string(filepath.Separator)) != 3 || strings.HasPrefix(rel, "..") {
			t.Fatalf("EpisodePartition(%q).Dir = %q escapes or is not four segments below root", s, d)
		}
		v, exact, err := ParseSegment(seg, KeySessionID)
		if err != nil {
			t.Fatalf("ParseSegment(%q): %v", seg, err)
		}
		if exact != (len(e) <= MaxValueLen) || (exact && v != s) {
			t.Fatalf("ParseSegment(Segment(%q)) = %q, exact %v", s, v, exact)
		}
	})
}

func TestRecordingOf(t *testing.T) {
	long := Recording{SessionID: strings.Repeat("é", 60), EnvID: "r/1"}
	tests := []struct {
		name string
		rel  string
		dir  string
		rec  Recording
		ok   bool
	}{
		{"steps file", EpisodePartition("steps", Recording{SessionID: "s", EnvID: "r"}, "e").File(3), "session_id=s/env_id=r", Recording{SessionID: "s", EnvID: "r"}, true},
		{"escaped", RecordingPartition("logs", Recording{SessionID: "a b", EnvID: "x.y"}).File(0), RecordingDir(Recording{SessionID: "a b", EnvID: "x.y"}), Recording{SessionID: "a b", EnvID: "x.y"}, true},
		{"cut", RecordingPartition("sessions", long).File(0), RecordingDir(long), Recording{}, true},
		{"table only", "steps/part-00000.parquet", "", Recording{}, false},
		{"not a partition", "steps/x/y/part-00000.parquet", "", Recording{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, rec, ok := RecordingOf(tt.rel)
			if ok != tt.ok || dir != tt.dir || (tt.rec != Recording{} && rec != tt.rec) {
				t.Fatalf("RecordingOf(%q) = %q, %v, %v; want %q, %v, %v", tt.rel, dir, rec, ok, tt.dir, tt.rec, tt.ok)
			}
		})
	}
}

func TestLayoutFile(t *testing.T) {
	for _, l := range []Layout{LayoutEpisode, LayoutSession} {
		got, err := ParseLayoutFile(LayoutFile(l))
		if err != nil || got != l {
			t.Errorf("ParseLayoutFile(LayoutFile(%q)) = %q, %v", l, got, err)
		}
	}
	// The recorder's layout file as written since schema version 3.
	if got := string(LayoutFile(LayoutSession)); got != "schema_version=3\nlayout=session\n" {
		t.Errorf("LayoutFile = %q", got)
	}
	// A ROOT created at schema version 2 is still read (and takes
	// version 3 recordings).
	if got, err := ParseLayoutFile([]byte("schema_version=2\nlayout=session\n")); err != nil || got != LayoutSession {
		t.Errorf("a version 2 layout file: %q, %v", got, err)
	}
	for _, tc := range []struct {
		name, body string
		want       error
	}{
		{"old version", "schema_version=1\nlayout=episode\n", ErrSchemaVersion},
		{"future version", "schema_version=4\nlayout=episode\n", ErrSchemaVersion},
		{"no version", "layout=episode\n", ErrSchemaVersion},
		{"unknown layout", "schema_version=2\nlayout=frame\n", ErrBadLayout},
		{"empty", "", ErrSchemaVersion},
	} {
		if _, err := ParseLayoutFile([]byte(tc.body)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestMaxDepth(t *testing.T) {
	p := EpisodePartition("steps", Recording{SessionID: "s", EnvID: "r"}, "e")
	if got := strings.Count(p.File(0), "/"); got != MaxDepth {
		t.Errorf("an episode partition's part lies %d levels deep, MaxDepth is %d", got, MaxDepth)
	}
}
