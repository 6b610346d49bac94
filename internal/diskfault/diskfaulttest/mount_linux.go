package diskfaulttest

import "syscall"

// mount mounts a tmpfs of size on dir and returns how to unmount it.
func mount(dir, size string) (func() error, error) {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		return nil, err
	}
	return func() error { return syscall.Unmount(dir, syscall.MNT_DETACH) }, nil
}
