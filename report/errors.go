package report

import "errors"

// ErrNoRecordings is returned by Build when it is given no recording.
var ErrNoRecordings = errors.New("report: no recording to report")
