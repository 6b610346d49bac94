package discord

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
)

// choicesOf are n choices as the core gives them for question 42.
func choicesOf(labels ...string) []core.Choice {
	out := make([]core.Choice, len(labels))
	for i, l := range labels {
		out[i] = core.Choice{Label: l, Data: core.ChoiceData(42, i)}
	}
	return out
}

// ask sends text with choices and returns the message ids.
func (b *testBundle) ask(t *testing.T, ch, key, text string, choices []core.Choice) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: ch, Text: text, IdempotencyKey: key, Choices: choices})
	require.NoError(t, err)
	return res.PlatformMessageIDs
}

// grey are the open buttons of choices, as the user sees them.
func grey(choices []core.Choice) []discordtest.Button {
	out := make([]discordtest.Button, len(choices))
	for i, c := range choices {
		out[i] = discordtest.Button{Label: c.Label, CustomID: c.Data, Style: discordtest.StyleSecondary}
	}
	return out
}

// tap makes user tap button data on message id and waits for the bot's
// acknowledgement.
func (b *testBundle) tap(t *testing.T, user discordtest.User, id, data string) discordtest.Callback {
	t.Helper()
	iid, err := b.srv.Tap(user, id, data)
	require.NoError(t, err)
	return b.srv.WaitCallback(t, iid, waitFor)
}

// withTaps starts b with answer as the core's HandleTap.
func withTaps(t *testing.T, b *testBundle, answer func(core.InboundMessage) (core.TapAnswer, error)) *testBundle {
	t.Helper()
	b.core.TapAnswer = answer
	b.start(t)
	return b
}

func TestChoicesAreButtonsOnTheLastPart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	choices := choicesOf("Tea", "Coffee", "Water", "Juice", "Milk", strings.Repeat("ä", 90), "Nothing")

	ids := b.ask(t, ch, "run-70", "What would you like?", choices)
	require.Len(t, ids, 1)
	m, ok := b.srv.Message(ids[0])
	require.True(t, ok)
	require.Equal(t, "What would you like?", m.Content)
	require.Len(t, m.Components, 2, "five buttons to a row")
	require.Len(t, m.Components[0], 5)
	want := grey(choices)
	want[5].Label = strings.Repeat("ä", 79) + "…" // Discord's 80 characters
	require.Equal(t, want, m.Buttons())

	long := strings.Repeat("word ", 500) // three parts
	ids = b.ask(t, ch, "run-71", long, choicesOf("Yes", "No"))
	require.Len(t, ids, 2)
	first, _ := b.srv.Message(ids[0])
	last, _ := b.srv.Message(ids[1])
	require.Empty(t, first.Components, "only the last part has the buttons")
	require.Equal(t, grey(choicesOf("Yes", "No")), last.Buttons())
}

func TestPlainResendOfARefusedPartKeepsTheButtons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.RefuseNextMarkup()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: ch, Text: "**Pick** one", Format: core.FormatRichText,
		IdempotencyKey: "run-72", Choices: choicesOf("A", "B")})
	require.NoError(t, err)
	require.Len(t, res.PlatformMessageIDs, 1)
	m, _ := b.srv.Message(res.PlatformMessageIDs[0])
	require.Equal(t, grey(choicesOf("A", "B")), m.Buttons())
}

