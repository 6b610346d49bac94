package slack

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
)

// choicesOf are choices as the core gives them for question 42.
func choicesOf(labels ...string) []core.Choice {
	out := make([]core.Choice, len(labels))
	for i, l := range labels {
		out[i] = core.Choice{Label: l, Data: core.ChoiceData(42, i)}
	}
	return out
}

// buttonsOf are the buttons of choices, as the user sees them.
func buttonsOf(choices []core.Choice) []slacktest.Button {
	out := make([]slacktest.Button, len(choices))
	for i, c := range choices {
		out[i] = slacktest.Button{Label: c.Label, ActionID: "choice_" + string(rune('0'+i)), Value: c.Data}
	}
	return out
}

// ask sends text with choices to ch and returns the message ts.
func (b *testBundle) ask(t *testing.T, ch, text string, format core.TextFormat, choices []core.Choice) []string {
	t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	res, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: ch, Text: text, Format: format, Choices: choices})
	require.NoError(t, err)
	return res.PlatformMessageIDs
}

// tap makes user tap the button value on message ts in ch and waits for
// the adapter's ack.
func (b *testBundle) tap(t *testing.T, user slacktest.User, ch, ts, value string) slacktest.TapAck {
	t.Helper()
	id, err := b.srv.Tap(user, ch, ts, value)
	require.NoError(t, err)
	return b.srv.WaitTapAck(t, id, waitFor)
}

// withTaps is setup with answer as the core's HandleTap.
func withTaps(t *testing.T, mode string, answer func(core.InboundMessage) (core.TapAnswer, error)) *testBundle {
	t.Helper()
	b := newBundle(t, mode)
	b.core.TapAnswer = answer
	b.start(t)
	return b
}

func TestChoicesAreButtonsOnTheLastPart(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	require.True(t, b.adapter.Capabilities().Choices)
	ch := b.greet(t, ada)
	choices := choicesOf("Tea & cake", "Coffee", strings.Repeat("ä", 90))

	ids := b.ask(t, ch, "What would *you* like?", core.FormatText, choices)
	require.Len(t, ids, 1)
	m, ok := b.srv.BotMessage(ch, ids[0])
	require.True(t, ok)
	require.Equal(t, "What would *you* like?", m.Text, "the text stays, as the notification's fallback")
	want := buttonsOf(choices)
	want[2].Label = strings.Repeat("ä", 74) + "…" // Slack's 75 characters
	require.Equal(t, want, m.Buttons())
	require.Len(t, m.Blocks, 2)
	require.Equal(t, "section", m.Blocks[0].Type)
	require.Equal(t, "What would *you* like?", m.Blocks[0].Text)
	require.Equal(t, "mrkdwn", m.Blocks[0].TextType)
	require.Equal(t, "actions", m.Blocks[1].Type)

	long := strings.Repeat("word ", 1000) // two parts; the last over a section's 3,000
	ids = b.ask(t, ch, long, core.FormatText, choicesOf("Yes", "No"))
	require.Len(t, ids, 2)
	first, _ := b.srv.BotMessage(ch, ids[0])
	last, _ := b.srv.BotMessage(ch, ids[1])
	require.Empty(t, first.Blocks, "only the last part has the buttons")
	require.Equal(t, buttonsOf(choicesOf("Yes", "No")), last.Buttons())
	var shown strings.Builder
	for _, bl := range last.Blocks[:len(last.Blocks)-1] {
		require.Equal(t, "section", bl.Type)
		shown.WriteString(bl.Text)
	}
	require.Equal(t, strings.Join(strings.Fields(last.Text), ""), strings.Join(strings.Fields(shown.String()), ""), "the sections show the part's text")
}

func TestRichQuestionRefusedMarkupKeepsTheButtons(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.RefuseMarkupAfter(0)
	ids := b.ask(t, ch, "**Pick** one", core.FormatRichText, choicesOf("A", "B"))
	require.Len(t, ids, 1)
	m, _ := b.srv.BotMessage(ch, ids[0])
	require.False(t, m.Mrkdwn, "posted again as plain text")
	require.Equal(t, buttonsOf(choicesOf("A", "B")), m.Buttons())
	require.Equal(t, "plain_text", m.Blocks[0].TextType)
}

func TestGrownReplyGetsItsButtonsWhenFinished(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t)
	st := b.stream(t, core.FormatText)
	require.NoError(t, update(st, "Which one "))
	ctx, cancel := contextWithTimeout()
	defer cancel()
	choices := choicesOf("Left", "Right")
	res, err := st.Finish(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Text: "Which one", Choices: choices})
	require.NoError(t, err)
	ms := b.srv.BotMessages(b.dm)
	require.Len(t, ms, 1, "the grown message is the question")
	require.Equal(t, []string{ms[0].TS}, res.PlatformMessageIDs)
	require.False(t, ms[0].Streaming)
	require.Equal(t, "Which one", ms[0].Text)
	require.Equal(t, buttonsOf(choices), ms[0].Buttons())
	require.Equal(t, "chat.update", ms[0].History[len(ms[0].History)-1].Method)
}

