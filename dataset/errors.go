package dataset

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrNotFound is returned for a session or episode the ROOT does not
	// hold.
	ErrNotFound = errors.New("dataset: not found")
	// ErrAmbiguous is returned by Lookup for a session id that names
	// several recordings when no env id narrows it.
	ErrAmbiguous = errors.New("dataset: session id names several recordings")
	// ErrSchemaVersion is returned for a file whose rlrec.schema_version
	// this reader does not know (or that has none).
	ErrSchemaVersion = errors.New("dataset: unknown schema version")
	// ErrColumn is returned for a steps file that lacks a fixed column or
	// holds it with another type.
	ErrColumn = errors.New("dataset: missing or mistyped column")
	// ErrSpace is returned for a space spec in a file's metadata that does
	// not parse, or for a blob that does not fit its space.
	ErrSpace = errors.New("dataset: bad space")
	// ErrNoSpace is returned when a value is asked for but the file carries
	// no spec for its side.
	ErrNoSpace = errors.New("dataset: no space spec in the file metadata")
	// ErrNoSessionRow is returned by ReplayEvents for a recording with no
	// sessions row: one still open, or crashed and not yet recovered.
	ErrNoSessionRow = errors.New("dataset: no sessions row")
	// ErrInconsistent is returned when a ROOT's tables disagree with one
	// another or hold a value no recorder writes (found while replaying).
	ErrInconsistent = errors.New("dataset: tables disagree")
)

// FileError is a failure to read one file of a ROOT: Path names it, Row is
// the 0-based row in the file (-1 when the error is not about one row).
type FileError struct {
	Path string
	Row  int64
	Err  error
}

func (e *FileError) Error() string {
	if e.Row >= 0 {
		return fmt.Sprintf("%s row %d: %v", e.Path, e.Row, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

func fileErr(path string, row int64, err error) error {
	return &FileError{Path: path, Row: row, Err: err}
}
