//go:build linux

package soak

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
)

// filePlatform is a platform the file kill test drives: its adapters
// section, a DM, the voice notes the user got, and holding the answer
// to the upload call.
type filePlatform struct {
	name string
	// repeats is how many more copies a kill in doubt may leave: Telegram
	// has no idempotent send, Discord drops a repeated nonce.
	repeats int
	start   func(t *testing.T) string
	ready   func(t *testing.T, gen int)
	dm      func(t *testing.T)
	// hold makes the upload's answer wait (the note is sent, the bot
	// does not hear); held waits for one held; release lets answers go.
	hold, release func()
	held          func(t *testing.T)
	notes         func() [][]byte
}

func telegramFiles() filePlatform {
	var tg *telegramtest.Server
	user := telegramtest.User{ID: 7_300_201, FirstName: "Noor"}
	return filePlatform{
		name: "Telegram", repeats: 1,
		start: func(t *testing.T) string {
			tg = telegramtest.NewServer(t)
			tg.StartedBy(user)
			return fmt.Sprintf("  telegram:\n    token: %q\n    api_url: %q\n", tg.Token(), tg.URL())
		},
		ready:   func(*testing.T, int) {},
		dm:      func(*testing.T) { tg.SendPrivate(user, "read it to me") },
		hold:    func() { tg.HoldAnswers("sendVoice") },
		release: func() { tg.ReleaseAnswers("sendVoice") },
		held:    func(t *testing.T) { tg.WaitHeld(t, "sendVoice", 1, readyTimeout) },
		notes: func() [][]byte {
			var out [][]byte
			for _, f := range tg.Files(user.ID) {
				out = append(out, f.Data)
			}
			return out
		},
	}
}

func discordFiles() filePlatform {
	var dc *discordtest.Server
	var channel string
	lin := discordtest.User{ID: "300000000000000201", Username: "lin"}
	return filePlatform{
		name: "Discord",
		start: func(t *testing.T) string {
			dc = discordtest.NewServer(t)
			return fmt.Sprintf("  discord:\n    token: %q\n    api_url: %q\n", dc.Token(), dc.URL())
		},
		ready:   func(t *testing.T, _ int) { dc.WaitReady(t, readyTimeout) },
		dm:      func(*testing.T) { channel, _ = dc.SendDM(lin, "read it to me") },
		hold:    func() { dc.HoldAnswers("messages") },
		release: func() { dc.ReleaseAnswers("messages") },
		held:    func(t *testing.T) { dc.WaitHeld(t, "messages", 1, readyTimeout) },
		notes: func() [][]byte {
			var out [][]byte
			for _, m := range dc.Visible(channel) {
				for _, a := range m.Attachments {
					out = append(out, a.Data)
				}
			}
			return out
		},
	}
}

// Issue 34, part 2, through parley run: a voice reply is recorded with
// its bytes before it is sent; the process is killed (SIGKILL) after the
// platform took the upload and before its answer came back, and
// restarted. The user gets the voice note with the same bytes, spoken
// once (the bytes were kept, not spoken again), and at most one repeat
// on Telegram, none on Discord. The kept bytes are dropped once sent.
func TestKillDuringFileSendRepeatsAtMostOnce(t *testing.T) {
	for _, p := range []filePlatform{telegramFiles(), discordFiles()} {
		t.Run(p.name, func(t *testing.T) { killDuringFileSend(t, p) })
	}
}

func killDuringFileSend(t *testing.T, p filePlatform) {
	const answer = "Once upon a time there was a kettle."
	dir := artifactDir(t)
	model := llmtest.NewServer(t)
	model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text(answer) })
	model.Speech.Respond(llmtest.Generates[llmtest.SpeechRequest])
	rep, dbPath := startKillBot(t, dir, model.URL(), "voice:\n  replies: always\n", p.start(t))
	p.ready(t, 1)

	p.hold()
	p.dm(t)
	p.held(t)
	rep.kill(t)
	p.release()

	rep.start(t)
	p.ready(t, 2)
	st, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: dbPath})
	require.NoError(t, err)
	defer st.Close()
	require.True(t, waitFor(readyTimeout, func() bool {
		var sent int
		return st.DB().Raw(`SELECT COUNT(*) FROM messages WHERE role = 'assistant' AND delivery = 'sent'`).Row().Scan(&sent) == nil && sent == 1
	}), "the voice reply was never settled as sent after the restart; log %s", rep.logPath)
	rep.stop(t)

	notes := p.notes()
	t.Logf("%s: %d voice notes", p.name, len(notes))
	require.NotEmpty(t, notes, "the user got the voice note")
	require.LessOrEqual(t, len(notes)-1, p.repeats, "repeats past what %s allows", p.name)
	for _, n := range notes {
		require.Equal(t, llmtest.OggOpus(answer), n, "the same bytes each time")
	}
	require.Len(t, model.Speech.Requests(), 1, "spoken once: the kept bytes were sent again")
	require.Len(t, model.Requests(), 1, "the turn was not answered again")
	var kept int
	require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM message_files`).Row().Scan(&kept))
	require.Zero(t, kept, "the kept bytes are dropped once the reply is sent")
}
