//go:build !linux

package mcp

import "os/exec"

// setProcAttrs does nothing here: process groups and the parent-death
// signal are set up on Linux only. Closing the session still ends the
// server itself (stdin closed, then SIGTERM, then kill).
func setProcAttrs(*exec.Cmd) {}

// signalGroup does nothing here (see setProcAttrs).
func signalGroup(int, bool) {}
