package slacktest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: socket
// connections, the Events API worker and slack-go clients must all be
// gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
