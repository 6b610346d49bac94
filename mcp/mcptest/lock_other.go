//go:build !unix

package mcptest

// lockDir does not lock here: concurrent installs are a Unix CI concern.
func lockDir(string) (func(), error) { return func() {}, nil }
