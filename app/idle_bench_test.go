package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// idleBots is how many Telegram bots BenchmarkIdleBots runs at once.
const idleBots = 20

// BenchmarkIdleBots measures what an idle bot costs (issue 35's target:
// at most 1 MiB and a handful of goroutines per idle Telegram bot beyond
// its long poll): idleBots Telegram bots in one process, each with every
// plugin on by default, long-polling its own fake and doing nothing
// else. The live heap after a collection and the goroutines are read
// with the fakes alone, then with the bots started; the difference over
// idleBots is one bot's. Goroutines of the fakes' servers (one per
// connection) are left out by their stacks; their buffers per connection
// (a few KiB) count as the bot's.
//
//	go test -run '^$' -bench BenchmarkIdleBots -benchtime 1x ./app/
func BenchmarkIdleBots(b *testing.B) {
	for range b.N {
		var heap0 uint64
		var g0 int
		a := startIdleBots(b, func() { heap0, g0 = liveHeap(), botGoroutines() })
		heap1, g1 := liveHeap(), botGoroutines()
		if os.Getenv("PARLEY_IDLE_STACKS") != "" {
			dumpGoroutineKinds(b)
		}
		b.ReportMetric(float64(heap1-min(heap0, heap1))/idleBots/(1<<10), "heap-KiB/bot")
		b.ReportMetric(float64(g1-g0)/idleBots, "goroutines/bot")
		require.NoError(b, a.stop())
	}
}

// startIdleBots starts idleBots Telegram bots in one app, each
// long-polling a fake of its own, and returns once every bot polls;
// fakesUp runs once the fakes run, before the bots.
func startIdleBots(b *testing.B, fakesUp func()) *app {
	fakes := make([]*telegramtest.Server, idleBots)
	var sections strings.Builder
	for i := range fakes {
		fakes[i] = telegramtest.NewServer(b, telegramtest.WithToken(fmt.Sprintf("%d:idle-token", 700000+i)),
			telegramtest.WithBotUser(int64(700000+i), fmt.Sprintf("idle%d_bot", i)))
		fmt.Fprintf(&sections, "  - id: bot%d\n    adapters:\n      web: {enabled: false}\n      telegram: {token: %q, api_url: %q}\n",
			i, fakes[i].Token(), fakes[i].URL())
	}
	fakesUp()
	tb := setup(b)
	path := tb.writeConfig(b, "bots:\n"+sections.String())
	cfg, err := config.Load(path, tb.lookup)
	require.NoError(b, err)
	a, err := buildApp(context.Background(), cfg, (&coretest.Logs{}).Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled },
	})
	require.NoError(b, err)
	require.NoError(b, a.start(context.Background()))
	for _, f := range fakes {
		require.Eventually(b, func() bool { return f.Calls("getUpdates") >= 1 }, 30*time.Second, 10*time.Millisecond)
	}
	return a
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// botGoroutines counts the goroutines but those serving a fake's
// connections (net/http's server side).
func botGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if !bytes.Contains(g, []byte("net/http.(*conn).serve")) && !bytes.Contains(g, []byte("httptest.(*Server)")) &&
			!bytes.Contains(g, []byte("net/http.(*connReader).backgroundRead")) {
			n++
		}
	}
	return n
}

// dumpGoroutineKinds logs how many goroutines run each function, the
// first frame of ours in their stacks, to see what an idle bot keeps.
func dumpGoroutineKinds(b *testing.B) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	kinds := map[string]int{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		kind := "other"
		for _, l := range strings.Split(string(g), "\n") {
			if strings.Contains(l, "parleybot/parley/") && !strings.HasPrefix(l, "\t") {
				kind = l[:strings.LastIndex(l, "(")] // the call's arguments go
				break
			}
		}
		kinds[kind]++
	}
	for k, n := range kinds {
		b.Logf("%4d %s", n, k)
	}
}
