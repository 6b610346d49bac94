package telegram

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

// choicesOf are the buttons of question 42 with labels.
func choicesOf(labels ...string) []core.Choice {
	out := make([]core.Choice, len(labels))
	for i, l := range labels {
		out[i] = core.Choice{Label: l, Data: core.ChoiceData(42, i)}
	}
	return out
}

// ask sends text with choices to chatID through the adapter and returns
// the id of the message carrying the buttons (the last one).
func (b *testBundle) ask(t *testing.T, chatID int64, text string, choices []core.Choice) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: strconv.FormatInt(chatID, 10), Text: text, Choices: choices})
	require.NoError(t, err)
	require.NotEmpty(t, res.PlatformMessageIDs)
	id, err := strconv.Atoi(res.PlatformMessageIDs[len(res.PlatformMessageIDs)-1])
	require.NoError(t, err)
	return id
}

// tap makes user tap the button with data on message id and returns the
// callback query's id.
func (b *testBundle) tap(t *testing.T, user telegramtest.User, id int, data string) string {
	t.Helper()
	upd, err := b.srv.Tap(user, id, data)
	require.NoError(t, err)
	return upd.CallbackQuery.ID
}

// answers is a TapAnswer that answers the i-th tap with list[i], and
// records nothing else (the Recorder keeps the taps).
func answers(list ...core.TapAnswer) func(core.InboundMessage) (core.TapAnswer, error) {
	var mu sync.Mutex
	n := 0
	return func(core.InboundMessage) (core.TapAnswer, error) {
		mu.Lock()
		defer mu.Unlock()
		a := list[min(n, len(list)-1)]
		n++
		return a, nil
	}
}

func TestChoicesShowAsAnInlineKeyboard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)

	short := b.ask(t, ada.ID, "Tea or coffee?", choicesOf("Tea", "Coffee", "Neither"))
	m, ok := b.srv.Message(ada.ID, short)
	require.True(t, ok)
	require.Equal(t, "Tea or coffee?", m.Plain)
	require.Equal(t, [][]telegramtest.Button{
		{{Text: "Tea", Data: "q42.0"}, {Text: "Coffee", Data: "q42.1"}},
		{{Text: "Neither", Data: "q42.2"}},
	}, m.Buttons, "short labels sit two a row")

	long := b.ask(t, ada.ID, "When?", choicesOf("Tomorrow morning, early", "Later"))
	require.Equal(t, [][]telegramtest.Button{
		{{Text: "Tomorrow morning, early", Data: "q42.0"}},
		{{Text: "Later", Data: "q42.1"}},
	}, b.srv.Buttons(ada.ID, long), "a long label: one button a row")

	_, err := b.send(ada.ID, "no question")
	require.NoError(t, err)
	sent := b.srv.Sent(ada.ID)
	require.Nil(t, sent[len(sent)-1].Buttons, "a message without choices has no keyboard")
}

func TestChoicesGoOnTheLastPartOfASplitMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	text := strings.Repeat("word ", 1500) // over 4096 characters: two parts
	id := b.ask(t, ada.ID, text, choicesOf("Yes", "No"))
	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 2)
	require.Nil(t, sent[0].Buttons)
	require.Equal(t, id, sent[1].MessageID)
	require.Equal(t, [][]telegramtest.Button{{{Text: "Yes", Data: "q42.0"}, {Text: "No", Data: "q42.1"}}}, sent[1].Buttons)
}

func TestChoicesSurviveRefusedMarkup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.RefuseMarkupAfter(0)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: strconv.FormatInt(ada.ID, 10),
		Text: "Pick **one**", Format: core.FormatRichText, Choices: choicesOf("A", "B")})
	require.NoError(t, err)
	require.Len(t, res.PlatformMessageIDs, 1)
	sent := b.srv.Sent(ada.ID)
	last := sent[len(sent)-1]
	require.Empty(t, last.ParseMode, "sent again as plain text")
	require.Equal(t, [][]telegramtest.Button{{{Text: "A", Data: "q42.0"}, {Text: "B", Data: "q42.1"}}}, last.Buttons)
}

