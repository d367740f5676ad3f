package main

import (
	"os"
	"runtime/debug"

	"github.com/rlrec/rlrec/recorder"
)

// limitMemory gives the Go runtime the memory limit under which a recorder
// with the default budget keeps this process's peak RSS within the budget
// plus 64 MiB (see recorder.GCMemoryLimit). A GOMEMLIMIT set by the user
// wins. main calls it for the commands that record (Command.Records).
//
// The limit is soft: when the live data outgrows it (an event of hundreds
// of MiB, say), the runtime goes past it rather than fail, and spends more
// time collecting meanwhile (at most about half the CPU).
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(recorder.GCMemoryLimit(recorder.DefaultMemoryBudget))
}

// raiseMemoryLimitForStaging adds a second recorder's budget to the limit
// limitMemory set, when an ingest opens the staging recorder of a resume
// (resume.go): two recorders with the default budget then run at once.
// A GOMEMLIMIT set by the user, or another limit, is left alone.
func raiseMemoryLimitForStaging() {
	one := recorder.GCMemoryLimit(recorder.DefaultMemoryBudget)
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != one {
		return
	}
	debug.SetMemoryLimit(one + recorder.DefaultMemoryBudget)
}
