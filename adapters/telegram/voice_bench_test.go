package telegram_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// voiceAnswer is what the model answers; the speech service speaks it as
// a voice note of the sub-benchmark's size.
const voiceAnswer = "Here is the story you asked for, read aloud."

// BenchmarkVoiceReply: every reply is spoken (voice.replies: always) and
// sent as a voice note, by Parley and by the least that does the same
// job without a framework (go-telegram/bot and go-openai: the reply
// stored, CreateSpeech read whole, one sendVoice), each bot in a process
// of its own, one DM at a time, with voice notes of 256 KiB (about a
// minute and a half of speech) and 8 MiB. It reports the time from the
// model's answer to the voice note reaching the fake Telegram (p50, p99)
// and the most the bot's heap rose above its floor while one voice note
// went through, over the note's size (issue 34's target: at most 2).
// The fake keeps only a digest of each upload (WithUploadDigests), so no
// copy of the fakes' counts.
//
//	go test -run '^$' -bench BenchmarkVoiceReply -benchtime 40x ./adapters/telegram/
func BenchmarkVoiceReply(b *testing.B) {
	for _, size := range []int{256 << 10, 8 << 20} {
		note := llmtest.OggOpusOfSize(voiceAnswer, size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			parley := startVoiceSide(b, "voice-parley", note)
			base := startVoiceSide(b, "voice-base", note)
			text := startVoiceSide(b, "whole", note)
			b.ResetTimer()
			p := parley.play(b, b.N)
			q := base.play(b, b.N)
			b.StopTimer()
			p.report(b, "parley", len(note))
			q.report(b, "base", len(note))
			b.ReportMetric(float64(p.p50())/float64(q.p50()), "p50-ratio")
			// The same turn answered in text: the heap a turn takes
			// without any file, to tell the voice note's share.
			g := text.playText(b, min(b.N, 20))
			slices.Sort(g)
			b.ReportMetric(float64(g[len(g)/2])/(1<<20), "parley-text-p50-heap-MiB")
		})
	}
}

// voiceSide is one bot under BenchmarkVoiceReply and when its model
// answered each user.
type voiceSide struct {
	*child
	mu       sync.Mutex
	answered map[int64]time.Time
}

func startVoiceSide(b *testing.B, side string, note []byte) *voiceSide {
	b.Helper()
	v := &voiceSide{answered: map[int64]time.Time{}}
	respond := llmtest.WithResponder(func(r llmtest.Request) llmtest.Response {
		var user int64
		if _, err := fmt.Sscanf(r.LastUserMessage(), "from %d", &user); err == nil {
			v.mu.Lock()
			v.answered[user] = time.Now()
			v.mu.Unlock()
		}
		return llmtest.Text(voiceAnswer)
	})
	speak := func(m *llmtest.Server) {
		m.Speech.Respond(func(llmtest.SpeechRequest) llmtest.MediaResponse { return llmtest.AudioBytes("audio/ogg", note) })
	}
	v.child = startChildWith(b, side, []telegramtest.Option{telegramtest.WithUploadDigests()}, speak, respond)
	return v
}

// voiceRun is what one side's DMs measured.
type voiceRun struct {
	lat    []time.Duration
	growth []uint64
}

// play sends n DMs, each from a new user once the last was answered, and
// measures each voice note.
func (v *voiceSide) play(b *testing.B, n int) voiceRun {
	b.Helper()
	var run voiceRun
	for i := range n {
		user := telegramtest.User{ID: int64(7_100_000 + i), FirstName: "Listener"}
		v.markHeap(b, i+1)
		v.fake.SendPrivate(user, fmt.Sprintf("from %d, read me a story", user.ID))
		files := v.fake.WaitFiles(b, user.ID, 1, time.Minute)
		run.growth = append(run.growth, v.heapGrowth(b, i+1))
		require.Equal(b, "voice", files[0].Kind)
		var sentAt time.Time
		for _, m := range v.fake.Sent(user.ID) {
			if m.Kind == "voice" {
				sentAt = m.At
			}
		}
		v.mu.Lock()
		answered := v.answered[user.ID]
		v.mu.Unlock()
		require.False(b, answered.IsZero(), "the model was never asked for user %d", user.ID)
		run.lat = append(run.lat, sentAt.Sub(answered))
	}
	return run
}

// playText sends n DMs to a side answering in text and returns the
// heap growth of each.
func (v *voiceSide) playText(b *testing.B, n int) []uint64 {
	b.Helper()
	var growth []uint64
	for i := range n {
		user := telegramtest.User{ID: int64(7_200_000 + i), FirstName: "Reader"}
		v.markHeap(b, i+1)
		v.fake.SendPrivate(user, fmt.Sprintf("from %d, read me a story", user.ID))
		v.fake.WaitSent(b, user.ID, 1, time.Minute)
		growth = append(growth, v.heapGrowth(b, i+1))
	}
	return growth
}

func (r voiceRun) p50() time.Duration {
	s := slices.Clone(r.lat)
	slices.Sort(s)
	return s[len(s)/2]
}

func (r voiceRun) report(b *testing.B, side string, size int) {
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, side+"-answer-to-voice-p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, side+"-answer-to-voice-p99-ms")
	b.ReportMetric(float64(slices.Max(r.growth))/float64(size), side+"-peak-heap/size")
	g := slices.Clone(r.growth)
	slices.Sort(g)
	b.ReportMetric(float64(g[len(g)/2])/float64(size), side+"-p50-heap/size")
	b.ReportMetric(float64(g[len(g)/2])/(1<<20), side+"-p50-heap-MiB")
}
