package app

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/slack"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

// The tap tests run one script on each platform's fake; a tapFake and its
// tapUsers are what a script needs of a platform, each read as the user
// sees it (after the fake's own parsing).

// tapPlatforms are the platforms with buttons the tap tests cover (the web
// chat's are in choices_test.go).
var tapPlatforms = []struct {
	name string
	open func(t *testing.T) tapFake
}{
	{"telegram", func(t *testing.T) tapFake { return &telegramTaps{fake: telegramtest.NewServer(t)} }},
	{"discord", func(t *testing.T) tapFake { return &discordTaps{fake: discordtest.NewServer(t)} }},
	{"slack", func(t *testing.T) tapFake { return &slackTaps{fake: slacktest.NewServer(t)} }},
}

// tapFake is a platform's fake with two users.
type tapFake interface {
	// config is the adapters: section for the fake; extra is more YAML
	// under the adapter's own section, each line indented four spaces.
	config(extra string) string
	// ready waits until the bot, started for the n-th time, is connected.
	ready(t *testing.T, n int)
	// user is the first user (0) or the second (1).
	user(i int) tapUser
}

// tapUser is one user in a DM with the bot.
type tapUser interface {
	platform() core.Platform
	// thread is the DM's thread id (the user has written once).
	thread() string
	say(t *testing.T, text string)
	// shown waits until the bot has sent at least n messages in the DM
	// and returns them, as they show now.
	shown(t *testing.T, n int) []shownMessage
	// reads waits until the bot's messages in the DM read exactly want,
	// in order (a reply the model writes may show its first words first),
	// and returns them.
	reads(t *testing.T, want ...string) []shownMessage
	// press taps the button with data on m (forged: whether or not m
	// shows it, as a client showing old buttons would) and returns the
	// notice the acknowledgement showed, "" for none.
	press(t *testing.T, m shownMessage, data string, forged bool) string
	// chosen is the choice m's buttons are closed on, "" while open.
	chosen(m shownMessage) string
}

// shownMessage is a bot message as the user sees it.
type shownMessage struct {
	ID   string
	Text string
	// Buttons are the buttons it shows that can be tapped.
	Buttons []core.Choice
}

// tap taps m's button with data and checks the notice shown.
func tap(t *testing.T, u tapUser, m shownMessage, data, notice string) {
	t.Helper()
	require.Equal(t, notice, u.press(t, m, data, false), "the notice of a tap on %q", data)
}

// forge is tap with any data.
func forge(t *testing.T, u tapUser, m shownMessage, data, notice string) {
	t.Helper()
	require.Equal(t, notice, u.press(t, m, data, true), "the notice of a forged tap on %q", data)
}

// waitChosen waits until m's buttons are closed on label.
func waitChosen(t *testing.T, u tapUser, m shownMessage, label string) {
	t.Helper()
	require.Eventually(t, func() bool { return u.chosen(m) == label }, waitFor, 5*time.Millisecond,
		"%q closed on %q; it shows %q", m.Text, label, u.chosen(m))
}

// buttonData is the data of the button labelled label on m.
func buttonData(t *testing.T, m shownMessage, label string) string {
	t.Helper()
	for _, b := range m.Buttons {
		if b.Label == label {
			return b.Data
		}
	}
	t.Fatalf("%q shows no button %q: %+v", m.Text, label, m.Buttons)
	return ""
}

// chosenMark is what each platform puts before the label of the choice a
// closed question was answered with.
const chosenMark = "✓ "

type telegramTaps struct{ fake *telegramtest.Server }

func (f *telegramTaps) config(extra string) string { return telegramConfig(f.fake, extra) }

// ready: Telegram keeps the updates of a bot that is down; nothing to wait
// for.
func (f *telegramTaps) ready(*testing.T, int) {}

func (f *telegramTaps) user(i int) tapUser {
	return &telegramUser{fake: f.fake, u: []telegramtest.User{ada, {ID: 4343, FirstName: "Eve"}}[i]}
}

type telegramUser struct {
	fake *telegramtest.Server
	u    telegramtest.User
}

func (u *telegramUser) platform() core.Platform    { return telegram.Platform }
func (u *telegramUser) thread() string             { return fmt.Sprint(u.u.ID) }
func (u *telegramUser) say(_ *testing.T, s string) { u.fake.SendPrivate(u.u, s) }

func (u *telegramUser) shown(t *testing.T, n int) []shownMessage {
	t.Helper()
	return u.shownOf(u.fake.WaitSent(t, u.u.ID, n, waitFor))
}

