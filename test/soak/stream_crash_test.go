//go:build linux

package soak

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// streamPlatform is one platform a streamed reply grows on, as the kill
// test drives it: the adapter's config, a user's DM, and what the user
// sees of the bot's messages.
type streamPlatform struct {
	name string
	// start starts the fake and returns the adapters section.
	start func(t *testing.T) string
	// ready waits for the running process to be connected.
	ready func(t *testing.T, gen int)
	// dm sends the user's message.
	dm func(t *testing.T)
	// grown waits for the reply to show, updated (created or grown)
	// n times.
	grown func(t *testing.T, n int)
	// seen is what the user sees of the bot now, one text a message
	// (a draft counts as one while it shows), and whether it is settled.
	seen func() []string
	// gone reports whether every message that grew and is no longer
	// seen was taken back (deleted) or finished by an edit.
	gone func() bool
}

func telegramStream() streamPlatform {
	var tg *telegramtest.Server
	user := telegramtest.User{ID: 7_300_101, FirstName: "Kim"}
	return streamPlatform{
		name: "Telegram",
		start: func(t *testing.T) string {
			tg = telegramtest.NewServer(t)
			tg.StartedBy(user)
			return fmt.Sprintf("  telegram:\n    token: %q\n    api_url: %q\n    format: plain\n", tg.Token(), tg.URL())
		},
		ready: func(*testing.T, int) {},
		dm:    func(*testing.T) { tg.SendPrivate(user, "tell me") },
		grown: func(t *testing.T, n int) { tg.WaitDrafts(t, user.ID, n, readyTimeout) },
		seen: func() []string {
			var out []string
			for _, m := range tg.Sent(user.ID) {
				out = append(out, m.Plain)
			}
			return out
		},
		// A draft is no message: it expires, and nothing is left to
		// take back.
		gone: func() bool { return true },
	}
}

func discordStream() streamPlatform {
	var dc *discordtest.Server
	var channel string
	lin := discordtest.User{ID: "300000000000000101", Username: "lin"}
	return streamPlatform{
		name: "Discord",
		start: func(t *testing.T) string {
			dc = discordtest.NewServer(t)
			return fmt.Sprintf("  discord:\n    token: %q\n    api_url: %q\n", dc.Token(), dc.URL())
		},
		ready: func(t *testing.T, _ int) { dc.WaitReady(t, readyTimeout) },
		dm:    func(*testing.T) { channel, _ = dc.SendDM(lin, "tell me") },
		grown: func(t *testing.T, n int) {
			dc.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool { return len(ms) == 1 && 1+len(ms[0].Edits) >= n }, readyTimeout)
		},
		seen: func() []string {
			var out []string
			for _, m := range dc.Visible(channel) {
				out = append(out, markuptest.Discord(m.Content).Text)
			}
			return out
		},
		gone: func() bool {
			for _, m := range dc.AllSent() {
				if m.ChannelID == channel && !m.Deleted && !strings.Contains(m.Content, "finished") {
					return false
				}
			}
			return true
		},
	}
}

func slackStream() streamPlatform {
	var sl *slacktest.Server
	var channel string
	mei := slacktest.User{ID: "U0MEI00101", Name: "mei"}
	return streamPlatform{
		name: "Slack",
		start: func(t *testing.T) string {
			sl = slacktest.NewServer(t)
			return fmt.Sprintf("  slack:\n    mode: socket\n    bot_token: %q\n    app_token: %q\n    signing_secret: %q\n    api_url: %q\n",
				sl.BotToken(), sl.AppToken(), sl.SigningSecret(), sl.APIURL())
		},
		ready: func(t *testing.T, gen int) { sl.WaitConnections(t, gen, readyTimeout) },
		dm:    func(*testing.T) { channel, _ = sl.SendDM(mei, "tell me") },
		grown: func(t *testing.T, n int) {
			sl.WaitBotMessages(t, channel, readyTimeout, func(ms []slacktest.BotMessage) bool { return len(ms) == 1 && len(ms[0].History) >= n })
		},
		seen: func() []string {
			var out []string
			for _, text := range sl.Visible(channel) {
				out = append(out, slacktest.Unescape(text))
			}
			return out
		},
		gone: func() bool {
			for _, m := range sl.BotMessages(channel) {
				if !m.Deleted && !strings.Contains(m.Text, "finished") {
					return false
				}
			}
			return true
		},
	}
}

// Issue 32, part 5, through parley run on each platform: the process is
// killed (SIGKILL) while a reply is growing, and restarted. The user is
// left with the finished reply, once, and nothing of the half answer:
// on Discord and Slack the restarted process deletes the message that
// had grown; on Telegram the draft expires and the finished text is sent
// once.
func TestKillMidStreamLeavesOneFinishedReply(t *testing.T) {
	for _, p := range []streamPlatform{telegramStream(), discordStream(), slackStream()} {
		t.Run(p.name, func(t *testing.T) {
			killMidStream(t, p)
		})
	}
}

func killMidStream(t *testing.T, p streamPlatform) {
	const half = "Here is the first half of an answer that a crash will cut short before it ends"
	const final = "The finished answer."
	dir := artifactDir(t)
	model := llmtest.NewServer(t)
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	var calls atomic.Int32
	model.Respond(func(llmtest.Request) llmtest.Response {
		if calls.Add(1) == 1 {
			// Words come only as the test lets them: the process dies
			// with this answer half written.
			return llmtest.Text(half).WithWordDeltas().WithDeltaGate(gate)
		}
		return llmtest.Text(final)
	})
	rep, _ := startKillBot(t, dir, model.URL(), "", p.start(t))
	p.ready(t, 1)

	p.dm(t)
	for range 6 {
		gate <- struct{}{}
	}
	// Killed once the half answer has grown twice: the process then has
	// recorded the message it created (a crash between the platform's
	// create and that record, a few milliseconds, is the one window
	// left; BENCHMARKS.md).
	p.grown(t, 1)
	for range 4 {
		gate <- struct{}{}
	}
	p.grown(t, 2)
	rep.kill(t)

	rep.start(t)
	p.ready(t, 2)
	require.True(t, waitFor(readyTimeout, func() bool {
		seen := p.seen()
		return len(seen) == 1 && seen[0] == final && p.gone()
	}), "after the restart the user should see the finished reply alone; they see %q; log %s", p.seen(), rep.logPath)
	rep.stop(t)
	require.Equal(t, []string{final}, p.seen(), "one message, the finished reply")
	require.Equal(t, int32(2), calls.Load(), "the turn was answered again once")
}
