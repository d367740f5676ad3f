package interop

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the tests, or, when the test binary is started by
// TestCrashRecovery with crashChildEnv set, the recording child that the
// test kills.
func TestMain(m *testing.M) {
	if root := os.Getenv(crashChildEnv); root != "" {
		if err := crashChild(root); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	code := m.Run()
	cleanupFixture()
	cleanupBinary()
	os.Exit(code)
}
