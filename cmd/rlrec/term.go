package main

import (
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether f is an interactive terminal on which colour
// and progress output are wanted: NO_COLOR or TERM=dumb turn them off.
func isTerminal(f *os.File) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}