func TestGrownReplyOfTheSameTextStillGetsItsButtons(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t, func(a *Adapter) { a.Streaming = StreamingEdits })
	st := b.stream(t, core.FormatText)
	require.NoError(t, update(st, "Which one?"))
	ctx, cancel := contextWithTimeout()
	defer cancel()
	choices := choicesOf("Left", "Right")
	_, err := st.Finish(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Text: "Which one?", Choices: choices})
	require.NoError(t, err)
	ms := b.srv.BotMessages(b.dm)
	require.Len(t, ms, 1)
	require.Equal(t, buttonsOf(choices), ms[0].Buttons(), "an edit of the same text adds the buttons")
}

func TestTapReachesTheCoreAndIsAcknowledgedWithItsNotice(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := withTaps(t, mode, func(core.InboundMessage) (core.TapAnswer, error) {
			return core.TapAnswer{Notice: core.NoticeStaleButton}, nil
		})
		ch := b.greet(t, ada)
		choices := choicesOf("Tea", "Coffee")
		ts := b.ask(t, ch, "Tea or coffee?", core.FormatText, choices)[0]

		id, err := b.srv.Tap(ada, ch, ts, choices[1].Data)
		require.NoError(t, err)
		ack := b.srv.WaitTapAck(t, id, waitFor)
		require.False(t, ack.Late)
		if mode == ModeEvents {
			require.Equal(t, http.StatusOK, ack.Status)
		}

		taps := b.core.Taps()
		require.Len(t, taps, 1)
		tap := taps[0]
		require.Equal(t, &core.Tap{Data: choices[1].Data, MessageID: ts, ID: id}, tap.Tap)
		require.Equal(t, Platform, tap.Platform)
		require.Equal(t, ch, tap.ChannelThreadID)
		require.Equal(t, ada.ID, tap.ChannelUserID)
		require.Equal(t, "ada.l", tap.DisplayName)
		require.Equal(t, "Coffee", tap.Text, "the button's label")
		require.True(t, tap.Direct)
		require.False(t, tap.SentAt.IsZero())
		require.Len(t, b.core.Messages(), 1, "a tap is not an inbound message: only the greeting")

		eph := b.srv.WaitEphemerals(t, ch, 1, waitFor)
		require.Equal(t, ada.ID, eph[0].User)
		require.Equal(t, core.NoticeStaleButton, eph[0].Text)
		m, _ := b.srv.BotMessage(ch, ts)
		require.Equal(t, buttonsOf(choices), m.Buttons(), "no choice made: the buttons stay")
		require.Len(t, m.History, 1)
	})
}

func TestPlainAckWithoutNotice(t *testing.T) {
	t.Parallel()
	b := withTaps(t, ModeSocket, nil)
	ch := b.greet(t, ada)
	choices := choicesOf("A", "B")
	ts := b.ask(t, ch, "A or B?", core.FormatText, choices)[0]
	b.tap(t, ada, ch, ts, choices[0].Data)
	require.Len(t, b.core.Taps(), 1)
	// A plain ack is the whole answer: nothing follows it.
	b.tap(t, ada, ch, ts, choices[1].Data)
	require.Len(t, b.core.Taps(), 2)
	require.Empty(t, b.srv.Ephemerals(ch))
	require.Zero(t, b.srv.Calls("chat.update"))
}

func TestChosenClosesTheQuestion(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		var n atomic.Int32
		b := withTaps(t, mode, func(msg core.InboundMessage) (core.TapAnswer, error) {
			if n.Add(1) == 1 {
				return core.TapAnswer{Chosen: msg.Text}, nil
			}
			return core.TapAnswer{Notice: core.NoticeAlreadyAnswered}, nil
		})
		ch := b.greet(t, ada)
		choices := choicesOf("Tea", "Coffee & cake", "Water")
		ts := b.ask(t, ch, "Tea, coffee or water?", core.FormatText, choices)[0]

		b.tap(t, ada, ch, ts, choices[1].Data)
		ms := b.srv.WaitBotMessages(t, ch, waitFor, func(ms []slacktest.BotMessage) bool {
			return len(ms) == 1 && len(ms[0].Buttons()) == 0
		})
		m := ms[0]
		require.Equal(t, "Tea, coffee or water?", m.Text, "the text stays")
		require.Equal(t, []string{"✓ Coffee & cake"}, m.Context())
		require.Equal(t, "section", m.Blocks[0].Type)
		require.Equal(t, "Tea, coffee or water?", m.Blocks[0].Text)
		require.Empty(t, b.srv.Ephemerals(ch), "a choice needs no notice")

		// Slack's client of a user who saw the buttons still can tap:
		// the second tap is told so.
		_, err := b.srv.Tap(ada, ch, ts, choices[0].Data)
		require.Error(t, err, "the closed question has no buttons left")
		ts2 := b.ask(t, ch, "Asked again", core.FormatText, choices)[0]
		b.tap(t, ada, ch, ts2, choices[0].Data)
		eph := b.srv.WaitEphemerals(t, ch, 1, waitFor)
		require.Equal(t, core.NoticeAlreadyAnswered, eph[0].Text)
		m2, _ := b.srv.BotMessage(ch, ts2)
		require.Equal(t, buttonsOf(choices), m2.Buttons())
	})
}

func TestTapOutsideADMIsIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	choices := choicesOf("A", "B")
	ts := b.ask(t, ch, "A or B?", core.FormatText, choices)[0]
	id, err := b.srv.Tap(ada, ch, ts, choices[0].Data)
	require.NoError(t, err)
	b.srv.WaitTapAck(t, id, waitFor)
	require.Len(t, b.core.Taps(), 1, "the DM's tap reaches the core")

	// The same payload from a channel, POSTed signed to the route.
	eb := setup(t, ModeEvents)
	payload := `{"type":"block_actions","trigger_id":"1.2.abc","user":{"id":"U0ADA00001"},` +
		`"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C0CHAN0001"},` +
		`"channel":{"id":"C0CHAN0001","name":"general"},"message":{"text":"A or B?"},` +
		`"actions":[{"action_id":"choice_0","value":"q42.0","type":"button","action_ts":"1700000001.000200","text":{"type":"plain_text","text":"A"}}]}`
	body := []byte(url.Values{"payload": {payload}}.Encode())
	status := postForm(t, eb, body, nil)
	require.Equal(t, http.StatusOK, status, "acked")
	require.Empty(t, eb.core.Taps(), "the host is not called")
	require.Zero(t, eb.srv.Calls("chat.postEphemeral")+eb.srv.Calls("chat.update"))
}

// postForm POSTs body to b's interactivity route, signed unless header
// has a signature, and returns the status.
func postForm(t *testing.T, b *testBundle, body []byte, header http.Header) int {
	t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	status, _, err := b.srv.PostSlashCommand(ctx, b.events.URL+InteractivityPath, body, header)
	require.NoError(t, err)
	return status
}

func TestInteractivitySignatureIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	ch := b.greet(t, ada)
	ts := b.ask(t, ch, "A or B?", core.FormatText, choicesOf("A", "B"))[0]
	payload := `{"type":"block_actions","trigger_id":"1.2.abc","user":{"id":"` + ada.ID + `"},` +
		`"container":{"type":"message","message_ts":"` + ts + `","channel_id":"` + ch + `"},` +
		`"actions":[{"action_id":"choice_0","value":"q42.0","type":"button","action_ts":"1700000001.000200"}]}`
	body := []byte(url.Values{"payload": {payload}}.Encode())
	bad := http.Header{"X-Slack-Signature": {"v0=" + strings.Repeat("0", 64)}, "X-Slack-Request-Timestamp": {"1700000000"}}
	require.Equal(t, http.StatusUnauthorized, postForm(t, b, body, bad))
	require.Empty(t, b.core.Taps())
	require.Equal(t, http.StatusOK, postForm(t, b, body, nil))
	require.Len(t, b.core.Taps(), 1)
}

func TestTapTheCoreCannotTakeChangesNothing(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := withTaps(t, mode, func(core.InboundMessage) (core.TapAnswer, error) {
			return core.TapAnswer{Chosen: "A"}, errors.New("database is locked")
		})
		ch := b.greet(t, ada)
		choices := choicesOf("A", "B")
		ts := b.ask(t, ch, "A or B?", core.FormatText, choices)[0]
		ack := b.tap(t, ada, ch, ts, choices[0].Data)
		require.False(t, ack.Late)
		eph := b.srv.WaitEphemerals(t, ch, 1, waitFor)
		require.Equal(t, noticeTapFailed, eph[0].Text)
		m, _ := b.srv.BotMessage(ch, ts)
		require.Equal(t, buttonsOf(choices), m.Buttons(), "nothing closed")
		require.Zero(t, b.srv.Calls("chat.update"))
		require.Contains(t, b.logs.String(), "database is locked")
	})
}

func TestEphemeralToAUserNotInTheDMFails(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.AddUser(grace)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api, err := b.adapter.live()
	require.NoError(t, err)
	_, err = api.PostEphemeralContext(ctx, ch, grace.ID, slack.MsgOptionText("psst", false))
	require.Error(t, err)
	require.Equal(t, "user_not_in_channel", errorCode(err))
}

func TestEditMessageShowsTheButtons(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	ts := b.ask(t, ch, "Which o", core.FormatText, nil)[0]
	ctx, cancel := contextWithTimeout()
	defer cancel()
	choices := choicesOf("Left", "Right")
	require.NoError(t, b.adapter.EditMessage(ctx, ts, core.OutboundMessage{ChannelThreadID: ch, Text: "Which one?", Choices: choices}))
	m, _ := b.srv.BotMessage(ch, ts)
	require.Equal(t, "Which one?", m.Text)
	require.Equal(t, buttonsOf(choices), m.Buttons())
	require.NoError(t, b.adapter.EditMessage(ctx, ts, core.OutboundMessage{ChannelThreadID: ch, Text: "Never mind"}))
	m, _ = b.srv.BotMessage(ch, ts)
	require.Empty(t, m.Blocks, "an edit without choices clears them")
}
