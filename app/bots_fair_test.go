package app

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run: two bots on one model account keep its
// llm.max_concurrency together (never more in flight than it allows,
// not that many each), and bob's one user waits for his turn among
// ada's five users' requests, not behind all of them.
func TestBotsOnOneAccountTakeTurnsForTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmExtra = "  max_concurrency: 1"
	var mu sync.Mutex
	var order []string
	inFlight, most := 0, 0
	gate := make(chan struct{})
	over := make(chan struct{}) // closed as the test ends: nothing stays held
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		order = append(order, r.LastUserMessage())
		mu.Unlock()
		select {
		case <-gate:
		case <-over:
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return llmtest.Text("re: " + r.LastUserMessage())
	})
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	cfg := b.writeConfig(t, "runs:\n  debounce: 0s\nbots:\n"+telegramBot("ada", tgAda)+telegramBot("bob", tgBob))
	r := b.start(t, cfg)
	t.Cleanup(func() { close(over) })

	for i := range 5 {
		tgAda.SendPrivate(telegramtest.User{ID: int64(7000 + i), FirstName: fmt.Sprintf("A%d", i)}, fmt.Sprintf("ada user %d", i))
	}
	// One of ada's requests at the model, her other four waiting for the
	// slot; then bob's user writes, and his request waits too.
	b.model.WaitRequests(t, 1, waitFor)
	waitModelQueue(t, r.addr, "ada", 4)
	tgBob.SendPrivate(telegramtest.User{ID: 8000, FirstName: "Ben"}, "bob's user")
	waitModelQueue(t, r.addr, "bob", 1)

	for i := range 6 {
		gate <- struct{}{}
		if i < 5 {
			b.model.WaitRequests(t, i+2, waitFor)
		}
	}
	tgBob.WaitSent(t, 8000, 1, waitFor)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, most, "the account allows one request in flight, for both bots together")
	bob := slices.IndexFunc(order, func(s string) bool { return strings.HasPrefix(s, "bob") })
	require.Equal(t, 2, bob, "bob's request went after the one of ada's in flight and her next, not her backlog: %q", order)
}

// waitModelQueue waits until bot's model requests waiting for their turn
// are n, as /metrics at addr reports them.
func waitModelQueue(t *testing.T, addr, bot string, n int) {
	t.Helper()
	want := fmt.Sprintf("parley_llm_requests_waiting{bot=%q} %d\n", bot, n)
	require.Eventually(t, func() bool { return strings.Contains(scrape(t, addr), want) }, waitFor, 5*time.Millisecond,
		"want %s", want)
}
