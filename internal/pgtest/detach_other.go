//go:build !unix

package pgtest

import "os/exec"

// detach leaves cmd in the test's process group.
func detach(*exec.Cmd) {}
