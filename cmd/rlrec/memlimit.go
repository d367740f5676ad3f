package main

import (
	"os"
	"runtime/debug"

	"github.com/rlrec/rlrec/recorder"
)

// limitMemory gives the Go runtime the memory limit under which a recorder
// with the default budget keeps this process's peak RSS within the budget
// plus 64 MiB (see recorder.GCMemoryLimit). A GOMEMLIMIT set by the user
// wins. The commands that record call it before they open a recorder.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(recorder.GCMemoryLimit(recorder.DefaultMemoryBudget))
}
