package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/engine/promises"
)

// instantLLM answers at once, in-process, so the benchmark measures the
// dispatcher and the store.
type instantLLM struct{}

func (instantLLM) Run(_ context.Context, req llm.Request) (llm.Result, error) {
	return llm.Result{Content: "ok", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11}, Rounds: 1}, nil
}

// signalAdapter wakes the sender of each conversation when its reply is sent.
type signalAdapter struct {
	mu      sync.Mutex
	h       core.InboundHandler
	waiters map[string]chan struct{}
}

func (a *signalAdapter) Name() string            { return "bench" }
func (a *signalAdapter) Platform() core.Platform { return web }
func (a *signalAdapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: 4096}
}
func (a *signalAdapter) Start(_ context.Context, h core.Host) error {
	a.h = h
	return nil
}
func (a *signalAdapter) Stop(context.Context) error { return nil }
func (a *signalAdapter) Send(_ context.Context, m core.OutboundMessage) (core.SendResult, error) {
	a.mu.Lock()
	ch := a.waiters[m.ChannelThreadID]
	a.mu.Unlock()
	ch <- struct{}{}
	return core.SendResult{PlatformMessageIDs: []string{"p"}}, nil
}

// BenchmarkTurn measures whole turns: an inbound DM stored, a run planned
// and claimed, the prompt built from history, an instant model answer, the
// reply sent and stored, the run completed. 32 conversations talk at once,
// each waiting for its reply before writing again.
func BenchmarkTurn(b *testing.B) {
	benchTurns(b, instantLLM{}, nil)
}

// replyLLM answers at once with its text.
type replyLLM string

func (r replyLLM) Run(_ context.Context, req llm.Request) (llm.Result, error) {
	return llm.Result{Content: string(r), Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 80, TotalTokens: 90}, Rounds: 1}, nil
}

// BenchmarkTurnPromiseCheck is BenchmarkTurn with a 400-character reply
// that promises nothing, without and with bot.promise_check: the time
// the check adds to such a turn (target ≤ 0.1 ms).
func BenchmarkTurnPromiseCheck(b *testing.B) {
	const reply = "That sounds like a really full week, and it makes sense that you feel tired. " +
		"Maybe tonight you could keep things simple: something warm to eat, no screens for the last hour, " +
		"and an early night. Tomorrow is Friday, so the weekend is close. If the report is what weighs on you most, " +
		"breaking it into two smaller pieces often helps. What part of it feels hardest right now?"
	b.Run("off", func(b *testing.B) { benchTurns(b, replyLLM(reply), nil) })
	b.Run("on", func(b *testing.B) { benchTurns(b, replyLLM(reply), promises.New(promises.Config{})) })
}

// benchTurns runs BenchmarkTurn's load with model m and promise check p.
func benchTurns(b *testing.B, m core.LLM, p *promises.Checker) {
	ctx := context.Background()
	st := openStore(b)
	const convs = 32
	ad := &signalAdapter{waiters: map[string]chan struct{}{}}
	for i := range convs {
		ad.waiters[fmt.Sprintf("c%d", i)] = make(chan struct{}, 1)
	}
	d, err := engine.New(engine.Config{
		Store: st, LLM: m, Plugins: []core.Plugin{personaLayer{text: "You are a benchmark."}},
		Adapters: []core.Adapter{ad}, MaxTurns: 8, Promises: p,
	})
	require.NoError(b, err)
	require.NoError(b, ad.Start(ctx, d))
	require.NoError(b, d.Start(ctx))
	defer func() { require.NoError(b, d.Stop(ctx)) }()

	var wg sync.WaitGroup
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range convs {
		thread := fmt.Sprintf("c%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := ad.h.HandleInbound(ctx, core.InboundMessage{
					Platform: web, ChannelThreadID: thread, ChannelUserID: thread,
					Text: "hello there", Direct: true,
				}); err != nil {
					b.Error(err)
					return
				}
				<-ad.waiters[thread]
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
}

// BenchmarkConversations is issue 3's load: 1,000 conversations write 10
// messages each, every one waiting for its reply before the next, with an
// instant model, debounce 0 and the queue policy. It reports turns/s and
// the 50th and 99th percentile time from a message to its reply.
func BenchmarkConversations(b *testing.B) {
	const convs, perConv = 1000, 10
	ctx := context.Background()
	st := openStore(b)
	ad := &signalAdapter{waiters: map[string]chan struct{}{}}
	for i := range b.N {
		for c := range convs {
			ad.waiters[fmt.Sprintf("i%d-c%d", i, c)] = make(chan struct{}, 1)
		}
	}
	d, err := engine.New(engine.Config{
		Store: st, LLM: instantLLM{}, Plugins: []core.Plugin{personaLayer{text: "You are a benchmark."}},
		Adapters: []core.Adapter{ad}, MaxTurns: 8, DuringGeneration: core.BusyQueue,
	})
	require.NoError(b, err)
	require.NoError(b, ad.Start(ctx, d))
	require.NoError(b, d.Start(ctx))
	defer func() { require.NoError(b, d.Stop(ctx)) }()

	latencies := make([]time.Duration, 0, b.N*convs*perConv)
	var mu sync.Mutex
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		var wg sync.WaitGroup
		for c := range convs {
			thread := fmt.Sprintf("i%d-c%d", i, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := make([]time.Duration, 0, perConv)
				for m := range perConv {
					sent := time.Now()
					if err := ad.h.HandleInbound(ctx, core.InboundMessage{
						Platform: web, ChannelThreadID: thread, ChannelUserID: thread,
						Text: fmt.Sprintf("message %d", m), Direct: true,
					}); err != nil {
						b.Error(err)
						return
					}
					<-ad.waiters[thread]
					mine = append(mine, time.Since(sent))
				}
				mu.Lock()
				latencies = append(latencies, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "turns/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
