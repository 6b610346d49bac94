//go:build linux || darwin

package store

import (
	"fmt"
	"syscall"
)

// writable reports why the process may not write path, as the kernel
// says (root too is refused on a read-only file system).
func writable(path string) error {
	const wOK = 2
	return syscall.Access(path, wOK)
}

// freeSpace is ", N free" for the file system holding dir, or "" when
// unknown.
func freeSpace(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	return fmt.Sprintf(" (%s free)", bytesText(uint64(st.Bavail)*uint64(st.Bsize)))
}