func TestTapReachesTheHostAndTheChoiceIsMarked(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.core.TapAnswer = answers(core.TapAnswer{Chosen: "Coffee"}, core.TapAnswer{Notice: core.NoticeAlreadyAnswered})
	b.start(t)
	b.greet(t, ada)
	id := b.ask(t, ada.ID, "Tea or coffee?", choicesOf("Tea", "Coffee"))

	qid := b.tap(t, ada, id, "q42.1")
	got := b.srv.WaitCallbackAnswers(t, 1, waitFor)
	require.Equal(t, qid, got[0].QueryID)
	require.Empty(t, got[0].Text, "a choice made: a plain acknowledgement")
	taps := b.core.Taps()
	require.Len(t, taps, 1)
	tap := taps[0]
	require.False(t, tap.SentAt.IsZero())
	tap.SentAt = tap.SentAt.Truncate(0)
	require.Equal(t, core.InboundMessage{
		Platform:        Platform,
		ChannelThreadID: "100001",
		ChannelUserID:   "100001",
		DisplayName:     "Ada Lovelace",
		Direct:          true,
		SentAt:          tap.SentAt,
		Tap:             &core.Tap{Data: "q42.1", MessageID: strconv.Itoa(id), ID: qid},
	}, tap)
	require.Len(t, b.core.Messages(), 1, "a tap is no message: only the greeting")

	// The keyboard becomes the mark of the choice.
	want := [][]telegramtest.Button{{{Text: "✓ Coffee", Data: "q42.1"}}}
	eventually(t, func() bool { return reflect.DeepEqual(want, b.srv.Buttons(ada.ID, id)) }, "the choice was not marked")
	m, _ := b.srv.Message(ada.ID, id)
	require.Equal(t, "Tea or coffee?", m.Plain, "the text stays")

	// A tap on the mark reaches the core, which says it was answered.
	b.tap(t, ada, id, "q42.1")
	got = b.srv.WaitCallbackAnswers(t, 2, waitFor)
	require.Equal(t, core.NoticeAlreadyAnswered, got[1].Text)
	require.Len(t, b.core.Taps(), 2)
	require.Equal(t, want, b.srv.Buttons(ada.ID, id), "nothing changes")
	require.Equal(t, 1, b.srv.Calls("editMessageReplyMarkup"))
	require.Empty(t, b.srv.Unanswered())
}

func TestTapOutsideAPrivateChatIsAcknowledgedOnly(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.core.TapAnswer = answers(core.TapAnswer{Chosen: "Yes"})
	b.start(t)
	const group = -100500
	b.srv.AddChat(group)
	id := b.ask(t, group, "Shall we?", choicesOf("Yes", "No"))

	_, err := b.srv.TapGroup(group, ada, id, "q42.0")
	require.NoError(t, err)
	got := b.srv.WaitCallbackAnswers(t, 1, waitFor)
	require.Empty(t, got[0].Text)
	require.Empty(t, b.core.Taps(), "the core hears nothing from a group")
	require.Zero(t, b.srv.Calls("editMessageReplyMarkup"))
	require.Len(t, b.srv.Buttons(group, id), 1)
}

func TestTapTheHostCannotTakeChangesNothing(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.core.TapAnswer = func(core.InboundMessage) (core.TapAnswer, error) {
		return core.TapAnswer{Chosen: "Yes"}, errors.New("database is locked")
	}
	b.start(t)
	b.greet(t, ada)
	id := b.ask(t, ada.ID, "Shall we?", choicesOf("Yes", "No"))
	before := b.srv.Buttons(ada.ID, id)

	b.tap(t, ada, id, "q42.0")
	got := b.srv.WaitCallbackAnswers(t, 1, waitFor)
	require.Equal(t, noticeTapFailed, got[0].Text)
	require.Zero(t, b.srv.Calls("editMessageReplyMarkup"))
	require.Equal(t, before, b.srv.Buttons(ada.ID, id))
	eventually(t, func() bool { return strings.Contains(b.logs.String(), "database is locked") }, "the error was not logged")

	// The update was taken: the next poll confirms it, nothing comes again.
	b.requireOnlySentinelAfter(t, 1)
	require.Len(t, b.core.Taps(), 1)
}

// requireOnlySentinelAfter is requireOnlySentinel for a core that already
// has n messages.
func (b *testBundle) requireOnlySentinelAfter(t *testing.T, n int) {
	t.Helper()
	b.srv.SendPrivate(ada, "sentinel")
	got := b.core.Wait(t, n+1, waitFor)
	require.Len(t, got, n+1, "something else reached the core: %+v", got)
	require.Equal(t, "sentinel", got[n].Text)
	eventually(t, func() bool { return b.srv.Pending() == 0 }, "updates left unconfirmed")
}

func TestTapsArePolledFor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	id := b.ask(t, ada.ID, "Shall we?", choicesOf("Yes", "No"))
	// The fake drops the kinds allowed_updates leaves out, as Telegram
	// does: a tap that arrives shows the adapter asks for callback_query.
	b.tap(t, ada, id, "q42.1")
	b.srv.WaitCallbackAnswers(t, 1, waitFor)
	require.Len(t, b.core.Taps(), 1)
	require.Zero(t, b.srv.Dropped())
}

