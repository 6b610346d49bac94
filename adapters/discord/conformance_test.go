package discord

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
)

// TestConformance runs the adapter suite against the fake Discord. It is
// not parallel: the suite's Stop case checks for leaked goroutines.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
		b := newBundle(t)
		srv := b.srv
		userOf := func(u adaptertest.User) discordtest.User {
			return discordtest.User{ID: u.ID, Username: "user" + u.ID, GlobalName: u.Name}
		}
		// lastDM remembers each user's latest DM, for Edit.
		var mu sync.Mutex
		lastDM := map[string]string{}
		return &adaptertest.Rig{
			Adapter: b.adapter,
			DM: func(_ *testing.T, u adaptertest.User, text string) string {
				ch, id := srv.SendDM(userOf(u), text)
				mu.Lock()
				lastDM[u.ID] = id
				mu.Unlock()
				return ch
			},
			ThreadOf: func(_ *testing.T, u adaptertest.User) string { return srv.DMChannelOf(u.ID) },
			Sent: func(_ *testing.T, thread string) []adaptertest.Sent {
				var out []adaptertest.Sent
				for _, m := range srv.Sent(thread) {
					s := adaptertest.Sent{
						ChannelThreadID:   m.ChannelID,
						Text:              m.Content,
						PlatformMessageID: m.MessageID,
						At:                m.At,
					}
					shown := m.Shown()
					for _, e := range m.Embeds {
						if e.ImageURL == "" {
							continue
						}
						// An image shows in an embed, its caption as the
						// embed's description.
						s.ImageURL = e.ImageURL
						if m.Content == "" {
							s.Text, shown = e.Description, e.Shown()
						}
						break
					}
					s.Shown = &shown
					out = append(out, s)
				}
				return out
			},
			Group: func(_ *testing.T, u adaptertest.User, text string) {
				srv.SendGuild("800000000000000001", "800000000000000002", userOf(u), text)
			},
			Channel: func(_ *testing.T, text string) {
				srv.SendGuild("800000000000000001", "800000000000000003", userOf(adaptertest.Bob), text)
			},
			Own: func(_ *testing.T, text string) {
				ch := srv.DMChannelOf(adaptertest.Alice.ID)
				if ch == "" {
					ch = "800000000000000009" // Alice has not written yet
				}
				srv.SendOwn(ch, text)
			},
			Edit: func(t *testing.T, u adaptertest.User, text string) {
				mu.Lock()
				id := lastDM[u.ID]
				mu.Unlock()
				if id == "" {
					t.Fatalf("no earlier DM from %s to edit", u.Name)
				}
				srv.EditDM(userOf(u), id, text)
			},
			Tap: func(t *testing.T, u adaptertest.User, id, data string) func() bool {
				tap, err := srv.Tap(userOf(u), id, data)
				if err != nil {
					t.Fatal(err)
				}
				return func() bool {
					in, _ := srv.Interaction(tap)
					return slices.ContainsFunc(in.Callbacks, func(c discordtest.Callback) bool { return c.Status == http.StatusNoContent })
				}
			},
			EditDM:   func(_ *testing.T, u adaptertest.User, id, text string) { srv.EditDM(userOf(u), id, text) },
			DeleteDM: func(_ *testing.T, u adaptertest.User, id string) { srv.DeleteDM(userOf(u), id) },
			React: func(_ *testing.T, u adaptertest.User, id, emoji string, removed bool) {
				srv.ReactDM(userOf(u), id, emoji, removed)
			},
			BotReactions:      func(_ *testing.T, _, id string) []string { return srv.BotReactions(id) },
			RateLimitNextSend: func(_ *testing.T, d time.Duration) { srv.RateLimitNext("messages", d) },
			RateLimitAfter:    func(_ *testing.T, n int, d time.Duration) { srv.RateLimitAfter("messages", n, d) },
			RefuseNextMarkup:  func(*testing.T) { srv.RefuseNextMarkup() },
			RefuseMarkupAfter: func(_ *testing.T, n int) { srv.RefuseMarkupAfter(n) },
			SendFile: func(_ *testing.T, u adaptertest.User, f adaptertest.File) string {
				file := discordtest.File{Filename: f.Name, ContentType: f.MIME, Data: f.Data}
				if f.Kind == core.AttachVoice {
					// A voice message has no text (the suite's has none).
					ch, _ := srv.SendVoiceMessage(userOf(u), file)
					return ch
				}
				ch, _ := srv.SendFiles(userOf(u), f.Caption, file)
				return ch
			},
			// Discord's sticker_items carry no emoji, which the suite's
			// sticker case checks; stickers are covered in
			// attachment_test.go instead.
			FileKinds: []core.AttachmentKind{core.AttachImage, core.AttachVoice, core.AttachDocument},
			// One failure more than the adapter retries.
			FailNextFetch: func(*testing.T) { srv.FailNextDownloads(b.adapter.maxServerRetries + 1) },
			Block:         func(_ *testing.T, u adaptertest.User) { srv.Block(u.ID) },
			UnknownThread: "555000111222333444",
			TypingShown:   func(_ *testing.T, thread string) int { return srv.Typing(thread) },
			FilesSent:     func(_ *testing.T, thread string) []adaptertest.SentFile { return filesSent(srv, thread) },
			// A voice note shows as one (flag, length, waveform) only
			// for Ogg Opus, which the suite's is.
			VoiceLength: true,
		}
	})
}

// filesSent is every attachment of the bot's messages in thread as
// Discord shows it; a message's content is its first file's caption.
func filesSent(srv *discordtest.Server, thread string) []adaptertest.SentFile {
	kinds := map[string]core.AttachmentKind{"image": core.AttachImage, "voice": core.AttachVoice,
		"audio": core.AttachAudio, "video": core.AttachVideo, "file": core.AttachDocument}
	var out []adaptertest.SentFile
	for _, m := range srv.Sent(thread) {
		shown := m.Shown()
		for i, a := range m.Attachments {
			f := adaptertest.SentFile{Kind: kinds[a.Shown()], Name: a.Filename, MIME: a.ContentType, Data: a.Data,
				Seconds: a.DurationSecs, PlatformMessageID: m.MessageID}
			if i == 0 && m.Content != "" {
				f.Caption, f.CaptionShown = shown.Text, &shown
			}
			out = append(out, f)
		}
	}
	return out
}
