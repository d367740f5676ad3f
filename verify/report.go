package verify

import (
	"fmt"
	"io"
	"sort"

	"github.com/rlrec/rlrec/findings"
)

// Check names the check that found a problem. The values appear in the
// output: do not change them.
type Check string

// The checks; see the package doc for what each covers.
const (
	CheckFile          Check = "file"
	CheckFooter        Check = "footer"
	CheckSchemaVersion Check = "schema-version"
	CheckMetadata      Check = "metadata"
	CheckPartition     Check = "partition"
	CheckSchema        Check = "schema"
	CheckBlob          Check = "blob"
	CheckTyped         Check = "typed"
	CheckSteps         Check = "steps"
	CheckEpisode       Check = "episode"
	CheckSession       Check = "session"
	CheckEventLog      Check = "event-log"
	CheckStray         Check = "stray"
	CheckLog           Check = "log"
	CheckLock          Check = "lock"
	CheckClaim         Check = "claim"
)

// Problem is one thing wrong in a ROOT.
type Problem struct {
	Check Check
	// Path is the file or directory, relative to ROOT with "/" separators.
	Path string
	// Row is the 0-based row in the file, or -1 when the problem is not
	// about one row.
	Row int64
	// Message says what is wrong.
	Message string
	// Fix says what to do. When Remedy is set it starts with the remedy
	// in the words of WithWords.
	Fix string
	// Remedy is the operation on ROOT that Fix asks for, 0 for none.
	Remedy findings.Remedy
}

// Report is the outcome of Root.
type Report struct {
	// Root is the ROOT directory checked.
	Root string
	// Files counts the Parquet files checked, Rows their rows and Bytes
	// their size.
	Files int
	Rows  int64
	Bytes int64
	// Problems lists every problem found, sorted by path and row.
	Problems []Problem
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) sort() {
	sort.SliceStable(r.Problems, func(i, j int) bool {
		a, b := &r.Problems[i], &r.Problems[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Row < b.Row
	})
}

// Write prints every problem (its path, row and check, then what to do on
// an indented line) followed by a summary line.
func (r *Report) Write(w io.Writer) error {
	for _, p := range r.Problems {
		where := p.Path
		if where == "" {
			where = "."
		}
		if p.Row >= 0 {
			where += fmt.Sprintf(" row %d", p.Row)
		}
		if _, err := fmt.Fprintf(w, "%s: %s: %s\n", where, p.Check, p.Message); err != nil {
			return err
		}
		if p.Fix != "" {
			if _, err := fmt.Fprintf(w, "    fix: %s\n", p.Fix); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprintln(w, r.Summary())
	return err
}

// Summary is the report's last line: files, rows and problems.
func (r *Report) Summary() string {
	s := fmt.Sprintf("checked %d files, %d rows: ", r.Files, r.Rows)
	switch len(r.Problems) {
	case 0:
		return s + "no problems"
	case 1:
		return s + "1 problem"
	}
	return s + fmt.Sprintf("%d problems", len(r.Problems))
}
