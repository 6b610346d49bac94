package app

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// A turn held back by llm.requests_per_minute still shows the user that
// the bot is writing: the wait is the model provider's, not silence.
func TestAUserWaitingOnPacingSeesTyping(t *testing.T) {
	t.Parallel()
	c := &companion{clockedBot: clockedBot{testBundle: setup(t), clock: coretest.NewClock(companionT0)}, fake: telegramtest.NewServer(t),
		user: telegramtest.User{ID: 777, FirstName: "Ada"}}
	bob := telegramtest.User{ID: 778, FirstName: "Bob"}
	// One request a minute, a burst of one: Ada's turn spends it, Bob's
	// waits a minute on the bot's clock.
	c.llmExtra = "  requests_per_minute: 1"
	c.cfgPath = c.writeConfig(t, fmt.Sprintf(`bot:
  timezone: Europe/Berlin
adapters:
  web: {enabled: false}
  telegram:
    token: "%s"
    api_url: "%s"
runs:
  debounce: 0s
plugins:
  memory: {fact_every: 1000h, summary_every: 1000h}
`, c.fake.Token(), c.fake.URL()))
	c.logs = &coretest.Logs{}
	c.boot(t)
	t.Cleanup(func() {
		require.NoError(t, c.app.stop())
		if t.Failed() {
			t.Logf("the bot's log:\n%s", c.logs)
		}
	})
	c.settle(t)
	c.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("Hello, " + r.LastUserMessage()) })

	sent := c.say(t, "Ada", 1)
	require.Equal(t, "Hello, Ada", sent[0].Plain)

	c.fake.SendPrivate(bob, "Bob")
	// Every idle loop sleeps on the clock, and so do Bob's model request
	// and his turn's typing, which shows once the turn has run 400 ms.
	c.clock.WaitForTimers(t, idleTimers+2, waitFor)
	c.clock.Advance(400 * time.Millisecond)
	require.Eventually(t, func() bool { return slices.Contains(c.fake.ChatActions(bob.ID), "typing") },
		waitFor, 2*time.Millisecond, "Bob saw no typing while his turn waited")
	require.Len(t, c.model.Requests(), 1, "Bob's request waits for the budget")
	require.Empty(t, c.fake.Sent(bob.ID))

	c.clock.Advance(time.Minute)
	sent = c.fake.WaitSent(t, bob.ID, 1, waitFor)
	require.Equal(t, "Hello, Bob", sent[0].Plain)
	require.Len(t, c.model.Requests(), 2)
	c.settle(t)
}
