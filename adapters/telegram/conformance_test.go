package telegram

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

// atoi reads a Telegram message id.
func atoi(t *testing.T, id string) int {
	t.Helper()
	n, err := strconv.Atoi(id)
	require.NoError(t, err, "telegram message ids are numbers")
	return n
}

// TestConformance runs the adapter suite against the fake Bot API. It is
// not parallel: the suite's Stop case checks for leaked goroutines.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
		b := newBundle(t)
		srv := b.srv
		userOf := func(t *testing.T, u adaptertest.User) telegramtest.User {
			t.Helper()
			id, err := strconv.ParseInt(u.ID, 10, 64)
			require.NoError(t, err, "telegram user ids are numbers")
			return telegramtest.User{ID: id, FirstName: u.Name}
		}
		seconds := func(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }
		return &adaptertest.Rig{
			Adapter: b.adapter,
			DM: func(t *testing.T, u adaptertest.User, text string) string {
				upd := srv.SendPrivate(userOf(t, u), text)
				return strconv.FormatInt(upd.Message.Chat.ID, 10)
			},
			ThreadOf: func(t *testing.T, u adaptertest.User) string {
				return strconv.FormatInt(userOf(t, u).ID, 10) // a private chat's id is the user's
			},
			Sent: func(t *testing.T, thread string) []adaptertest.Sent {
				id, err := strconv.ParseInt(thread, 10, 64)
				require.NoError(t, err)
				var out []adaptertest.Sent
				for _, m := range srv.Sent(id) {
					shown := m.Shown()
					out = append(out, adaptertest.Sent{
						ChannelThreadID:   strconv.FormatInt(m.ChatID, 10),
						Text:              m.Plain,
						Shown:             &shown,
						ImageURL:          m.Photo,
						PlatformMessageID: strconv.Itoa(m.MessageID),
						At:                m.At,
					})
				}
				return out
			},
			Group:   func(t *testing.T, u adaptertest.User, text string) { srv.SendGroup(-100777, userOf(t, u), text) },
			Channel: func(_ *testing.T, text string) { srv.SendChannelPost(-100888, text) },
			Own: func(t *testing.T, text string) {
				srv.SendOwn(userOf(t, adaptertest.Alice).ID, text)
			},
			Edit: func(t *testing.T, u adaptertest.User, text string) { srv.EditPrivate(userOf(t, u), 1, text) },
			RateLimitNextSend: func(_ *testing.T, d time.Duration) {
				srv.FailNext("sendMessage", telegramtest.TooManyRequests(seconds(d)))
			},
			RateLimitAfter: func(_ *testing.T, n int, d time.Duration) {
				srv.FailAfter("sendMessage", n, telegramtest.TooManyRequests(seconds(d)))
			},
			RefuseNextMarkup:  func(*testing.T) { srv.RefuseNextMarkup() },
			RefuseMarkupAfter: func(_ *testing.T, n int) { srv.RefuseMarkupAfter(n) },
			SendFile: func(t *testing.T, u adaptertest.User, f adaptertest.File) string {
				m := telegramtest.Media{Data: f.Data, Caption: f.Caption, Name: f.Name, MIME: f.MIME, Emoji: f.Emoji}
				send := map[core.AttachmentKind]func(telegramtest.User, telegramtest.Media) models.Update{
					core.AttachImage:    srv.SendPhoto,
					core.AttachVoice:    srv.SendVoice,
					core.AttachAudio:    srv.SendAudio,
					core.AttachVideo:    srv.SendVideo,
					core.AttachDocument: srv.SendDocument,
					core.AttachSticker:  srv.SendSticker,
				}[f.Kind]
				require.NotNil(t, send, "no telegram message for a %s", f.Kind)
				upd := send(userOf(t, u), m)
				return strconv.FormatInt(upd.Message.Chat.ID, 10)
			},
			// The kinds the suite knows (audio and video: files_test.go).
			FileKinds: []core.AttachmentKind{core.AttachImage, core.AttachVoice, core.AttachDocument, core.AttachSticker},
			FailNextFetch: func(*testing.T) {
				// One failure more than the adapter retries.
				for range b.adapter.maxServerRetries + 1 {
					srv.FailNextDownload(telegramtest.ServerError())
				}
			},
			Tap: func(t *testing.T, u adaptertest.User, id, data string) func() bool {
				upd, err := srv.Tap(userOf(t, u), atoi(t, id), data)
				require.NoError(t, err)
				return func() bool {
					return slices.ContainsFunc(srv.CallbackAnswers(), func(a telegramtest.CallbackAnswer) bool { return a.QueryID == upd.CallbackQuery.ID })
				}
			},
			EditDM: func(t *testing.T, u adaptertest.User, id, text string) {
				srv.EditPrivate(userOf(t, u), atoi(t, id), text)
			},
			React: func(t *testing.T, u adaptertest.User, id, emoji string, removed bool) {
				// Telegram sends the whole set before and after.
				before, after := []string(nil), []string{emoji}
				if removed {
					before, after = after, before
				}
				srv.ReactPrivate(userOf(t, u), atoi(t, id), before, after)
			},
			BotReactions: func(t *testing.T, thread, id string) []string {
				chat, err := strconv.ParseInt(thread, 10, 64)
				require.NoError(t, err)
				if e := srv.BotReaction(chat, atoi(t, id)); e != "" {
					return []string{e}
				}
				return nil
			},
			FilesSent: func(t *testing.T, thread string) []adaptertest.SentFile {
				id, err := strconv.ParseInt(thread, 10, 64)
				require.NoError(t, err)
				kinds := map[string]core.AttachmentKind{"photo": core.AttachImage, "voice": core.AttachVoice, "audio": core.AttachAudio}
				var out []adaptertest.SentFile
				for _, f := range srv.Files(id) {
					kind, ok := kinds[f.Kind]
					if !ok {
						kind = core.AttachDocument
					}
					out = append(out, adaptertest.SentFile{Kind: kind, Name: f.Name, MIME: f.MIME, Data: f.Data,
						Caption: f.CaptionPlain, PlatformMessageID: strconv.Itoa(f.MessageID)})
				}
				return out
			},
			Block:         func(t *testing.T, u adaptertest.User) { srv.Block(userOf(t, u).ID) },
			UnknownThread: "555000111",
			TypingShown: func(t *testing.T, thread string) int {
				id, err := strconv.ParseInt(thread, 10, 64)
				require.NoError(t, err)
				n := 0
				for _, a := range srv.ChatActions(id) {
					if a == "typing" {
						n++
					}
				}
				return n
			},
		}
	})
}
