package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestParseArgs: flags stand anywhere among the positional arguments,
// "--" ends them and "-" alone is positional.
func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		pos  []string
		out  string
		max  int
		json bool
		err  string
	}{
		{name: "flags first", args: []string{"--out", "d", "--max", "3", "ROOT"}, pos: []string{"ROOT"}, out: "d", max: 3},
		{name: "flags after", args: []string{"ROOT", "--max", "5", "--out", "d"}, pos: []string{"ROOT"}, out: "d", max: 5},
		{name: "interleaved", args: []string{"a", "--json", "b", "-out=d", "c"}, pos: []string{"a", "b", "c"}, out: "d", json: true},
		{name: "bool flag before positional", args: []string{"--json", "ROOT"}, pos: []string{"ROOT"}, json: true},
		{name: "dash is positional", args: []string{"--out", "d", "-"}, pos: []string{"-"}, out: "d"},
		{name: "double dash ends flags", args: []string{"--json", "--", "--out", "-x"}, pos: []string{"--out", "-x"}, json: true},
		{name: "value that looks like a flag", args: []string{"--out", "-weird", "R"}, pos: []string{"R"}, out: "-weird"},
		{name: "negative value", args: []string{"R", "--max", "-2"}, pos: []string{"R"}, max: -2},
		{name: "unknown flag after positional", args: []string{"R", "--nope"}, err: "flag provided but not defined: -nope"},
		{name: "missing value", args: []string{"R", "--out"}, err: "flag needs an argument: -out"},
		{name: "help", args: []string{"R", "--help"}, err: flag.ErrHelp.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			out := fs.String("out", "", "")
			maxN := fs.Int("max", 0, "")
			js := fs.Bool("json", false, "")
			pos, err := parseArgs(fs, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pos, tc.pos) || *out != tc.out || *maxN != tc.max || *js != tc.json {
				t.Fatalf("pos %q out %q max %d json %v; want %q %q %d %v", pos, *out, *maxN, *js, tc.pos, tc.out, tc.max, tc.json)
			}
		})
	}
}

// TestFlagsAfterArguments runs every command that takes positional
// arguments with its flags after them: the same rule holds for all.
func TestFlagsAfterArguments(t *testing.T) {
	dir := t.TempDir()
	stream := filepath.Join(dir, "s.events")
	if code, _, errOut := runCmd(t, "simulate", "-o", stream, "--envs", "2", "--episodes", "2", "--reproducible"); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut)
	}
	ingested := filepath.Join(dir, "ingested")
	tests := []struct {
		name string
		args []string
		want string // in stdout
	}{
		{"verify", []string{"verify", goldenRoot, "--max-problems", "5"}, "no problems"},
		{"ingest", []string{"ingest", stream, "--out", ingested}, "into " + ingested},
		{"inspect", []string{"inspect", goldenRoot, "--json"}, `"root"`},
		{"replay", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--episode", "ep-000003"}, `"step":0`},
		{"recover", []string{"recover", ingested, "--salvage"}, "nothing to recover"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("stdout lacks %q:\n%s", tc.want, out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(ingested, "sessions")); err != nil {
		t.Errorf("ingest --out after FILE did not record into %s: %v", ingested, err)
	}
}
