//go:build !linux

package diskfaulttest

import "errors"

func mount(string, string) (func() error, error) {
	return nil, errors.New("tmpfs is mounted only on Linux")
}
