package telegram_test

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

// streamUsers write at once in BenchmarkStreamedReply, each waiting for
// its reply before writing again.
const streamUsers = 16

// streamAnswer is the model's answer: 480 characters, word by word over
// streamWriting.
var streamAnswer = strings.TrimSpace(strings.Repeat("Streaming shows each word as the model writes it. ", 10))[:480]

const streamWriting = time.Second

// BenchmarkStreamedReply runs Parley end to end (the telegram adapter
// against its fake, the bot in a process of its own) on a model that writes a
// 480-character answer word by word over one second, with streaming on
// (drafts) and off, one after the other. It reports, for the streamed
// side, the time from the model's first word to the user's first draft
// (ttfv p50 and p99: the model starts writing the moment the request
// arrives), the drafts per reply and per second of writing, and each
// side's CPU per reply (the bot's process alone) with their ratio (issue 32's
// target: ≤ 1.5).
func BenchmarkStreamedReply(b *testing.B) {
	n := max(b.N, streamUsers)
	replies := streamUsers * ((n + streamUsers - 1) / streamUsers)
	on, onPID, asked := startStreamingSide(b, "streamed", true)
	off, offPID, _ := startStreamingSide(b, "whole", false)
	baseOn, baseOnPID, _ := startStreamingSide(b, "base-streamed", true)
	baseOff, baseOffPID, _ := startStreamingSide(b, "base-whole", false)
	b.ResetTimer()
	streamed := measureStreamed(b, on, n, onPID)
	whole := measureStreamed(b, off, n, offPID)
	baseStreamed := measureStreamed(b, baseOn, n, baseOnPID)
	baseWhole := measureStreamed(b, baseOff, n, baseOffPID)
	b.StopTimer()

	var ttfv []time.Duration
	for u := range streamUsers {
		user := int64(7_000_000 + u)
		drafts := on.Drafts(user)
		for i, at := range asked.of(user) {
			// The first draft after the request for reply i.
			for _, d := range drafts {
				if d.At.After(at) && (i+1 >= len(asked.of(user)) || d.At.Before(asked.of(user)[i+1])) {
					ttfv = append(ttfv, d.At.Sub(at))
					break
				}
			}
		}
	}
	require.NotEmpty(b, ttfv, "no draft was shown")
	slices.Sort(ttfv)
	b.ReportMetric(float64(ttfv[len(ttfv)/2].Microseconds())/1000, "ttfv-p50-ms")
	b.ReportMetric(float64(ttfv[len(ttfv)*99/100].Microseconds())/1000, "ttfv-p99-ms")
	drafts := float64(on.Calls("sendMessageDraft")) / float64(replies)
	b.ReportMetric(drafts, "drafts/reply")
	b.ReportMetric(drafts/streamWriting.Seconds(), "drafts/s-of-writing")
	if streamed.cpu > 0 && whole.cpu > 0 {
		b.ReportMetric(float64(streamed.cpu.Microseconds())/1000/float64(replies), "streamed-cpu-ms/reply")
		b.ReportMetric(float64(whole.cpu.Microseconds())/1000/float64(replies), "whole-cpu-ms/reply")
		b.ReportMetric(float64(streamed.cpu)/float64(whole.cpu), "cpu-ratio")
	}
	// The floor: what streaming costs the bare SDKs (base-streamed over
	// base-whole), and what it costs Parley over that.
	perReply := func(p phase) float64 { return float64(p.cpu.Microseconds()) / 1000 / float64(replies) }
	if baseStreamed.cpu > 0 && baseWhole.cpu > 0 {
		b.ReportMetric(perReply(baseStreamed), "base-streamed-cpu-ms/reply")
		b.ReportMetric(perReply(baseWhole), "base-whole-cpu-ms/reply")
		b.ReportMetric(perReply(baseStreamed)-perReply(baseWhole), "floor-extra-ms/reply")
		b.ReportMetric(perReply(streamed)-perReply(whole), "parley-extra-ms/reply")
	}
}

// askedTimes notes when each user's requests reached the model.
type askedTimes struct {
	mu sync.Mutex
	at map[int64][]time.Time
}

func (a *askedTimes) of(user int64) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at[user]
}

// startStreamingSide starts bot side (bots) in a process of its own
// (startChild); the model writes streamAnswer over streamWriting
// (streamed, or whole once written), and notes when each user asked.
func startStreamingSide(b *testing.B, side string, streaming bool) (*telegramtest.Server, int, *askedTimes) {
	b.Helper()
	asked := &askedTimes{at: map[int64][]time.Time{}}
	respond := writingModel(asked, streaming, streamWriting)
	fake, pid := startChild(b, side, respond)
	return fake, pid, asked
}

// measureStreamed plays n DMs from streamUsers users, each waiting for its
// reply, and takes the CPU of process pid (the bot's) meanwhile.
func measureStreamed(b *testing.B, fake *telegramtest.Server, n, pid int) phase {
	b.Helper()
	per := (n + streamUsers - 1) / streamUsers
	before := processCPU(b, pid)
	start := time.Now()
	var wg sync.WaitGroup
	for u := range streamUsers {
		user := telegramtest.User{ID: int64(7_000_000 + u), FirstName: fmt.Sprint("User", u)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				fake.SendPrivate(user, fmt.Sprintf("from %d, message %d", user.ID, i))
				fake.WaitSent(b, user.ID, i+1, time.Minute)
			}
		}()
	}
	wg.Wait()
	return phase{wall: time.Since(start), cpu: processCPU(b, pid) - before}
}

// writingModel is a model that writes streamAnswer over writing: streamed
// word by word, or whole once written (as long after the question as the
// last delta); it notes when each user ("from <id>, …") asked.
func writingModel(asked *askedTimes, streaming bool, writing time.Duration) llmtest.Option {
	return llmtest.WithResponder(func(r llmtest.Request) llmtest.Response {
		var user int64
		if _, err := fmt.Sscanf(r.LastUserMessage(), "from %d", &user); err == nil {
			asked.mu.Lock()
			asked.at[user] = append(asked.at[user], time.Now())
			asked.mu.Unlock()
		}
		if !streaming {
			return llmtest.Text(streamAnswer).WithDelay(writing)
		}
		return llmtest.Text(streamAnswer).WithWordDeltas().WithStreamDelay(writing)
	})
}
