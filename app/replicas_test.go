package app

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// Telegram gives updates to one getUpdates consumer: a second replica on
// the same PostgreSQL refuses to poll, says why, and polls once the
// first is gone.
func TestOnlyOneReplicaPollsTelegram(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dsn := storetest.PostgresDSN(t)
	fake := telegramtest.NewServer(t)
	path := b.writeConfigFor(t, "postgres", dsn, fmt.Sprintf(`adapters:
  web: {enabled: false}
  telegram:
    token: "%s"
    api_url: "%s"
`, fake.Token(), fake.URL()))
	cfg, err := config.Load(path, b.lookup)
	require.NoError(t, err)
	replica := func() (*app, *coretest.Logs, error) {
		logs := &coretest.Logs{}
		a, err := buildApp(context.Background(), cfg, logs.Logger(), appOptions{
			wantAdapter: func(_ string, enabled bool) bool { return enabled },
		})
		require.NoError(t, err)
		return a, logs, a.start(context.Background())
	}
	first, _, err := replica()
	require.NoError(t, err)
	second, logs, err := replica()
	require.ErrorContains(t, err, "another replica already holds telegram-polling:")
	require.ErrorContains(t, err, "mode: webhook")
	require.NotContains(t, err.Error(), fake.Token(), "the token is not in the lock's name")
	require.NotContains(t, logs.String(), fake.Token())
	require.NoError(t, second.stop())

	require.NoError(t, first.stop())
	third, _, err := replica()
	require.NoError(t, err, "the lock went with the first replica")
	require.NoError(t, third.stop())
}

// A replica listens once for all its bots, and work another replica
// queued wakes the bot it is for: with a clock that never moves, no poll
// ever looks, so bob answers only because the notification named him.
func TestWorkQueuedElsewhereWakesItsBot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("re: " + r.LastUserMessage()) })
	dsn := storetest.PostgresDSN(t)
	tgAda := telegramtest.NewServer(t, telegramtest.WithToken("333333:TEST-token-ada"), telegramtest.WithBotUser(333333, "ada_test_bot"))
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("444444:TEST-token-bob"), telegramtest.WithBotUser(444444, "bob_test_bot"))
	// Telegram's pace (30 messages a second, one a second to a chat)
	// waits on the clock, which this test never moves.
	bob := fmt.Sprintf("  - id: bob\n    adapters:\n      web: {enabled: false}\n      telegram: {token: %q, api_url: %q, "+
		"send_rate: {per_second: 0, per_chat_per_second: 0}}\n", tgBob.Token(), tgBob.URL())
	path := b.writeConfigFor(t, "postgres", dsn, "runs:\n  debounce: 0s\nbots:\n"+telegramBot("ada", tgAda)+bob)
	cfg, err := config.Load(path, b.lookup)
	require.NoError(t, err)
	clock := coretest.NewClock(time.Now())
	logs := &coretest.Logs{}
	a, err := buildApp(context.Background(), cfg, logs.Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled },
		clock:       clock,
	})
	require.NoError(t, err)
	require.NoError(t, a.start(context.Background()))
	t.Cleanup(func() { require.NoError(t, a.stop()) })

	// Ben starts a chat with bob (Telegram delivers only to those who did).
	ben := telegramtest.User{ID: 5151, FirstName: "Ben"}
	tgBob.SendPrivate(ben, "hi")
	require.Equal(t, "re: hi", tgBob.WaitSent(t, ben.ID, 1, waitFor)[0].Text)

	// Another replica takes in Ben's next DMs to bob and queues their
	// turns.
	other, err := store.Open(context.Background(), store.Options{Driver: store.DriverPostgres, DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	bobs := other.ForBot("bob")
	settled := func() {
		t.Helper()
		require.Eventually(t, func() bool {
			convs, err := bobs.Conversations(context.Background(), 10, 0)
			if err != nil || len(convs) != 1 {
				return false
			}
			runs, err := bobs.Runs(context.Background(), convs[0].ID)
			return err == nil && !slices.ContainsFunc(runs, func(r core.Run) bool { return r.Status != core.RunSucceeded })
		}, waitFor, 10*time.Millisecond, "bob's runs did not all succeed")
	}
	queue := func(text string) {
		t.Helper()
		_, err := bobs.RecordInbound(context.Background(), core.InboundRecord{Platform: telegram.Platform,
			ChannelThreadID: "5151", ChannelUserID: "5151", Text: text, Now: clock.Now(), PlanRun: true})
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	// The first may be found by the wake-up naming no bot that the
	// listener gives once it listens; the second, queued once bob is
	// idle again, only by the notification that names bob.
	settled()
	queue("are you there, bob?")
	require.Equal(t, "re: are you there, bob?", tgBob.WaitSent(t, ben.ID, 2, waitFor)[1].Text)
	settled()
	queue("and now?")
	require.Equal(t, "re: and now?", tgBob.WaitSent(t, ben.ID, 3, waitFor)[2].Text)
	require.Empty(t, tgAda.AllSent(), "ada's platform got nothing")
}