func TestTapByWebhook(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	b.core.TapAnswer = answers(core.TapAnswer{Chosen: "No"})
	// Validation wants https; the fake posts to the test's http server.
	// Start registers it with setWebhook and the adapter's allowed_updates.
	b.adapter.WebhookURL = b.http.URL + WebhookPath
	b.start(t)
	b.srv.StartedBy(ada)
	id := b.ask(t, ada.ID, "Shall we?", choicesOf("Yes", "No"))

	b.tap(t, ada, id, "q42.1")
	b.srv.WaitCallbackAnswers(t, 1, waitFor)
	require.Len(t, b.core.Taps(), 1)
	require.Zero(t, b.srv.Dropped(), "setWebhook asked for callback_query")
	want := [][]telegramtest.Button{{{Text: "✓ No", Data: "q42.1"}}}
	eventually(t, func() bool { return reflect.DeepEqual(want, b.srv.Buttons(ada.ID, id)) }, "the choice was not marked")
}

func TestStreamedReplyGetsItsButtonsWhenFinished(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{StreamingAuto, StreamingEdits} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(a *Adapter) { a.Streaming = mode })
			b.greet(t, ada)
			st := b.streamIn(t, ada)
			grow(t, st, "Which", "Which one do you")
			for _, m := range b.srv.Messages(ada.ID) {
				require.Nil(t, m.Buttons, "no buttons while it grows")
			}
			msg := reply(ada, "Which one do you want?")
			msg.Choices = choicesOf("Red", "Blue")
			res, err := st.Finish(context.Background(), msg)
			require.NoError(t, err)
			require.Len(t, res.PlatformMessageIDs, 1)
			id, _ := strconv.Atoi(res.PlatformMessageIDs[0])
			m, ok := b.srv.Message(ada.ID, id)
			require.True(t, ok)
			require.Equal(t, "Which one do you want?", m.Plain)
			require.Equal(t, [][]telegramtest.Button{{{Text: "Red", Data: "q42.0"}, {Text: "Blue", Data: "q42.1"}}}, m.Buttons)
		})
	}
}

func TestStreamedReplyAlreadyShowingItsTextGetsItsButtons(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.Streaming = StreamingEdits })
	b.greet(t, ada)
	st := b.streamIn(t, ada)
	grow(t, st, "Which", "Which one?")
	msg := reply(ada, "Which one?")
	msg.Choices = choicesOf("Red", "Blue")
	res, err := st.Finish(context.Background(), msg)
	require.NoError(t, err)
	id, _ := strconv.Atoi(res.PlatformMessageIDs[0])
	require.Equal(t, [][]telegramtest.Button{{{Text: "Red", Data: "q42.0"}, {Text: "Blue", Data: "q42.1"}}}, b.srv.Buttons(ada.ID, id))
	require.Equal(t, 1, b.srv.Calls("editMessageReplyMarkup"), "the text needed no edit: the keyboard alone")
}

func TestEditMessageKeepsTheQuestionsButtons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	id := b.ask(t, ada.ID, "Which one", choicesOf("Red", "Blue"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	msg := core.OutboundMessage{ChannelThreadID: strconv.FormatInt(ada.ID, 10), Text: "Which one?", Choices: choicesOf("Red", "Blue")}
	require.NoError(t, b.adapter.EditMessage(ctx, strconv.Itoa(id), msg))
	m, _ := b.srv.Message(ada.ID, id)
	require.Equal(t, "Which one?", m.Plain)
	require.Len(t, m.Buttons, 1)
}

// lateClock is a settable clock for the fake (telegramtest.WithNow).
type lateClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *lateClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *lateClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestTapAcknowledgedTooLateStillMarksTheChoice(t *testing.T) {
	t.Parallel()
	clock := &lateClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	b := newBundleOn(t, telegramtest.NewServer(t, telegramtest.WithNow(clock.Now)))
	b.core.TapAnswer = func(core.InboundMessage) (core.TapAnswer, error) {
		// The core took longer than Telegram waits for the answer.
		clock.Add(telegramtest.CallbackExpiry + time.Second)
		return core.TapAnswer{Chosen: "Yes"}, nil
	}
	b.start(t)
	b.greet(t, ada)
	id := b.ask(t, ada.ID, "Shall we?", choicesOf("Yes", "No"))

	b.tap(t, ada, id, "q42.0")
	want := [][]telegramtest.Button{{{Text: "✓ Yes", Data: "q42.0"}}}
	eventually(t, func() bool { return reflect.DeepEqual(want, b.srv.Buttons(ada.ID, id)) }, "the choice was not marked")
	require.Empty(t, b.srv.CallbackAnswers(), "Telegram refused the late answer")
	require.Contains(t, b.logs.String(), "query is too old")
}
