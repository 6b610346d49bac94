//go:build !unix

package httpapi

// openFileLimit is the process's open-file limit (0 when unknown).
func openFileLimit() int { return 0 }
