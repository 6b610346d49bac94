package telegramtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: held long
// polls, webhook deliveries and bot clients must all be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
