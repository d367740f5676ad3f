package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/dataset"
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

// cliCommand matches a string that tells to run an rlrec command.
var cliCommand = regexp.MustCompile(`rlrec (demo|simulate|ingest|serve|inspect|replay|stats|copy|export|verify|recover)\b|--(session|env|published|force|tls-ca|token-file)\b`)

// TestLibraryErrorsNameNoCommand: the library packages whose errors the
// CLI words return typed errors and sentinels, and their string literals
// name no rlrec command or CLI flag.
func TestLibraryErrorsNameNoCommand(t *testing.T) {
	for _, pkg := range []string{"dataset", "curate", "stats", "client", "export/lerobot"} {
		paths, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil || len(paths) == 0 {
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
