package findings

import (
	"fmt"

	"github.com/rlrec/rlrec/dataset"
)

// Remedy is an operation on a ROOT that a fix asks for. The library
// packages (findings, verify, report) say what is wrong and where, and
// word the operation to run with the Words their caller gives: a program
// names its own functions, the CLI its commands and flags.
type Remedy uint8

// The remedies.
const (
	// Recover replays ROOT's log and writes out what it holds (what
	// recorder.Open does).
	Recover Remedy = 1
	// Salvage is Recover that drops the log's damaged records and keeps
	// every intact one (recorder.WithSalvage).
	Salvage Remedy = 2
	// Verify checks every file of ROOT (verify.Root).
	Verify Remedy = 3
	// Stats computes the per-element statistics of one recording
	// (stats.Compute).
	Stats Remedy = 4
)

// Action is a remedy applied to a ROOT, and for Stats to one recording.
type Action struct {
	Remedy Remedy
	// Root is the ROOT as the user named it.
	Root string
	// Recording is the recording Stats is about.
	Recording dataset.Recording
}

// Words words an action as an imperative phrase that a sentence goes on
// from: "recover data (...)" in APIWords, "run 'rlrec recover data'" in
// the CLI's words.
type Words func(Action) string

// APIWords words actions as the Go packages run them. Packages use it
// when their caller gives no Words.
func APIWords(a Action) string {
	switch a.Remedy {
	case Recover:
		return fmt.Sprintf("recover %s (open it with recorder.Open)", a.Root)
	case Salvage:
		return fmt.Sprintf("recover %s with salvage (recorder.Open with recorder.WithSalvage(true))", a.Root)
	case Verify:
		return fmt.Sprintf("check %s (verify.Root)", a.Root)
	case Stats:
		return fmt.Sprintf("stats.Compute over %s of %s", Name(a.Recording), a.Root)
	}
	return fmt.Sprintf("remedy %d on %s", a.Remedy, a.Root)
}

// Say is w, or APIWords when w is nil.
func (w Words) Say(a Action) string {
	if w == nil {
		return APIWords(a)
	}
	return w(a)
}
