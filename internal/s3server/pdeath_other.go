//go:build !linux

package s3server

import "os/exec"

// setParentDeath does nothing where the kernel has no parent death signal:
// Stop and the test's cleanup end the server.
func setParentDeath(cmd *exec.Cmd) {}
