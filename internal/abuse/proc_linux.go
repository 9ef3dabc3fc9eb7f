package abuse

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd when the harness's process ends,
// however it ends: an attacked server must not outlive its test.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
