package telegram_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/app"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	_ "github.com/parleybot/parley/standard" // Parley as shipped: every adapter and plugin
	"github.com/parleybot/parley/store/storetest"
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

// phase is one side's drive: its wall time and the process's CPU time
// (user + system) spent meanwhile. The sides run one after the other in one
// process, so the CPU of a phase is its side's (plus the fakes and the
// other sides' idle pollers, which cost next to nothing).
type phase struct {
	wall, cpu time.Duration
}

func measure(b *testing.B, fake *telegramtest.Server, n int, base int64) phase {
	b.Helper()
	before := cpuTime(b)
	wall := drive(b, fake, n, base)
	return phase{wall: wall, cpu: cpuTime(b) - before}
}

// report adds a side's rate and CPU per DM to the benchmark's metrics.
func (p phase) report(b *testing.B, name string, dms int) float64 {
	rate := float64(dms) / p.wall.Seconds()
	b.ReportMetric(rate, name+"-dms/s")
	if p.cpu > 0 { // 0 where the process's CPU time is not known
		b.ReportMetric(float64(p.cpu.Microseconds())/1000/float64(dms), name+"-cpu-ms/dm")
	}
	return rate
}

// labelled labels the goroutines the caller starts until the returned
// function is called (and those they start) with side=name, so that one
// CPU profile of the benchmark splits by side without the fakes:
// go tool pprof -tagfocus side=parley (or base, echo, fake). What no
// side started (the garbage collector, timers) stays unlabelled.
func labelled(name string) func() {
	ctx := context.Background()
	prev := pprof.WithLabels(ctx, pprof.Labels()) // no labels
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("side", name)))
	return func() { pprof.SetGoroutineLabels(prev) }
}

// startFake starts a fake Bot API, labelled side=fake.
func startFake(b *testing.B) *telegramtest.Server {
	defer labelled("fake")()
	return telegramtest.NewServer(b)
}

// startModel starts an instant fake model, labelled side=fake.
func startModel(b *testing.B) *llmtest.Server {
	defer labelled("fake")()
	return llmtest.NewServer(b, llmtest.WithResponder(llmtest.Echo))
}

// startEcho starts a bare go-telegram/bot echo bot (its defaults: its own
// polling, a goroutine per update) answering each update with one
// sendMessage.
func startEcho(b *testing.B) *telegramtest.Server {
	fake := startFake(b)
	defer labelled("echo")()
	echo, err := bot.New(fake.Token(), bot.WithServerURL(fake.URL()),
		bot.WithDefaultHandler(func(ctx context.Context, bt *bot.Bot, u *models.Update) {
			if u.Message == nil {
				return
			}
			_, err := bt.SendMessage(ctx, &bot.SendMessageParams{ChatID: u.Message.Chat.ID, Text: "echo: " + u.Message.Text})
			check(ctx, b, err)
		}))
	require.NoError(b, err)
	runBot(b, echo)
	return fake
}

// check fails the benchmark on err, unless the bot is stopping: the fake
// counts a reply as sent before its sendMessage returns, so the last
// handlers may still be in it when the benchmark ends.
func check(ctx context.Context, b *testing.B, err error) {
	if err != nil && ctx.Err() == nil {
		b.Error(err)
	}
}

// runBot runs bt until the benchmark ends.
func runBot(b *testing.B, bt *bot.Bot) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { bt.Start(ctx); close(done) }()
	b.Cleanup(func() { stop(); <-done })
}

// baseMessage is the durable baseline's one table: every message it hears
// and says.
type baseMessage struct {
	ID        int64 `gorm:"primaryKey"`
	ChatID    int64 `gorm:"index"`
	Role      string
	Text      string
	CreatedAt time.Time
}

