// Package diskfault stands in for a full disk where a test cannot mount a
// small file system to fill (no CAP_SYS_ADMIN): the store and the inbound
// spool each take an optional *Disk, and while it is full their writes
// fail as they would on a real full disk. It lives under internal so that
// only Parley's own tests can hand one in; in production it is nil and
// costs one nil check a write.
package diskfault

import (
	"io/fs"
	"sync/atomic"
	"syscall"
)

// Disk is a disk that a test can fill and free. A nil *Disk is never full.
type Disk struct {
	full atomic.Bool
}

// SetFull fills the disk (true) or frees it (false).
func (d *Disk) SetFull(full bool) { d.full.Store(full) }

// Full reports whether the disk is full.
func (d *Disk) Full() bool { return d != nil && d.full.Load() }

// Write returns the error a write of op on path gets while the disk is
// full (ENOSPC, as the kernel reports it), nil otherwise.
func (d *Disk) Write(op, path string) error {
	if !d.Full() {
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: syscall.ENOSPC}
}
