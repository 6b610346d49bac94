//go:build !linux

package turns

// defunct is false where /proc does not tell: a zombie predecessor's
// runs wait for runs.stale_after.
func defunct(int) bool { return false }