// startBaseline starts the least a durable LLM bot does, without a
// framework: go-telegram/bot with its defaults; per update, the user's
// message stored with gorm on SQLite, one go-openai chat completion, the
// reply stored, one sendMessage. Its SQLite has the durability of Parley's
// store (a file in WAL mode, synchronous=NORMAL, busy_timeout) and, like
// Parley's writer, one connection, so writers queue in database/sql instead
// of retrying on SQLITE_BUSY; gorm's other settings are its defaults (each
// Create in a transaction of its own).
func startBaseline(b *testing.B) *telegramtest.Server {
	fake, model := startFake(b), startModel(b)
	defer labelled("base")()
	dsn := filepath.Join(b.TempDir(), "baseline.db") + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(b, err)
	sqlDB, err := db.DB()
	require.NoError(b, err)
	sqlDB.SetMaxOpenConns(1)
	b.Cleanup(func() { _ = sqlDB.Close() })
	require.NoError(b, db.AutoMigrate(&baseMessage{}))
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = model.URL()
	ai := openai.NewClientWithConfig(cfg)

	bt, err := bot.New(fake.Token(), bot.WithServerURL(fake.URL()),
		bot.WithDefaultHandler(func(ctx context.Context, bt *bot.Bot, u *models.Update) {
			if u.Message == nil {
				return
			}
			chat := u.Message.Chat.ID
			if err := db.WithContext(ctx).Create(&baseMessage{ChatID: chat, Role: "user", Text: u.Message.Text}).Error; err != nil {
				check(ctx, b, err)
				return
			}
			resp, err := ai.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
				Model:    llmtest.DefaultModel,
				Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: u.Message.Text}},
			})
			if err != nil {
				check(ctx, b, err)
				return
			}
			reply := resp.Choices[0].Message.Content
			if err := db.WithContext(ctx).Create(&baseMessage{ChatID: chat, Role: "assistant", Text: reply}).Error; err != nil {
				check(ctx, b, err)
				return
			}
			_, err = bt.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: reply})
			check(ctx, b, err)
		}))
	require.NoError(b, err)
	runBot(b, bt)
	return fake
}

// startParley starts Parley end to end: the telegram adapter (long
// polling, unpaced), the dispatcher with its defaults, the SQLite store and
// the real model client against an instant fake model. Every DM is stored
// before it is confirmed, answered by a durable run, and its reply stored.
func startParley(b *testing.B) *telegramtest.Server {
	ctx := context.Background()
	fake, model := startFake(b), startModel(b)
	defer labelled("parley")()
	client, err := llm.New(llm.Config{BaseURL: model.URL(), Model: llmtest.DefaultModel})
	require.NoError(b, err)
	st := storetest.OpenSQLite(b)
	require.NoError(b, st.Migrate(ctx))
	ad := telegram.New()
	ad.Token = config.Secret(fake.Token())
	ad.APIURL = fake.URL()
	// The fake has no flood limits, and pacing to Telegram's would measure
	// the pace, not the cost of a turn.
	ad.SendRate = pace.Limits{}
	require.NoError(b, ad.Provision(ctx, core.Env{Clock: core.SystemClock{}, Location: time.UTC}))
	require.NoError(b, ad.Validate())
	d, err := engine.New(engine.Config{Store: st, LLM: client, Adapters: []core.Adapter{ad}})
	require.NoError(b, err)
	require.NoError(b, d.Start(ctx))
	require.NoError(b, ad.Start(ctx, d))
	b.Cleanup(func() {
		require.NoError(b, ad.Stop(ctx))
		require.NoError(b, d.Stop(ctx))
	})
	return fake
}

