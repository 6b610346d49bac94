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
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		order = append(order, r.LastUserMessage())
		mu.Unlock()
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		return llmtest.Text("re: " + r.LastUserMessage())
	})
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	cfg := b.writeConfig(t, "runs:\n  debounce: 0s\nbots:\n"+telegramBot("ada", tgAda)+telegramBot("bob", tgBob))
	b.start(t, cfg)
	st := b.openStoreFile(t)
	running := func(id string) int {
		var n int
		require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM runs WHERE bot_id = ? AND status = 'running'`, id).Scan(&n).Error)
		return n
	}

	for i := range 5 {
		tgAda.SendPrivate(telegramtest.User{ID: int64(7000 + i), FirstName: fmt.Sprintf("A%d", i)}, fmt.Sprintf("ada user %d", i))
	}
	b.model.WaitRequests(t, 1, waitFor)
	// Ada's other four turns reach the model's queue; then bob's user
	// writes.
	require.Eventually(t, func() bool { return running("ada") == 5 }, waitFor, 5*time.Millisecond)
	tgBob.SendPrivate(telegramtest.User{ID: 8000, FirstName: "Ben"}, "bob's user")
	require.Eventually(t, func() bool { return running("bob") == 1 }, waitFor, 5*time.Millisecond)

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
	require.LessOrEqual(t, bob, 2, "bob's request went after at most two of ada's: %q", order)
}
