package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// rlrecBinary builds the rlrec command once per test run and returns its
// path.
func rlrecBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "rlrec-interop-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "rlrec")
		build := exec.Command("go", "build", "-o", binPath, "./cmd/rlrec")
		build.Dir = ".." // the rlrec module
		if out, err := build.CombinedOutput(); err != nil {
			binErr = &buildError{err: err, out: string(out)}
		}
	})
	if binErr != nil {
		t.Fatalf("go build ./cmd/rlrec: %v", binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func cleanupBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}