// startShipped starts Parley as shipped, in this process: `parley run`
// with a config that names only what the benchmark needs (the fakes, a
// SQLite file, no web chat, no console), so every plugin is on with its
// defaults (persona, memory, mood, control tokens, proactive, schedule),
// as in the black-box measurement; with runs.debounce 0 (its 1.5 s
// would be the figure) and Telegram's pace lifted, as for startParley. It
// returns once the bot has answered a first DM.
func startShipped(b *testing.B) *telegramtest.Server {
	fake, model := startFake(b), startModel(b)
	defer labelled("shipped")()
	dir := b.TempDir()
	cfg := fmt.Sprintf(`store: {driver: sqlite, dsn: %q, spool: {dir: %q}}
llm: {base_url: %q, api_key: sk-bench, model: %s}
adapters:
  web: {enabled: false}
  telegram: {token: %q, api_url: %q, send_rate: {per_second: 0, per_chat_per_second: 0}}
runs: {debounce: 0s}
http: {listen: "127.0.0.1:0", api_token: ""}
log: {level: warn}
`, filepath.Join(dir, "parley.db"), filepath.Join(dir, "spool"), model.URL(), llmtest.DefaultModel, fake.Token(), fake.URL())
	path := filepath.Join(dir, "config.yaml")
	require.NoError(b, os.WriteFile(path, []byte(cfg), 0o600))
	ctx, stop := context.WithCancel(context.Background())
	code := make(chan int, 1)
	var stderr strings.Builder
	var mu sync.Mutex
	go func() {
		code <- app.Run(ctx, []string{"run", "-c", path}, app.IO{In: strings.NewReader(""), Out: io.Discard,
			Err: writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })},
			func(string) (string, bool) { return "", false })
	}()
	b.Cleanup(func() {
		stop()
		if c := <-code; c != 0 {
			mu.Lock()
			defer mu.Unlock()
			b.Errorf("parley run exited %d: %s", c, stderr.String())
		}
	})
	warm := telegramtest.User{ID: 4_999_999, FirstName: "Warm"}
	fake.SendPrivate(warm, "hello")
	fake.WaitSent(b, warm.ID, 1, 30*time.Second)
	return fake
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// BenchmarkVersusEchoBot runs the same DM load (benchUsers users, each
// waiting for its reply), in the same run and against fakes of the same
// kind (the Bot API, and an instant model for those that call one), through
// four bots one after the other: a bare go-telegram/bot echo bot; the
// durable LLM baseline (startBaseline: both messages stored, one
// completion); Parley end to end (startParley), whose prompts also carry
// the conversation's history; and Parley as shipped (startShipped: every
// plugin on). It reports each one's rate and CPU per DM (the fakes' CPU
// included: they run in this process), Parley's rate over the baseline's
// as ratio (target ≥ 0.6), and Parley's and the shipped Parley's CPU over
// the baseline's as cpu-ratio and shipped-cpu-ratio (issue 31's target:
// ≤ 1.6). ns/op and allocs/op add up all four. With -cpuprofile, the
// profile splits by side without the fakes (labelled).
func BenchmarkVersusEchoBot(b *testing.B) {
	n := max(b.N, benchUsers)
	dms := benchUsers * ((n + benchUsers - 1) / benchUsers)
	echoFake := startEcho(b)
	baseFake := startBaseline(b)
	parleyFake := startParley(b)
	shippedFake := startShipped(b)

	b.ReportAllocs()
	b.ResetTimer()
	echo := measure(b, echoFake, n, 1_000_000)
	base := measure(b, baseFake, n, 2_000_000)
	parley := measure(b, parleyFake, n, 3_000_000)
	shipped := measure(b, shippedFake, n, 5_000_000)
	b.StopTimer()

	echo.report(b, "echo", dms)
	baseRate := base.report(b, "base", dms)
	parleyRate := parley.report(b, "parley", dms)
	shipped.report(b, "shipped", dms)
	b.ReportMetric(parleyRate/baseRate, "ratio")
	if base.cpu > 0 {
		b.ReportMetric(float64(parley.cpu)/float64(base.cpu), "cpu-ratio")
		b.ReportMetric(float64(shipped.cpu)/float64(base.cpu), "shipped-cpu-ratio")
	}
}

// BenchmarkParleyTurns is Parley's side of BenchmarkVersusEchoBot alone, to
// profile (-cpuprofile, -blockprofile, -mutexprofile) without the other
// bots in the picture.
func BenchmarkParleyTurns(b *testing.B) {
	n := max(b.N, benchUsers)
	dms := benchUsers * ((n + benchUsers - 1) / benchUsers)
	fake := startParley(b)
	b.ReportAllocs()
	b.ResetTimer()
	p := measure(b, fake, n, 3_000_000)
	b.StopTimer()
	p.report(b, "parley", dms)
}