// reads: Telegram grows a reply in a draft, never in the message, but
// the wait is the same.
func (u *telegramUser) reads(t *testing.T, want ...string) []shownMessage {
	t.Helper()
	texts := func() []string {
		var out []string
		for _, m := range u.fake.Sent(u.u.ID) {
			out = append(out, m.Plain)
		}
		return out
	}
	if !assert.Eventually(t, func() bool { return slices.Equal(texts(), want) }, waitFor, 5*time.Millisecond) {
		t.Fatalf("the DM never read %q; it shows %q", want, texts())
	}
	return u.shownOf(u.fake.Sent(u.u.ID))
}

func (u *telegramUser) shownOf(ms []telegramtest.SentMessage) []shownMessage {
	var out []shownMessage
	for _, m := range ms {
		s := shownMessage{ID: strconv.Itoa(m.MessageID), Text: m.Plain}
		for _, row := range u.fake.Buttons(u.u.ID, m.MessageID) {
			for _, b := range row {
				s.Buttons = append(s.Buttons, core.Choice{Label: b.Text, Data: b.Data})
			}
		}
		out = append(out, s)
	}
	return out
}

func (u *telegramUser) press(t *testing.T, m shownMessage, data string, forged bool) string {
	t.Helper()
	id, err := strconv.Atoi(m.ID)
	require.NoError(t, err)
	tapFn := u.fake.Tap
	if forged {
		tapFn = u.fake.ForgeTap
	}
	upd, err := tapFn(u.u, id, data)
	require.NoError(t, err)
	var answer telegramtest.CallbackAnswer
	require.Eventually(t, func() bool {
		for _, a := range u.fake.CallbackAnswers() {
			if a.QueryID == upd.CallbackQuery.ID {
				answer = a
				return true
			}
		}
		return false
	}, waitFor, 5*time.Millisecond, "the tap on %q was never answered", data)
	require.False(t, answer.ShowAlert, "a toast, not an alert")
	return answer.Text
}

func (u *telegramUser) chosen(m shownMessage) string {
	id, _ := strconv.Atoi(m.ID)
	rows := u.fake.Buttons(u.u.ID, id)
	if len(rows) != 1 || len(rows[0]) != 1 {
		return ""
	}
	label, _ := strings.CutPrefix(rows[0][0].Text, chosenMark)
	return label
}

type discordTaps struct{ fake *discordtest.Server }

func (f *discordTaps) config(extra string) string {
	return fmt.Sprintf(`adapters:
  web: {enabled: false}
  discord:
    token: "%s"
    api_url: "%s"
%s
runs:
  debounce: 0s
`, f.fake.Token(), f.fake.URL(), extra)
}

// ready waits for the n-th session: a bot restarted identifies anew.
func (f *discordTaps) ready(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return f.fake.Identifies() >= n }, waitFor, 5*time.Millisecond, "the bot never connected")
	f.fake.WaitReady(t, waitFor)
}

func (f *discordTaps) user(i int) tapUser {
	return &discordUser{fake: f.fake, u: []discordtest.User{lin, {ID: "300000000000000777", Username: "eve"}}[i]}
}

type discordUser struct {
	fake *discordtest.Server
	u    discordtest.User
}

func (u *discordUser) platform() core.Platform    { return discord.Platform }
func (u *discordUser) thread() string             { return u.fake.DMChannelOf(u.u.ID) }
func (u *discordUser) say(_ *testing.T, s string) { u.fake.SendDM(u.u, s) }

func (u *discordUser) shown(t *testing.T, n int) []shownMessage {
	t.Helper()
	var out []shownMessage
	for _, m := range u.fake.WaitSent(t, u.thread(), n, waitFor) {
		now, _ := u.fake.Message(m.MessageID)
		out = append(out, discordShown(now))
	}
	return out
}

func (u *discordUser) reads(t *testing.T, want ...string) []shownMessage {
	t.Helper()
	var out []shownMessage
	for _, m := range u.fake.WaitShows(t, u.thread(), waitFor, want...) {
		out = append(out, discordShown(m))
	}
	return out
}

// discordShown is m as the user sees it: its buttons still enabled.
func discordShown(m discordtest.SentMessage) shownMessage {
	s := shownMessage{ID: m.MessageID, Text: m.Content}
	for _, b := range m.Buttons() {
		if !b.Disabled {
			s.Buttons = append(s.Buttons, core.Choice{Label: b.Label, Data: b.CustomID})
		}
	}
	return s
}

