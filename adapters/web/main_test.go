package web_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: event
// stream handlers, pingers and test clients must all be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
