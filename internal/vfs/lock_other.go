//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package vfs

import (
	"errors"
	"fmt"
	"io"
)

func lockFile(name string) (io.Closer, error) {
	return nil, fmt.Errorf("lock %s: %w", name, errors.ErrUnsupported)
}
