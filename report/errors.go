package report

import "errors"

// Sentinel errors of package report; match them with errors.Is.
var (
	// ErrNoRecordings is returned by Build when it is given no recording.
	ErrNoRecordings = errors.New("report: no recording to report")
	// ErrDamaged is wrapped, inside a *dataset.FileError naming the file
	// and row, by the errors of Build for a steps row whose observation
	// does not match its space (a leaf missing, an image of the wrong
	// size): the file is damaged.
	ErrDamaged = errors.New("report: steps row does not match its space")
)
