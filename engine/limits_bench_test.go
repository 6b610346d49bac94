package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/engine"
)

// BenchmarkInboundWithLimits measures what per-user limits add to an
// inbound message: SQLite, 32 conversations with 1,000 messages each of
// history, a message a second (each conversation's every 32 s), no turn
// run. Off: no query. Under: every limit set (30 messages a minute, 200
// turns, tokens), none reached: a conversation lookup and one read. Held
// (1 message a minute): stored without a run, the notice in force.
func BenchmarkInboundWithLimits(b *testing.B) {
	for _, c := range []struct {
		name   string
		limits core.UserLimits
	}{
		{"off", core.UserLimits{}},
		{"under", core.UserLimits{MessagesPerMinute: 30, TurnsPerDay: 200, TokensPerDay: 1 << 30}},
		{"held", core.UserLimits{MessagesPerMinute: 1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			st := openStore(b)
			const convs = 32
			// The history, two hours before.
			seedClock := coretest.NewClock(limitsT0.Add(-2 * time.Hour))
			seed, err := engine.New(engine.Config{Store: st, LLM: instantLLM{}, Clock: seedClock,
				Adapters: []core.Adapter{coretest.NewAdapter(web)}})
			require.NoError(b, err)
			for i := range convs * 1000 {
				require.NoError(b, seed.HandleInbound(ctx, core.InboundMessage{Platform: web, ChannelThreadID: fmt.Sprintf("c%d", i%convs),
					ChannelUserID: fmt.Sprintf("c%d", i%convs), Text: "hello", Direct: true}))
			}
			clock := coretest.NewClock(limitsT0)
			ad := coretest.NewAdapter(web)
			d, err := engine.New(engine.Config{Store: st, LLM: instantLLM{}, Adapters: []core.Adapter{ad},
				Clock: clock, Limits: c.limits})
			require.NoError(b, err)
			require.NoError(b, ad.Start(ctx, d))
			i := 0
			for b.Loop() {
				thread := fmt.Sprintf("c%d", i%convs)
				i++
				clock.Advance(time.Second)
				if err := d.HandleInbound(ctx, core.InboundMessage{Platform: web, ChannelThreadID: thread, ChannelUserID: thread,
					Text: "hello", Direct: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if c.name == "held" {
				// A message every 32 s: a notice every other one at most.
				require.LessOrEqual(b, len(ad.Sent()), convs*(i/convs/2+1), "a notice a minute at most")
			}
		})
	}
}
