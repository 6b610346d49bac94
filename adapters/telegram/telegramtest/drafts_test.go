package telegramtest_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

func TestDraftsAreShownNotSent(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := &fakeNow{t: now}
	tb := setup(t, telegramtest.WithNow(clock.Now))
	tb.srv.StartedBy(tb.alice)
	b, _ := tb.newBot(t)
	ctx := context.Background()

	for _, text := range []string{"Hel", "Hello *wor*", "Hello *world*"} {
		ok, err := b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: tb.alice.ID, DraftID: "7", Text: text, ParseMode: models.ParseModeMarkdown})
		require.NoError(t, err)
		require.True(t, ok)
	}
	drafts := tb.srv.WaitDrafts(t, tb.alice.ID, 3, wait)
	require.Len(t, drafts, 3)
	require.Equal(t, "Hello world", drafts[2].Plain, "the text a user reads")
	require.Equal(t, int64(7), drafts[2].DraftID)
	require.Len(t, drafts[2].Entities, 1)
	require.Empty(t, tb.srv.Sent(tb.alice.ID), "a draft is not a message")
	shown, ok := tb.srv.ShownDraft(tb.alice.ID)
	require.True(t, ok)
	require.Equal(t, "Hello world", shown.Plain)

	// A message ends the draft.
	_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "Hello world"})
	require.NoError(t, err)
	_, ok = tb.srv.ShownDraft(tb.alice.ID)
	require.False(t, ok)

	// A draft no message replaced expires.
	_, err = b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: tb.alice.ID, DraftID: "8", Text: "more"})
	require.NoError(t, err)
	_, ok = tb.srv.ShownDraft(tb.alice.ID)
	require.True(t, ok)
	clock.Add(telegramtest.DraftLifetime)
	_, ok = tb.srv.ShownDraft(tb.alice.ID)
	require.False(t, ok, "expired")
}

func TestDraftsAreValidated(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.StartedBy(tb.alice)
	tb.srv.AddChat(-500)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	long := make([]byte, 4097)
	for i := range long {
		long[i] = 'a'
	}
	for _, c := range []struct {
		name string
		p    bot.SendMessageDraftParams
		want string
	}{
		{"zero draft id", bot.SendMessageDraftParams{ChatID: tb.alice.ID, DraftID: "0", Text: "x"}, "draft_id must be non-zero"},
		{"empty text", bot.SendMessageDraftParams{ChatID: tb.alice.ID, DraftID: "1", Text: " "}, "message text is empty"},
		{"too long", bot.SendMessageDraftParams{ChatID: tb.alice.ID, DraftID: "1", Text: string(long)}, "message is too long"},
		{"bad markup", bot.SendMessageDraftParams{ChatID: tb.alice.ID, DraftID: "1", Text: "a.b", ParseMode: models.ParseModeMarkdown}, "can't parse entities"},
		{"a group", bot.SendMessageDraftParams{ChatID: int64(-500), DraftID: "1", Text: "x"}, "TEXTDRAFT_PEER_INVALID"},
		{"unknown chat", bot.SendMessageDraftParams{ChatID: int64(4242), DraftID: "1", Text: "x"}, "chat not found"},
	} {
		_, err := b.SendMessageDraft(ctx, &c.p)
		require.ErrorIs(t, err, bot.ErrorBadRequest, c.name)
		require.ErrorContains(t, err, c.want, c.name)
	}
	require.Empty(t, tb.srv.Drafts(tb.alice.ID))
}

