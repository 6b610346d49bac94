package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store/storetest"
)

// webhookBot is a bots: entry for fake in webhook mode, unpaced.
func webhookBot(id string, fake *telegramtest.Server) string {
	return fmt.Sprintf("  - id: %s\n    adapters:\n      web: {enabled: false}\n      telegram: {token: %q, api_url: %q, mode: webhook, "+
		"webhook_secret: s3cret, send_rate: {per_second: 0, per_chat_per_second: 0}}\n", id, fake.Token(), fake.URL())
}

// Two replicas of `parley run` on one PostgreSQL serve two bots, updates
// coming to either replica as a load balancer spreads Telegram's webhook
// calls. Ada's twelve users write at once, then bob's one: each replica
// lets one model request go at a time (llm.max_concurrency: 1), and bob's
// request goes with the first of ada's queued, not after her backlog.
// Every user is answered once.
func TestReplicasServeBusyAndQuietBotsFairly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmExtra = "  max_concurrency: 1"
	dsn := storetest.PostgresDSN(t)
	// Each request is held until the test lets it go, the oldest first.
	var mu sync.Mutex
	var order []string
	var held []chan struct{}
	over := make(chan struct{}) // closed as the test ends: nothing stays held
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		release := make(chan struct{})
		mu.Lock()
		order = append(order, r.LastUserMessage())
		held = append(held, release)
		mu.Unlock()
		select {
		case <-release:
		case <-over:
		}
		return llmtest.Text("re: " + r.LastUserMessage())
	})
	// letGo releases the i-th request once it reached the responder: the
	// fake counts a request as it arrives, a moment before the responder
	// holds it.
	letGo := func(i int) {
		t.Helper()
		var release chan struct{}
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			if i < len(held) {
				release = held[i]
			}
			return release != nil
		}, waitFor, time.Millisecond, "request %d never reached the model", i)
		close(release)
	}
	tgAda := telegramtest.NewServer(t, telegramtest.WithToken("555555:TEST-token-ada"), telegramtest.WithBotUser(555555, "ada_test_bot"))
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("666666:TEST-token-bob"), telegramtest.WithBotUser(666666, "bob_test_bot"))
	cfg := b.writeConfigFor(t, "postgres", dsn, "runs:\n  debounce: 0s\nbots:\n"+webhookBot("ada", tgAda)+webhookBot("bob", tgBob))
	replicas := []*running{b.start(t, cfg), b.start(t, cfg)}
	t.Cleanup(func() { close(over) })

	post := func(r *running, bot string, update any) {
		body, err := json.Marshal(update)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/webhooks/"+bot+"/telegram", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	const adaUsers = 12
	for i := range adaUsers {
		post(replicas[i%2], "ada", tgAda.SendPrivate(telegramtest.User{ID: int64(7000 + i), FirstName: "A"}, fmt.Sprintf("ada user %d", i)))
	}
	// One request in flight per replica, the other ten of ada's waiting
	// for a slot; then bob's user writes, to either replica, and his
	// request waits too, in whichever replica took his turn.
	b.model.WaitRequests(t, 2, waitFor)
	waitQueues := func(bot string, n int) {
		t.Helper()
		require.Eventually(t, func() bool {
			sum := 0
			for _, r := range replicas {
				sum += modelQueue(t, r.addr, bot)
			}
			return sum == n
		}, waitFor, 5*time.Millisecond, "%s's requests waiting: want %d", bot, n)
	}
	waitQueues("ada", adaUsers-2)
	post(replicas[1], "bob", tgBob.SendPrivate(telegramtest.User{ID: 8000, FirstName: "Ben"}, "bob's user"))
	waitQueues("bob", 1)

	for i := range adaUsers + 1 {
		letGo(i)
		if i+2 < adaUsers+1 {
			b.model.WaitRequests(t, i+3, waitFor)
		}
	}
	tgBob.WaitSent(t, 8000, 1, waitFor)
	for i := range adaUsers {
		tgAda.WaitSent(t, int64(7000+i), 1, waitFor)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, order, adaUsers+1, "each user's turn asked the model once")
	bob := slices.IndexFunc(order, func(s string) bool { return strings.HasPrefix(s, "bob") })
	// Released oldest first, the replicas' requests alternate: bob's
	// replica lets its request in flight go, then one of ada's queued
	// there, then bob's (the sixth at most), not ada's other four first.
	require.LessOrEqual(t, bob, 5, "bob's request waited for at most one of ada's queued in its replica: %q", order)
}

// modelQueue is bot's model requests waiting for their turn, as /metrics
// at addr reports them.
func modelQueue(t *testing.T, addr, bot string) int {
	t.Helper()
	prefix := fmt.Sprintf("parley_llm_requests_waiting{bot=%q} ", bot)
	for line := range strings.SplitSeq(scrape(t, addr), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}
