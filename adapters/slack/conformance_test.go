package slack

import (
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
)

// Slack ids: the suite's people get user ids of Slack's shape.
var (
	alice = adaptertest.User{ID: "U0700000001", Name: "Alice Ångström"}
	bob   = adaptertest.User{ID: "U0700000002", Name: "Bob Brontë"}
)

// TestConformance runs the adapter suite against the fake Slack in both
// modes. It is not parallel: the suite's Stop case checks for leaked
// goroutines.
func TestConformance(t *testing.T) {
	for _, mode := range []string{ModeSocket, ModeEvents} {
		t.Run(mode, func(t *testing.T) {
			adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
				return conformanceRig(t, newBundle(t, mode))
			})
		})
	}
}

func conformanceRig(t *testing.T, b *testBundle) *adaptertest.Rig {
	srv := b.srv
	userOf := func(u adaptertest.User) slacktest.User {
		return slacktest.User{ID: u.ID, Name: "user" + u.ID, RealName: u.Name}
	}
	// lastDM remembers each user's latest DM, for Edit.
	var mu sync.Mutex
	lastDM := map[string]string{}
	rig := &adaptertest.Rig{
		Adapter: b.adapter,
		Users:   []adaptertest.User{alice, bob},
		DM: func(_ *testing.T, u adaptertest.User, text string) string {
			ch, ts := srv.SendDM(userOf(u), text)
			mu.Lock()
			lastDM[u.ID] = ts
			mu.Unlock()
			return ch
		},
		ThreadOf: func(_ *testing.T, u adaptertest.User) string { return srv.DMChannelOf(u.ID) },
		Sent: func(_ *testing.T, thread string) []adaptertest.Sent {
			var out []adaptertest.Sent
			for _, m := range srv.Sent(thread) {
				s := adaptertest.Sent{
					ChannelThreadID:   m.Channel,
					Text:              slacktest.Unescape(m.Text),
					PlatformMessageID: m.TS,
					At:                m.At,
				}
				shown := m.Shown()
				if len(m.Blocks) > 0 {
					// Slack shows the blocks; the text is for notifications.
					s.Text, shown = "", markuptest.Rendered{}
					for _, b := range m.Blocks {
						switch b.Type {
						case "section":
							shown = b.Shown()
							s.Text = shown.Text
						case "image":
							s.ImageURL = b.ImageURL
						}
					}
				}
				s.Shown = &shown
				out = append(out, s)
			}
			return out
		},
		Group: func(_ *testing.T, u adaptertest.User, text string) {
			srv.SendGroupDM("G0GROUP0001", userOf(u), text)
		},
		Channel: func(_ *testing.T, text string) {
			srv.SendChannel("C0GENERAL01", userOf(bob), text)
		},
		Own: func(_ *testing.T, text string) {
			ch := srv.DMChannelOf(alice.ID)
			if ch == "" {
				ch = "D0NOBODY001" // Alice has not written yet
			}
			srv.SendOwn(ch, text)
		},
		Edit: func(t *testing.T, u adaptertest.User, text string) {
			mu.Lock()
			ts := lastDM[u.ID]
			mu.Unlock()
			if ts == "" {
				t.Fatalf("no earlier DM from %s to edit", u.Name)
			}
			srv.EditDM(userOf(u), ts, text)
		},
		Tap: func(t *testing.T, u adaptertest.User, ts, data string) func() bool {
			trigger, err := srv.Tap(userOf(u), srv.DMChannelOf(u.ID), ts, data)
			if err != nil {
				t.Fatal(err)
			}
			// Slack's ack comes once the core has the tap: waited for here,
			// on the test's goroutine.
			srv.WaitTapAck(t, trigger, 10*time.Second)
			return func() bool { return true }
		},
		EditDM:   func(_ *testing.T, u adaptertest.User, ts, text string) { srv.EditDM(userOf(u), ts, text) },
		DeleteDM: func(_ *testing.T, u adaptertest.User, ts string) { srv.DeleteDM(userOf(u), ts) },
		React: func(t *testing.T, u adaptertest.User, ts, emoji string, removed bool) {
			name, ok := wire.ReactionName(emoji)
			if !ok {
				t.Fatalf("no Slack name for %s", emoji)
			}
			srv.ReactDM(userOf(u), ts, name, removed)
		},
		BotReactions:      func(_ *testing.T, ch, ts string) []string { return srv.BotReactions(ch, ts) },
		RateLimitNextSend: func(_ *testing.T, d time.Duration) { srv.RateLimitNext("chat.postMessage", d) },
		RateLimitAfter: func(_ *testing.T, n int, d time.Duration) {
			srv.RateLimitAfter("chat.postMessage", n, d)
		},
		RefuseNextMarkup:  func(*testing.T) { srv.RefuseNextMarkup() },
		RefuseMarkupAfter: func(_ *testing.T, n int) { srv.RefuseMarkupAfter(n) },
		NoCodeLanguage:    true, // mrkdwn code blocks have no language
		Block:             func(_ *testing.T, u adaptertest.User) { srv.Block(u.ID) },
		UnknownThread:     "D0UNKNOWN01",
		SendFile: func(_ *testing.T, u adaptertest.User, f adaptertest.File) string {
			return srv.ShareFile(userOf(u), slacktest.File{
				Name: f.Name, MIME: f.MIME, Data: f.Data, Text: escapeMrkdwn(f.Caption),
				VoiceClip: f.Kind == core.AttachVoice,
			}).Channel
		},
		// Slack has no stickers; a voice note is a clip recorded in Slack.
		FileKinds: []core.AttachmentKind{core.AttachImage, core.AttachVoice, core.AttachDocument},
		// One more failure than the adapter retries.
		FailNextFetch: func(*testing.T) { srv.FailNextDownloads(b.adapter.maxServerRetries + 1) },
		FilesSent:     func(_ *testing.T, thread string) []adaptertest.SentFile { return filesSent(srv, thread) },
		// A bot has no voice clip to send: a voice note is an audio file.
		VoiceAs: core.AttachAudio,
		// files.completeUploadExternal answers the files, not the ts of
		// the message they make.
		FileIDs: true,
	}
	// The fake goes on delivering after Stop (the echo of the last reply,
	// retried while the adapter refuses it), and its POSTs leave
	// keep-alive connections to Parley's server: those goroutines belong
	// to the fake and the host, not the adapter, so both are shut first.
	rig.Quiesce = func(*testing.T) {
		srv.Close()
		if b.events != nil {
			b.events.CloseClientConnections()
		}
	}
	return rig
}

// filesSent is every file the bot shared in thread as Slack shows it; an
// upload's comment is its first file's caption.
func filesSent(srv *slacktest.Server, thread string) []adaptertest.SentFile {
	kinds := map[string]core.AttachmentKind{"image": core.AttachImage, "audio": core.AttachAudio,
		"video": core.AttachVideo, "file": core.AttachDocument}
	var out []adaptertest.SentFile
	for _, up := range srv.Uploads(thread) {
		shown := markuptest.Slack(up.Comment, true)
		for i, f := range up.Files {
			sf := adaptertest.SentFile{Kind: kinds[f.Shown()], Name: f.Name, MIME: f.MIMEType, Data: f.Data, PlatformMessageID: f.ID}
			if i == 0 && up.Comment != "" {
				sf.Caption, sf.CaptionShown = shown.Text, &shown
			}
			out = append(out, sf)
		}
	}
	return out
}
