package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine"
)

// BenchmarkTurnBots is BenchmarkTurn's load (32 conversations, each
// waiting for its reply before the next message, an instant model) with
// the conversations spread over 1 or 10 bots in one process: a
// dispatcher each on its own view of one store, sharing the process's
// owner name, as `parley run` runs them. Issue 35's target: 10 bots
// within 10 % of one.
//
//	go test -run '^$' -bench BenchmarkTurnBots -benchtime 4000x -count 3 ./engine/
func BenchmarkTurnBots(b *testing.B) {
	for _, bots := range []int{1, 10} {
		b.Run(fmt.Sprintf("%d-bots", bots), func(b *testing.B) { turnsOnBots(b, bots) })
	}
}

func turnsOnBots(b *testing.B, bots int) {
	ctx := context.Background()
	st := openStore(b)
	const convs = 32
	owner := engine.NewOwnerID()
	adapters := make([]*signalAdapter, bots)
	for i := range adapters {
		ad := &signalAdapter{waiters: map[string]chan struct{}{}}
		adapters[i] = ad
		d, err := engine.New(engine.Config{
			Store: st.ForBot(fmt.Sprintf("bot%d", i)), LLM: instantLLM{}, Plugins: []core.Plugin{personaLayer{text: "You are a benchmark."}},
			Adapters: []core.Adapter{ad}, MaxTurns: 8, Owner: owner,
		})
		require.NoError(b, err)
		require.NoError(b, ad.Start(ctx, d))
		require.NoError(b, d.Start(ctx))
		defer func() { require.NoError(b, d.Stop(ctx)) }()
	}
	for c := range convs {
		adapters[c%bots].waiters[fmt.Sprintf("c%d", c)] = make(chan struct{}, 1)
	}
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for c := range convs {
		thread, ad := fmt.Sprintf("c%d", c), adapters[c%bots]
		wg.Go(func() {
			for range work {
				if err := ad.h.HandleInbound(ctx, core.InboundMessage{
					Platform: web, ChannelThreadID: thread, ChannelUserID: thread, Text: "hello there", Direct: true,
				}); err != nil {
					b.Error(err)
					return
				}
				<-ad.waiters[thread]
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
}