func TestRefusedMethodAndFloodWait(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	tb := setup(t, telegramtest.WithNow(clock.Now))
	tb.srv.StartedBy(tb.alice)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	draft := &bot.SendMessageDraftParams{ChatID: tb.alice.ID, DraftID: "1", Text: "x"}

	tb.srv.RefuseMethod("sendMessageDraft")
	_, err := b.SendMessageDraft(ctx, draft)
	require.ErrorIs(t, err, bot.ErrorNotFound, "as an older Bot API server answers")
	tb.srv.AllowMethod("sendMessageDraft")
	_, err = b.SendMessageDraft(ctx, draft)
	require.NoError(t, err)

	tb.srv.FloodWait("sendMessageDraft", 2500*time.Millisecond)
	_, err = b.SendMessageDraft(ctx, draft)
	var tooMany *bot.TooManyRequestsError
	require.True(t, errors.As(err, &tooMany), "got %v", err)
	require.Equal(t, 3, tooMany.RetryAfter)
	clock.Add(2 * time.Second)
	_, err = b.SendMessageDraft(ctx, draft)
	require.True(t, errors.As(err, &tooMany))
	require.Equal(t, 1, tooMany.RetryAfter)
	clock.Add(time.Second)
	_, err = b.SendMessageDraft(ctx, draft)
	require.NoError(t, err, "the flood wait is over")
	require.Len(t, tb.srv.Drafts(tb.alice.ID), 2)
}

func TestEditsAndDeletions(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.StartedBy(tb.alice)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	m, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "Hel"})
	require.NoError(t, err)

	edited, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: tb.alice.ID, MessageID: m.ID, Text: "Hello *world*", ParseMode: models.ParseModeMarkdown})
	require.NoError(t, err)
	require.Equal(t, "Hello world", edited.Text)
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: tb.alice.ID, MessageID: m.ID, Text: "Hello *world*", ParseMode: models.ParseModeMarkdown})
	require.ErrorContains(t, err, "Bad Request: message is not modified")
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: tb.alice.ID, MessageID: m.ID + 5, Text: "x"})
	require.ErrorContains(t, err, "message to edit not found")

	edits := tb.srv.Edits(tb.alice.ID, m.ID)
	require.Len(t, edits, 1)
	require.Equal(t, "Hello world", edits[0].Plain)
	require.Equal(t, "Hel", tb.srv.Sent(tb.alice.ID)[0].Plain, "Sent keeps the message as sent")
	now := tb.srv.Messages(tb.alice.ID)
	require.Len(t, now, 1)
	require.Equal(t, "Hello world", now[0].Plain, "Messages shows it as it is now")
	require.False(t, now[0].EditedAt.IsZero())

	ok, err := b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: tb.alice.ID, MessageID: m.ID})
	require.NoError(t, err)
	require.True(t, ok)
	_, err = b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: tb.alice.ID, MessageID: m.ID})
	require.ErrorContains(t, err, "message to delete not found")
	require.Empty(t, tb.srv.Messages(tb.alice.ID))
	require.True(t, tb.srv.Deleted(tb.alice.ID, m.ID))
	_, ok = tb.srv.Message(tb.alice.ID, m.ID)
	require.False(t, ok)
}

// fakeNow is a settable clock for WithNow.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeNow) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeNow) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestPartialsCountAgainstRateLimitsWhenAsked(t *testing.T) {
	t.Parallel()
	for _, partials := range []bool{false, true} {
		tb, _ := limitedSetup(t, telegramtest.RateLimits{PerChatPerSecond: 1, PerChatBurst: 1, Partials: partials})
		draft := func() int {
			status, _ := tb.rawCall(context.Background(), t, tb.srv.Token(), "sendMessageDraft",
				url.Values{"chat_id": {"1"}, "draft_id": {"5"}, "text": {"hi"}})
			return status
		}
		require.Equal(t, http.StatusOK, draft())
		status, _ := tb.sendTo(t, 1)
		if partials {
			require.Equal(t, http.StatusTooManyRequests, status, "the draft took chat 1's message")
			require.Equal(t, http.StatusTooManyRequests, draft())
			require.Equal(t, telegramtest.SendStats{Attempts: 3, RateLimited: 2}, tb.srv.SendStats())
		} else {
			require.Equal(t, http.StatusOK, status, "drafts are not limited by default")
			require.Equal(t, telegramtest.SendStats{Attempts: 1}, tb.srv.SendStats())
		}
	}
}
