//go:build unix

package pgtest

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in a process group of its own.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
