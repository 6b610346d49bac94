package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

const minuteNotice = "You're writing faster than I can keep up with (more than 2 messages a minute). Give me a minute, then write again."

// requireHeld checks the stored messages of a web client: the user
// messages with want are held by that limit, the others not; and the
// notices sent, by limit.
func requireHeld(t *testing.T, msgs []core.Message, want map[string]string) (notices []string) {
	t.Helper()
	for _, m := range msgs {
		switch {
		case m.Role == core.RoleUser:
			got, _ := m.Metadata["limited"].(string)
			require.Equal(t, want[m.Content], got, "%q", m.Content)
		case m.Metadata["limit_notice"] != nil:
			require.Equal(t, core.SourceSystem, m.Source)
			notices = append(notices, m.Metadata["limit_notice"].(string))
		}
	}
	return notices
}

// TestPerUserLimitsOnTheWebChat: over messages_per_minute the messages
// are stored but call no model and the user reads one notice; a command
// still answers; tokens_per_day counts what the model reported; an exempt
// user is never held; /metrics counts what was held.
func TestPerUserLimitsOnTheWebChat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, `bot:
  limits:
    messages_per_minute: 2
    tokens_per_day: 1000
    exempt: ["web:boss-0001"]
runs:
  debounce: 0s
`))
	require.Contains(t, scrape(t, r.addr), `parley_limited_messages_total{bot="default",limit="messages_per_minute"} 0`,
		"the series exist from the start")

	const ann = "ann-00001"
	events := openEvents(t, r.addr, ann)
	b.model.Enqueue(llmtest.Text("Hello Ann.").WithUsage(10, 5))
	postMessage(t, r.addr, ann, "hi")
	require.Equal(t, "Hello Ann.", events.nextMessage(t))
	b.model.Enqueue(llmtest.Text("Fine, thanks.").WithUsage(10, 5))
	postMessage(t, r.addr, ann, "how are you?")
	require.Equal(t, "Fine, thanks.", events.nextMessage(t))

	for i := 1; i <= 3; i++ {
		postMessage(t, r.addr, ann, fmt.Sprintf("spam %d", i))
	}
	require.Equal(t, minuteNotice, events.nextMessage(t))
	postMessage(t, r.addr, ann, "/help")
	require.Contains(t, events.nextMessage(t), "/reminders", "a command answers while the user is held, and the next thing the user read after the notice")
	require.Len(t, b.model.Requests(), 2, "no model call for a held message or a command")

	const tok = "tok-00001"
	tokEvents := openEvents(t, r.addr, tok)
	b.model.Enqueue(llmtest.Text("A long essay.").WithUsage(1200, 300))
	postMessage(t, r.addr, tok, "write me an essay")
	require.Equal(t, "A long essay.", tokEvents.nextMessage(t))
	// The run is stored with its tokens just after its reply is sent.
	require.Eventually(t, func() bool {
		st := b.openStoreFile(t)
		conv, err := st.ConversationByThread(context.Background(), web.Platform, tok)
		require.NoError(t, err)
		runs, err := st.Runs(context.Background(), conv.ID)
		require.NoError(t, err)
		return len(runs) == 1 && runs[0].FinishedAt != nil
	}, waitFor, 10*time.Millisecond)
	postMessage(t, r.addr, tok, "and another")
	told := tokEvents.nextMessage(t)
	require.True(t, strings.HasPrefix(told, "You've reached the usage limit for 24 hours. I'll answer again after "), told)
	require.True(t, strings.HasSuffix(told, " tomorrow (UTC time)."), told)
	require.Len(t, b.model.Requests(), 3)

	// The exempt user writes as fast as they like.
	const boss = "boss-0001"
	bossEvents := openEvents(t, r.addr, boss)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Yes, boss.").WithUsage(900, 900) })
	for i := 1; i <= 4; i++ {
		postMessage(t, r.addr, boss, fmt.Sprintf("order %d", i))
		require.Equal(t, "Yes, boss.", bossEvents.nextMessage(t))
	}

	var metrics string
	require.Eventually(t, func() bool {
		metrics = scrape(t, r.addr)
		return strings.Contains(metrics, `parley_limited_messages_total{bot="default",limit="messages_per_minute"} 3`)
	}, waitFor, 10*time.Millisecond, "%s", metrics)
	require.Contains(t, metrics, `parley_limited_messages_total{bot="default",limit="tokens_per_day"} 1`)
	require.Contains(t, metrics, `parley_limited_messages_total{bot="default",limit="turns_per_day"} 0`)

	r.stop(t)
	notices := requireHeld(t, b.storedMessages(t, ann), map[string]string{
		"spam 1": core.LimitMessagesPerMinute, "spam 2": core.LimitMessagesPerMinute, "spam 3": core.LimitMessagesPerMinute})
	require.Equal(t, []string{core.LimitMessagesPerMinute}, notices, "one notice for the window")
	notices = requireHeld(t, b.storedMessages(t, tok), map[string]string{"and another": core.LimitTokensPerDay})
	require.Equal(t, []string{core.LimitTokensPerDay}, notices)
	require.Empty(t, requireHeld(t, b.storedMessages(t, boss), nil), "never held, never told")
	require.NotContains(t, r.stderr.String(), "DONOTLEAK")
}

// TestPerUserLimitsLiftOnTheBotsClock: on Telegram, with the clock the
// test moves, a held user is answered again once the window has passed,
// and is told when that is, in their zone.
func TestPerUserLimitsLiftOnTheBotsClock(t *testing.T) {
	t.Parallel()
	c := &companion{clockedBot: clockedBot{testBundle: setup(t), clock: coretest.NewClock(companionT0)}, fake: telegramtest.NewServer(t),
		user: telegramtest.User{ID: 777, FirstName: "Ada"}}
	c.cfgPath = c.writeConfig(t, fmt.Sprintf(`bot:
  timezone: Europe/Berlin
  limits: {messages_per_minute: 1, turns_per_day: 2, tokens_per_day: 0, exempt: []}
adapters:
  web: {enabled: false}
  telegram:
    token: "%s"
    api_url: "%s"
    send_rate: {per_second: 0, per_chat_per_second: 0}
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

	c.model.Enqueue(llmtest.Text("Good morning, Ada!"))
	c.say(t, "good morning", 1) // 10:00 in Berlin: the first turn
	sent := c.say(t, "are you there?", 2)
	require.Equal(t, "You're writing faster than I can keep up with (more than 1 message a minute). Give me a minute, then write again.",
		sent[1].Plain)
	require.Len(t, c.model.Requests(), 1)

	c.advance(t, time.Minute) // a minute after "are you there?": the window has room again
	c.model.Enqueue(llmtest.Text("I'm here."))
	sent = c.say(t, "hello?", 3)
	require.Equal(t, "I'm here.", sent[2].Plain)
	require.Equal(t, []string{"user:good morning", "assistant:Good morning, Ada!", "user:are you there?", "user:hello?"},
		roles(c.model.Requests()[1]), "the held message is read, the notice is not")

	c.advance(t, time.Minute)
	sent = c.say(t, "one more question", 4)
	require.Equal(t, "You've reached the limit of 2 replies in 24 hours. I'll answer again after 10:00 tomorrow (Europe/Berlin time).",
		sent[3].Plain)
	c.advance(t, 24*time.Hour-2*time.Minute) // 10:00 the next day
	c.model.Enqueue(llmtest.Text("Go ahead."))
	sent = c.say(t, "now?", 5)
	require.Equal(t, "Go ahead.", sent[4].Plain)
	require.Len(t, c.model.Requests(), 3)
}
