package main

import (
	"errors"
	"fmt"

	"github.com/rlrec/rlrec/dataset"
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
	}
	return err
}
