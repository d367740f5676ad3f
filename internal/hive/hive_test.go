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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escape(tt.in)
			if got != tt.want {
				t.Fatalf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
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

func TestDir(t *testing.T) {
	root := filepath.FromSlash("/data/root")
	tests := []struct {
		name      string
		got, want string
	}{
		{"episode", Dir(root, "steps", "s1", "ep-000001"), "/data/root/steps/session_id=s1/episode_record_id=ep-000001"},
		{"episode empty id", Dir(root, "episodes", "s1", ""), "/data/root/episodes/session_id=s1/episode_record_id="},
		{"session", SessionDir(root, "logs", "s1"), "/data/root/logs/session_id=s1"},
		{"escape attempt", Dir(root, "steps", "../..", ".."), "/data/root/steps/session_id=..%2F../episode_record_id=%2E%2E"},
		{"slash id", SessionDir(root, "sessions", "/etc/passwd"), "/data/root/sessions/session_id=%2Fetc%2Fpasswd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != filepath.FromSlash(tt.want) {
				t.Fatalf("got %q, want %q", tt.got, tt.want)
			}
			if !strings.HasPrefix(tt.got, root+string(filepath.Separator)) {
				t.Fatalf("%q is outside %q", tt.got, root)
			}
		})
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", ".", "..", "/", "a/../b", "\x00", "%", "%2E", "=", "é", " ", "ep-000001", "\xff\xfe"} {
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
		root := filepath.FromSlash("/r")
		d := Dir(root, "steps", s, s)
		rel, err := filepath.Rel(root, d)
		if err != nil || strings.Count(rel, string(filepath.Separator)) != 2 || strings.HasPrefix(rel, "..") {
			t.Fatalf("Dir(%q) = %q escapes or is not three segments below root", s, d)
		}
	})
}
