package main

import (
	"flag"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHelp checks every command's help: lines fit in 80 columns, the usage
// line and the Flags section name every flag, and long flags are spelled
// with two dashes only. --out, the other spelling of -o, need not be in
// the usage line.
func TestHelp(t *testing.T) {
	for _, c := range commands {
		t.Run(c.Name, func(t *testing.T) {
			code, out, errOut := runCmd(t, "help", c.Name)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for i, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > helpWidth {
					t.Errorf("line %d has %d columns: %q", i+1, n, line)
				}
			}
			usage, flagsPart, ok := strings.Cut(out, "\nFlags:\n")
			if !ok {
				t.Fatalf("no Flags section:\n%s", out)
			}
			usageLine, _, _ := strings.Cut(usage, "\n\n")
			listed := map[string]bool{}
			for _, line := range strings.Split(flagsPart, "\n") {
				if strings.HasPrefix(line, "  -") {
					listed[strings.Fields(line)[0]] = true
				}
			}
			fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
			if c.SetFlags != nil {
				c.SetFlags(fs)
			}
			fs.VisitAll(func(f *flag.Flag) {
				name := flagName(f.Name)
				if !listed[name] {
					t.Errorf("Flags section lacks %s:\n%s", name, flagsPart)
				}
				if len(f.Name) > 1 && listed["-"+f.Name] {
					t.Errorf("Flags section spells %s with one dash", name)
				}
				if !strings.Contains(usageLine, name) && f.Usage != outAliasUsage {
					t.Errorf("usage line lacks %s:\n%s", name, usageLine)
				}
			})
		})
	}
}

func TestWrapUsage(t *testing.T) {
	got := wrapUsage("usage: rlrec x [--alpha A] [--beta-long-name B|C] [--gamma G] FILE", 40)
	want := "usage: rlrec x [--alpha A]\n" +
		"               [--beta-long-name B|C]\n" +
		"               [--gamma G] FILE"
	if got != want {
		t.Fatalf("wrapUsage =\n%s\nwant\n%s", got, want)
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want []string
	}{
		{
			name: "release with revision",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rlrec/rlrec", Version: "v1.2.0"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}},
			ok: true,
			want: []string{"rlrec v1.2.0\n", "module:   github.com/rlrec/rlrec\n", "revision: 0123abcd (2026-01-02T03:04:05Z), modified: built with uncommitted changes\n",
				"go:       go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + "\n"},
		},
		{
			name: "devel without vcs",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rlrec/rlrec", Version: "(devel)"}},
			ok:   true,
			want: []string{"rlrec (devel)\n", "revision: unknown"},
		},
		{name: "no build info", want: []string{"rlrec (unknown)\n", "go:       " + runtime.Version()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeVersion(&b, tc.bi, tc.ok); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errOut := runCmd(t, args...)
		if code != 0 || !strings.HasPrefix(out, "rlrec ") || !strings.Contains(out, "go:") {
			t.Errorf("rlrec %s: exit %d, stdout %q, stderr %q", args[0], code, out, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "version", "extra"); code != 2 {
		t.Errorf("rlrec version extra: exit %d, want 2: %s", code, errOut)
	}
}
