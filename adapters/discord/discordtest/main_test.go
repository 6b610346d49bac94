package discordtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: gateway
// connections, their writers and discordgo sessions must all be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