func TestGrownReplyGetsItsButtonsWhenFinished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-73", core.FormatText)
	require.NoError(t, update(s, "Which one"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	choices := choicesOf("Left", "Right")
	res, err := s.Finish(ctx, core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-73", Text: "Which one", Choices: choices})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1, "the grown message is the question")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, "Which one", sent[0].Content)
	require.Equal(t, grey(choices), sent[0].Buttons(), "an edit of the same text adds the buttons")
}

func TestEditMessageShowsTheButtons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	ids := b.ask(t, ch, "run-74", "Which o", nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	choices := choicesOf("Left", "Right")
	require.NoError(t, b.adapter.EditMessage(ctx, ids[0], core.OutboundMessage{ChannelThreadID: ch, Text: "Which one?", Choices: choices}))
	m, _ := b.srv.Message(ids[0])
	require.Equal(t, "Which one?", m.Content)
	require.Equal(t, grey(choices), m.Buttons())
}

func TestTapReachesTheCoreAndIsAcknowledgedWithItsNotice(t *testing.T) {
	t.Parallel()
	// Taps need no intent: the bot still asks for DIRECT_MESSAGES only.
	b := withTaps(t, newBundleOn(t, discordtest.NewServer(t, discordtest.WithStrictIntents())),
		func(core.InboundMessage) (core.TapAnswer, error) {
			return core.TapAnswer{Notice: core.NoticeStaleButton}, nil
		})
	require.Equal(t, 1<<12|1<<13, b.srv.Intents())
	ch := b.greet(t, ada)
	choices := choicesOf("Tea", "Coffee")
	id := b.ask(t, ch, "run-75", "Tea or coffee?", choices)[0]

	iid, err := b.srv.Tap(ada, id, choices[1].Data)
	require.NoError(t, err)
	cb := b.srv.WaitCallback(t, iid, waitFor)

	taps := b.core.Taps()
	require.Len(t, taps, 1)
	tap := taps[0]
	require.Equal(t, &core.Tap{Data: choices[1].Data, MessageID: id, ID: iid}, tap.Tap)
	require.Equal(t, Platform, tap.Platform)
	require.Equal(t, ch, tap.ChannelThreadID)
	require.Equal(t, ada.ID, tap.ChannelUserID)
	require.Equal(t, "Ada Lovelace", tap.DisplayName)
	require.Equal(t, "Coffee", tap.Text, "the button's label")
	require.True(t, tap.Direct)
	require.False(t, tap.SentAt.IsZero())
	require.Len(t, b.core.Messages(), 1, "a tap is not an inbound message: only the greeting")

	require.Equal(t, discordtest.Callback{Type: 4, Content: core.NoticeStaleButton, Flags: 64, Status: 204, At: cb.At}, cb)
	require.True(t, cb.Ephemeral())
	m, _ := b.srv.Message(id)
	require.Equal(t, grey(choices), m.Buttons(), "no choice made: the buttons stay")
	require.Empty(t, m.Edits)
}

func TestPlainAckWithoutNotice(t *testing.T) {
	t.Parallel()
	b := withTaps(t, newBundle(t), nil)
	ch := b.greet(t, ada)
	choices := choicesOf("A", "B")
	id := b.ask(t, ch, "run-76", "A or B?", choices)[0]
	cb := b.tap(t, ada, id, choices[0].Data)
	require.Equal(t, 6, cb.Type, "DEFERRED_UPDATE_MESSAGE")
	require.Equal(t, 204, cb.Status)
}

func TestChosenClosesTheQuestion(t *testing.T) {
	t.Parallel()
	var taps atomic.Int32
	b := withTaps(t, newBundle(t), func(msg core.InboundMessage) (core.TapAnswer, error) {
		if taps.Add(1) == 1 {
			return core.TapAnswer{Chosen: msg.Text}, nil
		}
		return core.TapAnswer{Notice: core.NoticeAlreadyAnswered}, nil
	})
	ch := b.greet(t, ada)
	choices := choicesOf("Tea", "Coffee", "Water")
	first := b.ask(t, ch, "run-77", "Tea, coffee or water?", choices)[0]
	second := b.ask(t, ch, "run-78", "Asked again", choices)[0]

	cb := b.tap(t, ada, first, choices[1].Data)
	require.Equal(t, 7, cb.Type, "UPDATE_MESSAGE: acknowledged and closed in one call")
	require.Equal(t, 204, cb.Status)
	closed := []discordtest.Button{
		{Label: "Tea", CustomID: choices[0].Data, Style: discordtest.StyleSecondary, Disabled: true},
		{Label: "✓ Coffee", CustomID: choices[1].Data, Style: discordtest.StyleSuccess, Disabled: true},
		{Label: "Water", CustomID: choices[2].Data, Style: discordtest.StyleSecondary, Disabled: true},
	}
	m, _ := b.srv.Message(first)
	require.Equal(t, closed, m.Buttons())
	require.Equal(t, "Tea, coffee or water?", m.Content, "the question's text stays")
	_, err := b.srv.Tap(ada, first, choices[0].Data)
	require.Error(t, err, "a disabled button cannot be tapped")

	// A tap the core refuses (the question answered, here through its
	// other copy) gets the core's notice and changes nothing.
	cb = b.tap(t, ada, second, choices[0].Data)
	require.Equal(t, 4, cb.Type)
	require.Equal(t, core.NoticeAlreadyAnswered, cb.Content)
	require.True(t, cb.Ephemeral())
	m, _ = b.srv.Message(second)
	require.Equal(t, grey(choices), m.Buttons())
	require.Len(t, b.core.Taps(), 2)
}

func TestChosenWithANoticeClosesByAnEdit(t *testing.T) {
	t.Parallel()
	b := withTaps(t, newBundle(t), func(msg core.InboundMessage) (core.TapAnswer, error) {
		return core.TapAnswer{Chosen: msg.Text, Notice: "Noted."}, nil
	})
	ch := b.greet(t, ada)
	choices := choicesOf("Yes", "No")
	id := b.ask(t, ch, "run-79", "Sure?", choices)[0]
	cb := b.tap(t, ada, id, choices[0].Data)
	require.Equal(t, 4, cb.Type)
	require.Equal(t, "Noted.", cb.Content)
	b.srv.WaitVisible(t, ch, func(ms []discordtest.SentMessage) bool {
		for _, m := range ms {
			if m.MessageID == id && len(m.Buttons()) > 0 && m.Buttons()[0].Disabled {
				return true
			}
		}
		return false
	}, waitFor)
	got, _ := b.srv.Message(id)
	require.Equal(t, "✓ Yes", got.Buttons()[0].Label)
	require.Equal(t, "Sure?", got.Content)
}

func TestLateAcknowledgementStillClosesTheQuestion(t *testing.T) {
	t.Parallel()
	// Every callback is past the interaction's time.
	b := withTaps(t, newBundleOn(t, discordtest.NewServer(t, discordtest.WithInteractionTimeout(-1))),
		func(msg core.InboundMessage) (core.TapAnswer, error) { return core.TapAnswer{Chosen: msg.Text}, nil })
	ch := b.greet(t, ada)
	choices := choicesOf("Yes", "No")
	id := b.ask(t, ch, "run-80", "Sure?", choices)[0]
	cb := b.tap(t, ada, id, choices[1].Data)
	require.Equal(t, 404, cb.Status)
	require.Equal(t, 10062, cb.Code, "Unknown interaction")

	b.srv.WaitVisible(t, ch, func(ms []discordtest.SentMessage) bool {
		for _, m := range ms {
			if m.MessageID == id && len(m.Edits) > 0 {
				return true
			}
		}
		return false
	}, waitFor)
	got, _ := b.srv.Message(id)
	require.Equal(t, "✓ No", got.Buttons()[1].Label, "closed by an edit of the message")
	require.True(t, got.Buttons()[0].Disabled)
	eventually(t, func() bool { return strings.Contains(b.logs.String(), "too late") }, "the late ack is logged")
}

func TestTapInAServerIsIgnored(t *testing.T) {
	t.Parallel()
	b := withTaps(t, newBundle(t), nil)
	iid := b.srv.TapGuild("300000000000000001", "300000000000000002", grace, "300000000000000003", core.ChoiceData(42, 0))
	cb := b.srv.WaitCallback(t, iid, waitFor)
	require.Equal(t, 6, cb.Type, "acknowledged, nothing shown")
	require.Equal(t, 204, cb.Status)
	require.Empty(t, b.core.Taps(), "the core never hears of it")
}

func TestTapTheCoreCannotTake(t *testing.T) {
	t.Parallel()
	b := withTaps(t, newBundle(t), func(core.InboundMessage) (core.TapAnswer, error) {
		return core.TapAnswer{}, errors.New("database is locked")
	})
	ch := b.greet(t, ada)
	choices := choicesOf("Yes", "No")
	id := b.ask(t, ch, "run-81", "Sure?", choices)[0]
	cb := b.tap(t, ada, id, choices[0].Data)
	require.Equal(t, 4, cb.Type)
	require.Equal(t, "Could not take that now, try again.", cb.Content)
	require.True(t, cb.Ephemeral())
	m, _ := b.srv.Message(id)
	require.Equal(t, grey(choices), m.Buttons(), "nothing changes")
	require.Empty(t, m.Edits)
	require.Contains(t, b.logs.String(), "database is locked")
	require.NotContains(t, b.logs.String(), b.srv.Interactions()[0].Token, "the interaction token is never logged")
}

// A recorder without TapAnswer records the tap and answers a plain ack.
func TestRecorderAnswersAPlainAckByDefault(t *testing.T) {
	t.Parallel()
	r := adaptertest.NewRecorder()
	a, err := r.HandleTap(context.Background(), core.InboundMessage{Tap: &core.Tap{ID: "1"}})
	require.NoError(t, err)
	require.Equal(t, core.TapAnswer{}, a)
	require.Len(t, r.Taps(), 1)
	require.Empty(t, r.Messages())
}

func TestOtherAndMalformedInteractionsNeverReachTheCore(t *testing.T) {
	t.Parallel()
	b := withTaps(t, newBundle(t), nil)
	ch := b.greet(t, ada)
	// A slash command (type 2): the bot has none, and does not answer.
	b.srv.Dispatch("INTERACTION_CREATE", map[string]any{
		"id": "1300000000000009001", "type": 2, "token": "t1", "channel_id": ch, "version": 1,
		"data": map[string]any{"id": "1", "name": "ping", "type": 1},
		"user": map[string]any{"id": ada.ID, "username": ada.Username},
	})
	// A button tap without its user or message: acknowledged, not handed on.
	b.srv.Dispatch("INTERACTION_CREATE", map[string]any{
		"id": "1300000000000009002", "type": 3, "token": "t2", "channel_id": ch, "version": 1,
		"data": map[string]any{"custom_id": "q42.0", "component_type": 2},
	})
	// Events are handled in order: once this DM is in, both were seen.
	b.srv.SendDM(ada, "after")
	b.core.Wait(t, 2, waitFor)
	eventually(t, func() bool { return b.srv.Calls("interactions.callback") == 1 }, "the malformed tap is acknowledged")
	require.Empty(t, b.core.Taps())
	require.Contains(t, b.logs.String(), "malformed discord button tap")
	require.NotContains(t, b.logs.String(), "panic")
}

func TestResendOfAGrownQuestionAddsItsButtons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	// A process grew the question whole, then died before finishing it.
	s := startStream(t, b, ch, "run-82", core.FormatText)
	require.NoError(t, update(s, "Which one?"))

	choices := choicesOf("Left", "Right")
	ids := b.ask(t, ch, "run-82", "Which one?", choices)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1, "the nonce returned the grown message")
	require.Equal(t, ids[0], sent[0].MessageID)
	require.Equal(t, grey(choices), sent[0].Buttons())
}
