package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/report"
)

func TestWordError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no sessions row", fmt.Errorf("replay: %w", dataset.ErrNoSessionRow), "run 'rlrec recover ROOT'"},
		{"not found", fmt.Errorf("x: %w", dataset.ErrNotFound), "'rlrec inspect ROOT"},
		{"damaged file", &dataset.FileError{Path: "p", Row: 3, Err: errors.New("bad")}, "run 'rlrec verify ROOT'"},
		{"tables disagree", fmt.Errorf("x: %w", dataset.ErrInconsistent), "run 'rlrec verify ROOT'"},
		{"damaged log", fmt.Errorf("recover R: %w: %w", recorder.ErrDamagedLog, errors.New("wal: corrupt")), "run 'rlrec recover --salvage ROOT'"},
		{"damaged journal", fmt.Errorf("j: %w", recorder.ErrCorruptJournal), "'rlrec recover ROOT', then 'rlrec verify ROOT'"},
		{"recording failed", &recorder.RecordingError{SessionID: "s", EnvID: "e", Path: "p", Err: errors.New("disk full")}, "(run 'rlrec recover ROOT')"},
		{"report of a damaged row", &dataset.FileError{Path: "p", Row: 1, Err: report.ErrDamaged}, "run 'rlrec verify ROOT'"},
		{"other", errors.New("plain"), "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wordError(tc.err)
			if !strings.Contains(got.Error(), tc.want) || !errors.Is(got, tc.err) {
				t.Errorf("wordError = %q, want it to say %q and wrap the error", got, tc.want)
			}
		})
	}
}

// cliCommand matches a string that tells to run an rlrec command or names
// a flag of the CLI.
var cliCommand = regexp.MustCompile(`rlrec (demo|simulate|ingest|serve|inspect|replay|stats|copy|export|verify|recover)\b|--(session|env|published|force|tls-ca|token-file|salvage|fps|out)\b`)

// libraryPackages lists the directories of the module's packages other
// than the commands (cmd/...): every one of them, so a new package is
// covered too.
func libraryPackages(t *testing.T) []string {
	t.Helper()
	top := filepath.Join("..", "..")
	var dirs []string
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(top, path)
		switch {
		case rel == ".":
		case rel == "cmd", rel == "interop", rel == "python", d.Name() == "testdata", strings.HasPrefix(d.Name(), "."):
			// The commands; the interop module, a module of tests of its
			// own; fixtures and hidden directories.
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestLibraryErrorsNameNoCommand: the library packages (every package but
// the commands) return typed errors and sentinels, word remedies with
// their caller's findings.Words, and their string literals name no rlrec
// command or CLI flag: what to run is the CLI's to say (wordError,
// cliWords).
func TestLibraryErrorsNameNoCommand(t *testing.T) {
	pkgs := libraryPackages(t)
	for _, must := range []string{"dataset", "curate", "stats", "client", "export/lerobot", "recorder", "verify", "findings", "report", "serve", "internal/store"} {
		if !slices.Contains(pkgs, filepath.FromSlash(must)) {
			t.Fatalf("package %s is not among those checked: %v", must, pkgs)
		}
	}
	for _, pkg := range pkgs {
		paths, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(lit.Value)
				if m := cliCommand.FindString(s); m != "" {
					t.Errorf("%s: a string names %q: %q", fset.Position(lit.Pos()), m, s)
				}
				return true
			})
		}
	}
}

// TestCLIWords: every remedy a library fix can ask for is worded as the
// command that does it.
func TestCLIWords(t *testing.T) {
	rec := dataset.Recording{SessionID: "s1", EnvID: "e1"}
	for _, tc := range []struct {
		remedy findings.Remedy
		want   string
	}{
		{findings.Recover, "run 'rlrec recover data'"},
		{findings.Salvage, "run 'rlrec recover --salvage data'"},
		{findings.Verify, "run 'rlrec verify data'"},
		{findings.Stats, "'rlrec stats data --session s1 --env e1'"},
	} {
		if got := cliWords(findings.Action{Remedy: tc.remedy, Root: "data", Recording: rec}); got != tc.want {
			t.Errorf("remedy %d: %q, want %q", tc.remedy, got, tc.want)
		}
	}
}
