package telegram_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// crowdUsers write at once in BenchmarkStreamedCrowd; the model writes
// each answer over crowdWriting.
const (
	crowdUsers   = 200
	crowdWriting = 5 * time.Second
)

// BenchmarkStreamedCrowd is issue 32's crowd: 200 users write at once to
// a bot whose model writes each answer over 5 s, through a Telegram fake
// that keeps Telegram's limits (30 messages a second per bot, one a
// second per chat after a burst of 3, drafts counted too) and answers 429
// above them. The bot (its own process) keeps the adapter's default
// pace. Streaming on against off, in the same run. It reports the finals
// delivered, the share of calls answered 429, the drafts, and how long
// after the model finished each final reached the user (p50, p99, max),
// on both sides: partials must never hold a final back by more than one
// pacing slot (a second in a chat).
func BenchmarkStreamedCrowd(b *testing.B) {
	on, onAsked := startCrowd(b, true)
	off, offAsked := startCrowd(b, false)
	b.ResetTimer()
	for i := range b.N {
		playCrowd(b, on, i)
		playCrowd(b, off, i)
	}
	b.StopTimer()

	stats := on.SendStats()
	require.Positive(b, stats.Attempts)
	b.ReportMetric(100*float64(stats.RateLimited)/float64(stats.Attempts), "429-%-streamed")
	b.ReportMetric(100*float64(off.SendStats().RateLimited)/float64(off.SendStats().Attempts), "429-%-whole")
	b.ReportMetric(float64(on.Calls("sendMessageDraft"))/float64(crowdUsers*b.N), "drafts/reply")
	streamed := finalDelays(b, on, onAsked, b.N)
	whole := finalDelays(b, off, offAsked, b.N)
	report := func(name string, d []time.Duration) {
		b.ReportMetric(float64(d[len(d)/2].Milliseconds()), name+"-p50-ms")
		b.ReportMetric(float64(d[len(d)*99/100].Milliseconds()), name+"-p99-ms")
		b.ReportMetric(float64(d[len(d)-1].Milliseconds()), name+"-max-ms")
	}
	report("final-streamed", streamed)
	report("final-whole", whole)
	b.ReportMetric(float64(len(streamed)), "finals-streamed")
}

// crowdUser is user u of the crowd.
func crowdUser(u int) telegramtest.User {
	return telegramtest.User{ID: int64(8_000_000 + u), FirstName: fmt.Sprint("Crowd", u)}
}

// startCrowd starts a crowd side's bot (startChild) on a model that
// writes the answer over crowdWriting (streamed, or whole once written)
// and notes when each user asked; the fake keeps Telegram's limits from
// then on.
func startCrowd(b *testing.B, streaming bool) (*telegramtest.Server, *askedTimes) {
	b.Helper()
	asked := &askedTimes{at: map[int64][]time.Time{}}
	respond := writingModel(asked, streaming, crowdWriting)
	side := "crowd-whole"
	if streaming {
		side = "crowd-streamed"
	}
	fake, _ := startChild(b, side, respond)
	limits := telegramtest.TelegramRateLimits()
	limits.Partials = true
	fake.SetRateLimits(limits)
	return fake, asked
}

// playCrowd has every user write at once (round i) and waits for every
// reply.
func playCrowd(b *testing.B, fake *telegramtest.Server, i int) {
	b.Helper()
	var wg sync.WaitGroup
	for u := range crowdUsers {
		user := crowdUser(u)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fake.SendPrivate(user, fmt.Sprintf("from %d, message %d", user.ID, i))
			fake.WaitSent(b, user.ID, i+1, 2*time.Minute)
		}()
	}
	wg.Wait()
}

// finalDelays are, sorted, how long after the model finished writing each
// final reply reached the fake (its sendMessage), over rounds rounds.
func finalDelays(b *testing.B, fake *telegramtest.Server, asked *askedTimes, rounds int) []time.Duration {
	b.Helper()
	var out []time.Duration
	for u := range crowdUsers {
		user := crowdUser(u)
		sent := fake.Sent(user.ID)
		at := asked.of(user.ID)
		require.Len(b, sent, rounds, "user %d: every final delivered, once", user.ID)
		require.Len(b, at, rounds, "user %d: one model call a message", user.ID)
		for i := range rounds {
			require.Equal(b, streamAnswer, sent[i].Plain)
			out = append(out, sent[i].At.Sub(at[i].Add(crowdWriting)))
		}
	}
	slices.Sort(out)
	return out
}
