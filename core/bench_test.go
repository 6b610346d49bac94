package core_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
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
func (a *signalAdapter) Platform() core.Platform { return core.PlatformWeb }
func (a *signalAdapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: 4096}
}
func (a *signalAdapter) Start(_ context.Context, h core.InboundHandler) error {
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
	ctx := context.Background()
	st := openStore(b)
	const convs = 32
	ad := &signalAdapter{waiters: map[string]chan struct{}{}}
	for i := range convs {
		ad.waiters[fmt.Sprintf("c%d", i)] = make(chan struct{}, 1)
	}
	d, err := core.NewDispatcher(core.DispatcherConfig{
		Store: st, LLM: instantLLM{}, Plugins: []core.Plugin{personaLayer{text: "You are a benchmark."}},
		Adapters: []core.Adapter{ad}, Workers: 8,
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
					Platform: core.PlatformWeb, ChannelThreadID: thread, ChannelUserID: thread,
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