func (u *discordUser) press(t *testing.T, m shownMessage, data string, forged bool) string {
	t.Helper()
	tapFn := u.fake.Tap
	if forged {
		tapFn = u.fake.ForgeTap
	}
	id, err := tapFn(u.u, m.ID, data)
	require.NoError(t, err)
	cb := u.fake.WaitCallback(t, id, waitFor)
	require.Equal(t, http.StatusNoContent, cb.Status, "acknowledged in time: %+v", cb)
	switch cb.Type {
	case 4: // a reply: the notice, for the tapping user alone
		require.True(t, cb.Ephemeral(), "the notice is the user's alone")
		return cb.Content
	case 6, 7: // a plain ack, or the question closed
		return ""
	}
	t.Fatalf("a tap acknowledged with callback type %d", cb.Type)
	return ""
}

func (u *discordUser) chosen(m shownMessage) string {
	now, _ := u.fake.Message(m.ID)
	label := ""
	for _, b := range now.Buttons() {
		if !b.Disabled {
			return ""
		}
		if l, ok := strings.CutPrefix(b.Label, chosenMark); ok {
			label = l
		}
	}
	return label
}

type slackTaps struct{ fake *slacktest.Server }

func (f *slackTaps) config(extra string) string {
	return fmt.Sprintf(`adapters:
  web: {enabled: false}
  slack:
    mode: socket
    bot_token: "%s"
    app_token: "%s"
    signing_secret: "%s"
    api_url: "%s"
%s
runs:
  debounce: 0s
`, f.fake.BotToken(), f.fake.AppToken(), f.fake.SigningSecret(), f.fake.APIURL(), extra)
}

// ready waits for the n-th socket: a bot restarted connects anew.
func (f *slackTaps) ready(t *testing.T, n int) {
	t.Helper()
	f.fake.WaitConnections(t, n, waitFor)
}

func (f *slackTaps) user(i int) tapUser {
	return &slackUser{fake: f.fake, u: []slacktest.User{mei, {ID: "U0EVE00001", Name: "eve", RealName: "Eve Adams"}}[i]}
}

type slackUser struct {
	fake *slacktest.Server
	u    slacktest.User
}

func (u *slackUser) platform() core.Platform    { return slack.Platform }
func (u *slackUser) thread() string             { return u.fake.DMChannelOf(u.u.ID) }
func (u *slackUser) say(_ *testing.T, s string) { u.fake.SendDM(u.u, s) }

func (u *slackUser) shown(t *testing.T, n int) []shownMessage {
	t.Helper()
	var out []shownMessage
	for _, m := range u.fake.WaitSent(t, u.thread(), n, waitFor) {
		now, _ := u.fake.BotMessage(m.Channel, m.TS)
		out = append(out, slackShown(now))
	}
	return out
}

func (u *slackUser) reads(t *testing.T, want ...string) []shownMessage {
	t.Helper()
	var out []shownMessage
	for _, m := range u.fake.WaitShows(t, u.thread(), waitFor, want...) {
		out = append(out, slackShown(m))
	}
	return out
}

// slackShown is m as the user sees it.
func slackShown(m slacktest.BotMessage) shownMessage {
	s := shownMessage{ID: m.TS, Text: slacktest.Unescape(m.Text)}
	for _, b := range m.Buttons() {
		s.Buttons = append(s.Buttons, core.Choice{Label: b.Label, Data: b.Value})
	}
	return s
}

// press waits for the ack, then for what the bot shows after it: its
// notice (chat.postEphemeral), or, for a choice made without one, the
// question closed (chat.update); a notice goes before the close.
func (u *slackUser) press(t *testing.T, m shownMessage, data string, forged bool) string {
	t.Helper()
	ch := u.thread()
	before := len(u.fake.Ephemerals(ch))
	wasOpen := u.chosen(m) == ""
	tapFn := u.fake.Tap
	if forged {
		tapFn = u.fake.ForgeTap
	}
	trigger, err := tapFn(u.u, ch, m.ID, data)
	require.NoError(t, err)
	require.False(t, u.fake.WaitTapAck(t, trigger, waitFor).Late, "acknowledged within Slack's 3 s")
	require.Eventually(t, func() bool {
		return len(u.fake.Ephemerals(ch)) > before || wasOpen && u.chosen(m) != ""
	}, waitFor, 5*time.Millisecond, "the tap on %q showed nothing", data)
	if e := u.fake.Ephemerals(ch); len(e) > before {
		require.Equal(t, u.u.ID, e[before].User, "the notice is the user's alone")
		return slacktest.Unescape(e[before].Text)
	}
	return ""
}

func (u *slackUser) chosen(m shownMessage) string {
	now, _ := u.fake.BotMessage(u.thread(), m.ID)
	if len(now.Buttons()) > 0 {
		return ""
	}
	for _, c := range now.Context() {
		if l, ok := strings.CutPrefix(c, chosenMark); ok {
			return l
		}
	}
	return ""
}
