package main

import (
	"errors"
	"fmt"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/recorder"
)

// wordError adds to a library error what to do about it in this CLI's
// words: the library packages return typed errors and sentinels, and
// name no command; the command to run is the CLI's to say.
func wordError(err error) error {
	var fe *dataset.FileError
	switch {
	case errors.Is(err, dataset.ErrNoSessionRow):
		return fmt.Errorf("%w; run 'rlrec recover ROOT' on that ROOT first", err)
	case errors.Is(err, dataset.ErrNotFound):
		return fmt.Errorf("%w; 'rlrec inspect ROOT [--session ID]' lists what it holds", err)
	case errors.Is(err, dataset.ErrAmbiguous):
		return fmt.Errorf("%w (choose one with --env ENV)", err)
	case errors.Is(err, dataset.ErrSchemaVersion):
		return fmt.Errorf("%w; read it with the rlrec version that wrote it", err)
	case errors.Is(err, dataset.ErrInconsistent), errors.As(err, &fe):
		return fmt.Errorf("%w; run 'rlrec verify ROOT' on that ROOT to check every file", err)
	case errors.Is(err, recorder.ErrDamagedLog):
		return fmt.Errorf("%w: run 'rlrec recover --salvage ROOT' on that ROOT (what the damaged records held is lost)", err)
	case errors.Is(err, recorder.ErrCorruptJournal):
		return fmt.Errorf("%w ('rlrec recover ROOT', then 'rlrec verify ROOT')", err)
	case errors.Is(err, recorder.ErrRecordingFailed):
		return fmt.Errorf("%w (run 'rlrec recover ROOT')", err)
	}
	return err
}

// cliWords words the remedies that library fixes ask for (package
// findings) as the command to run.
func cliWords(a findings.Action) string {
	switch a.Remedy {
	case findings.Recover:
		return fmt.Sprintf("run 'rlrec recover %s'", a.Root)
	case findings.Salvage:
		return fmt.Sprintf("run 'rlrec recover --salvage %s'", a.Root)
	case findings.Verify:
		return fmt.Sprintf("run 'rlrec verify %s'", a.Root)
	case findings.Stats:
		return fmt.Sprintf("'rlrec stats %s --session %s --env %s'", a.Root, a.Recording.SessionID, a.Recording.EnvID)
	}
	return findings.APIWords(a)
}
