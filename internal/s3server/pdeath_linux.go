package s3server

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the kernel kill the server when the process that
// started it dies.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
