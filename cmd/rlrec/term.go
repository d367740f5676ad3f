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

// terminalWidth returns the width in columns of the terminal on f, 0 when f
// is no terminal or its size is unknown.
func terminalWidth(f *os.File) int {
	if !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil || w <= 0 {
		return 0
	}
	return w
}

// refuseTerminal is the usage error of a command asked to write binary
// output (what) to standard output when that is a terminal.
func refuseTerminal(what string) error {
	return usagef("%s is binary and standard output is a terminal: redirect it (> FILE, or | a command "+
		"that reads it) or use -o FILE", what)
}
