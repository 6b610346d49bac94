package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

// retention.messages through the bot, on a clock the test moves: a month
// and a day later the first exchange is deleted in the background, the
// newer one kept; the config says the duration in days.
func TestRetentionDeletesOldMessages(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "retention:\n  messages: 30d\n")
	c.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Noted.") })
	c.say(t, "the first thing I said", 1)
	c.advance(t, 20*24*time.Hour)
	c.clock.WaitForTimers(t, idleTimers+1, waitFor)
	c.say(t, "something newer", 2)
	texts := func() []string {
		var out []string
		for _, m := range c.stored(t) {
			out = append(out, m.Content)
		}
		return out
	}
	require.Contains(t, texts(), "the first thing I said", "20 days: kept")
	c.advance(t, 11*24*time.Hour)
	// Once its timer is armed again, the retention loop has done its round.
	c.clock.WaitForTimers(t, idleTimers+1, waitFor)
	require.NotContains(t, texts(), "the first thing I said", "31 days: the first exchange deleted")
	require.Contains(t, texts(), "something newer")
	require.Contains(t, c.logs.String(), `msg="retention: old messages deleted" component=retention messages=2 older_than=720h0m0s`)
}
