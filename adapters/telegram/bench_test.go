package telegram_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/store/storetest"
)

// benchUsers talk at once, each waiting for its reply before writing again.
const benchUsers = 64

// drive plays n DMs from benchUsers users against fake and returns how long
// it took until every one was answered.
func drive(b *testing.B, fake *telegramtest.Server, n int, base int64) time.Duration {
	b.Helper()
	per := (n + benchUsers - 1) / benchUsers
	start := time.Now()
	var wg sync.WaitGroup
	for u := range benchUsers {
		user := telegramtest.User{ID: base + int64(u), FirstName: fmt.Sprint("User", u)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				fake.SendPrivate(user, fmt.Sprintf("message %d", i))
				fake.WaitSent(b, user.ID, i+1, 30*time.Second)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// echoLLM answers at once with the user's last message.
type echoLLM struct{}

func (echoLLM) Run(_ context.Context, req llm.Request) (llm.Result, error) {
	return llm.Result{Content: "echo: " + req.Messages[len(req.Messages)-1].Content, Rounds: 1}, nil
}

// BenchmarkVersusEchoBot runs the same DM load, in the same run and against
// the same fake Bot API, through a bare go-telegram/bot echo bot and through
// Parley end to end (telegram adapter, dispatcher, SQLite store, an instant
// in-process model). It reports both rates and their ratio (target ≥ 0.8).
func BenchmarkVersusEchoBot(b *testing.B) {
	ctx := context.Background()
	n := max(b.N, benchUsers)

	// The bare echo bot.
	echoFake := telegramtest.NewServer(b)
	echoCtx, stopEcho := context.WithCancel(ctx)
	echo, err := bot.New(echoFake.Token(), bot.WithServerURL(echoFake.URL()),
		bot.WithDefaultHandler(func(ctx context.Context, bt *bot.Bot, u *models.Update) {
			if u.Message == nil {
				return
			}
			if _, err := bt.SendMessage(ctx, &bot.SendMessageParams{ChatID: u.Message.Chat.ID, Text: "echo: " + u.Message.Text}); err != nil {
				b.Error(err)
			}
		}))
	require.NoError(b, err)
	echoDone := make(chan struct{})
	go func() { echo.Start(echoCtx); close(echoDone) }()

	// Parley.
	parleyFake := telegramtest.NewServer(b)
	st := storetest.OpenSQLite(b)
	require.NoError(b, st.Migrate(ctx))
	ad := telegram.New()
	ad.Token = config.Secret(parleyFake.Token())
	ad.APIURL = parleyFake.URL()
	require.NoError(b, ad.Provision(ctx, core.Env{Clock: core.SystemClock{}, Location: time.UTC}))
	require.NoError(b, ad.Validate())
	d, err := core.NewDispatcher(core.DispatcherConfig{Store: st, LLM: echoLLM{}, Adapters: []core.Adapter{ad}})
	require.NoError(b, err)
	require.NoError(b, d.Start(ctx))
	require.NoError(b, ad.Start(ctx, d))

	b.ReportAllocs()
	b.ResetTimer()
	echoTime := drive(b, echoFake, n, 1_000_000)
	parleyTime := drive(b, parleyFake, n, 2_000_000)
	b.StopTimer()

	stopEcho()
	<-echoDone
	require.NoError(b, ad.Stop(ctx))
	require.NoError(b, d.Stop(ctx))

	total := float64(benchUsers * ((n + benchUsers - 1) / benchUsers))
	echoRate, parleyRate := total/echoTime.Seconds(), total/parleyTime.Seconds()
	b.ReportMetric(echoRate, "echo-dms/s")
	b.ReportMetric(parleyRate, "parley-dms/s")
	b.ReportMetric(parleyRate/echoRate, "ratio")
}
