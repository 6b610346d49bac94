package telegram_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
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

// phase is one side's drive: its wall time and the CPU time (user +
// system) its bot's process spent meanwhile.
type phase struct {
	wall, cpu time.Duration
}

// measure drives fake and takes the CPU time of process pid, the bot's.
func measure(b *testing.B, fake *telegramtest.Server, n int, base int64, pid int) phase {
	b.Helper()
	before := processCPU(b, pid)
	wall := drive(b, fake, n, base)
	return phase{wall: wall, cpu: processCPU(b, pid) - before}
}

// report adds a side's rate and CPU per DM to the benchmark's metrics.
func (p phase) report(b *testing.B, name string, dms int) float64 {
	rate := float64(dms) / p.wall.Seconds()
	b.ReportMetric(rate, name+"-dms/s")
	if p.cpu > 0 { // 0 where a process's CPU time is not known
		b.ReportMetric(float64(p.cpu.Microseconds())/1000/float64(dms), name+"-cpu-ms/dm")
	}
	return rate
}

// BenchmarkVersusEchoBot runs the same DM load (benchUsers users, each
// waiting for its reply), in the same run and against fakes of the same
// kind (the Bot API, and an instant model for those that call one), through
// four bots one after the other (benchbots_test.go), each in a process of
// its own (benchchild_test.go): a bare go-telegram/bot echo bot; the
// durable LLM baseline (both messages stored, one completion); Parley end
// to end, whose prompts also carry the conversation's history; and Parley
// as shipped (`parley run`, every plugin on). It reports each one's rate
// and its process's CPU per DM (the fakes' excluded, as in issue 31's
// black-box measurement), Parley's rate over the baseline's as ratio
// (target ≥ 0.6), and Parley's and the shipped Parley's CPU over the
// baseline's as cpu-ratio and shipped-cpu-ratio (issue 31's target:
// ≤ 1.6). ns/op adds up all four drives; allocs/op are the benchmark's
// own (the fakes and the users), not the bots'.
func BenchmarkVersusEchoBot(b *testing.B) {
	n := max(b.N, benchUsers)
	dms := benchUsers * ((n + benchUsers - 1) / benchUsers)
	echoFake, echoPID := startChild(b, "echo")
	baseFake, basePID := startChild(b, "base")
	parleyFake, parleyPID := startChild(b, "parley")
	shippedFake, shippedPID := startChild(b, "shipped")

	b.ReportAllocs()
	b.ResetTimer()
	echo := measure(b, echoFake, n, 1_000_000, echoPID)
	base := measure(b, baseFake, n, 2_000_000, basePID)
	parley := measure(b, parleyFake, n, 3_000_000, parleyPID)
	shipped := measure(b, shippedFake, n, 5_000_000, shippedPID)
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

// BenchmarkParleyTurns is Parley's side of BenchmarkVersusEchoBot in this
// process, fakes and all, to profile (-cpuprofile, -blockprofile,
// -mutexprofile) without a child process in the way. Its CPU per DM
// includes the fakes'.
func BenchmarkParleyTurns(b *testing.B) {
	n := max(b.N, benchUsers)
	dms := benchUsers * ((n + benchUsers - 1) / benchUsers)
	fake := telegramtest.NewServer(b)
	model := llmtest.NewServer(b, llmtest.WithResponder(llmtest.Echo))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- parleyBot(ctx, botEnv{APIURL: fake.URL(), Token: fake.Token(), ModelURL: model.URL(), Dir: b.TempDir()})
	}()
	b.Cleanup(func() { stop(); require.NoError(b, <-done) })
	b.ReportAllocs()
	b.ResetTimer()
	p := measure(b, fake, n, 3_000_000, os.Getpid())
	b.StopTimer()
	p.report(b, "parley", dms)
}
