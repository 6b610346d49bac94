//go:build linux

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts the server in a process group of its own, so that
// signalGroup reaches its children too, and has the kernel kill it if
// Parley dies without stopping it.
func setProcAttrs(cmd *exec.Cmd) {
	// Pdeathsig fires when the thread that started the child exits; Go
	// never ends its threads unless a goroutine locked to one exits, which
	// this package does not do.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends SIGTERM (or, with force, SIGKILL) to the process group
// led by pid. A group that is already gone is not an error.
func signalGroup(pid int, force bool) {
	sig := syscall.SIGTERM
	if force {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
