package telegram

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

// streamIn starts a streamed rich-text reply in user's chat.
func (b *testBundle) streamIn(t *testing.T, user telegramtest.User) core.Stream {
	t.Helper()
	st, err := b.adapter.Stream(context.Background(), core.OutboundMessage{
		ChannelThreadID: strconv.FormatInt(user.ID, 10), Format: core.FormatRichText, IdempotencyKey: "reply-1",
	})
	require.NoError(t, err)
	return st
}

// reply is the finished reply msg for user's chat.
func reply(user telegramtest.User, text string) core.OutboundMessage {
	return core.OutboundMessage{ChannelThreadID: strconv.FormatInt(user.ID, 10), Text: text, Format: core.FormatRichText, IdempotencyKey: "reply-1"}
}

// grow shows each text in turn, as the core would while the model writes.
func grow(t *testing.T, st core.Stream, texts ...string) {
	t.Helper()
	for _, text := range texts {
		require.NoError(t, st.Update(context.Background(), text), "update %q", text)
	}
}

// plains are what a user reads of drafts.
func plains(ds []telegramtest.Draft) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Plain
	}
	return out
}

// editPlains are what a user read of a message after each edit.
func editPlains(es []telegramtest.Edit) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Plain
	}
	return out
}

func TestStreamGrowsAsDraftsThenOneMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	require.Equal(t, core.StreamCapabilities{Mode: "drafts", Refresh: 20 * time.Second}, b.adapter.StreamCapabilities())
	st := b.streamIn(t, ada)

	grow(t, st, "Hello", "Hello **world**", "Hello **world**", "Hello **world**, how are")
	drafts := b.srv.Drafts(ada.ID)
	require.Equal(t, []string{"Hello", "Hello world", "Hello world, how are"}, plains(drafts), "an unchanged text is not sent again")
	require.NotZero(t, drafts[0].DraftID)
	for _, d := range drafts {
		require.Equal(t, drafts[0].DraftID, d.DraftID, "one draft id for the part: changes are animated")
		require.Equal(t, "MarkdownV2", d.ParseMode)
	}
	require.Equal(t, []models.MessageEntity{{Type: models.MessageEntityTypeBold, Offset: 6, Length: 5}}, drafts[2].Entities)
	require.Empty(t, b.srv.Sent(ada.ID), "a draft is not a message")
	shown, ok := b.srv.ShownDraft(ada.ID)
	require.True(t, ok)
	require.Equal(t, "Hello world, how are", shown.Plain)
	require.Empty(t, st.Grown(), "a draft is no message")

	res, err := st.Finish(context.Background(), reply(ada, "Hello **world**, how are you?"))
	require.NoError(t, err)
	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1, "one message with the finished text")
	require.Equal(t, "Hello world, how are you?", sent[0].Plain)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	_, ok = b.srv.ShownDraft(ada.ID)
	require.False(t, ok, "the message replaced the draft")
	require.Equal(t, 1, strings.Count(b.logs.String(), "telegram replies grow as live drafts"))

	// The next reply has a draft id of its own.
	st2 := b.streamIn(t, ada)
	grow(t, st2, "Again")
	next := b.srv.Drafts(ada.ID)
	require.NotEqual(t, drafts[0].DraftID, next[len(next)-1].DraftID)
	require.Error(t, st.Update(context.Background(), "late"), "no update after Finish")
	require.Equal(t, 1, strings.Count(b.logs.String(), "telegram replies grow as live drafts"), "decided once")
}

func TestStreamGrowsOneMessageByEdits(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.Streaming = StreamingEdits })
	b.greet(t, ada)
	require.Equal(t, core.StreamCapabilities{Mode: "edits", MinInterval: time.Second}, b.adapter.StreamCapabilities())
	st := b.streamIn(t, ada)

	grow(t, st, "Hello", "Hello **world**", "Hello **world**", "Hello **world**, how are")
	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1, "the first words make the message")
	require.Equal(t, "Hello", sent[0].Plain)
	id := sent[0].MessageID
	require.Equal(t, []string{"Hello world", "Hello world, how are"}, editPlains(b.srv.Edits(ada.ID, id)))
	require.Equal(t, []string{strconv.Itoa(id)}, st.Grown())

	res, err := st.Finish(context.Background(), reply(ada, "Hello **world**, how are you?"))
	require.NoError(t, err)
	require.Equal(t, []string{strconv.Itoa(id)}, res.PlatformMessageIDs)
	now := b.srv.Messages(ada.ID)
	require.Len(t, now, 1, "one message, grown")
	require.Equal(t, "Hello world, how are you?", now[0].Plain)
	require.Len(t, now[0].Entities, 1)
	require.Zero(t, b.srv.Calls("sendMessageDraft"))
}

func TestDraftsRefusedTurnTheBotToEditsOnce(t *testing.T) {
	t.Parallel()
	for name, refuse := range map[string]func(*telegramtest.Server){
		"404 Not Found": func(s *telegramtest.Server) { s.RefuseMethod("sendMessageDraft") },
		"400 method not found": func(s *telegramtest.Server) {
			s.FailNext("sendMessageDraft", telegramtest.Fault{Code: 400, Description: "Bad Request: method not found"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.greet(t, ada)
			b.greet(t, grace)
			refuse(b.srv)
			st := b.streamIn(t, ada)
			other := b.streamIn(t, grace) // made before the refusal: turns too

			require.Error(t, st.Update(context.Background(), "Hello"), "the refused draft is skipped")
			require.Equal(t, core.StreamCapabilities{Mode: "edits", MinInterval: time.Second}, b.adapter.StreamCapabilities())
			grow(t, st, "Hello", "Hello there")
			grow(t, other, "Hi")
			_, err := st.Finish(context.Background(), reply(ada, "Hello there!"))
			require.NoError(t, err)
			later := b.streamIn(t, ada)
			grow(t, later, "Once more")

			require.Equal(t, 1, b.srv.Calls("sendMessageDraft"), "decided once for the bot")
			require.Equal(t, []string{"Hello there!", "Once more"}, messagePlains(b.srv.Messages(ada.ID)))
			require.Len(t, b.srv.Messages(grace.ID), 1)
			logs := b.logs.String()
			require.Equal(t, 1, strings.Count(logs, "telegram replies grow by editing a message"), logs)
			require.Contains(t, logs, "refused sendMessageDraft")
			require.Zero(t, strings.Count(logs, "grow as live drafts"))
		})
	}
}

// messagePlains are what a user reads of messages.
func messagePlains(ms []telegramtest.SentMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Plain
	}
	return out
}

func TestAbandonTakesBackWhatGrew(t *testing.T) {
	t.Parallel()
	t.Run("drafts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.greet(t, ada)
		st := b.streamIn(t, ada)
		grow(t, st, "Let me", "Let me think")
		require.NoError(t, st.Abandon(context.Background()))
		require.Empty(t, b.srv.Sent(ada.ID))
		d, ok := b.srv.ShownDraft(ada.ID)
		require.True(t, ok, "a draft cannot be withdrawn: it is left to expire")
		require.Equal(t, "Let me think", d.Plain)
		require.Error(t, st.Update(context.Background(), "more"))
	})
	t.Run("edits", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(a *Adapter) { a.Streaming = StreamingEdits })
		b.greet(t, ada)
		st := b.streamIn(t, ada)
		grow(t, st, "Let me", "Let me think")
		id := b.srv.Sent(ada.ID)[0].MessageID
		require.NoError(t, st.Abandon(context.Background()))
		require.Empty(t, b.srv.Messages(ada.ID), "the grown message is deleted")
		require.True(t, b.srv.Deleted(ada.ID, id))
		require.Empty(t, st.Grown())
	})
}

func TestStreamingOff(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.Streaming = StreamingOff })
	b.greet(t, ada)
	require.Equal(t, core.StreamCapabilities{}, b.adapter.StreamCapabilities())
	_, err := b.adapter.Stream(context.Background(), reply(ada, ""))
	require.ErrorContains(t, err, "adapters.telegram.streaming")

	a := New()
	a.Token = "123:abc"
	a.Streaming = "fast"
	require.ErrorContains(t, a.Validate(), `adapters.telegram.streaming must be auto, edits or off, got "fast"`)
	require.Equal(t, StreamingAuto, New().Streaming, "auto by default")
}

func TestAChatWithoutDraftsGrowsByEdits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailNext("sendMessageDraft", telegramtest.Fault{Code: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
	st := b.streamIn(t, ada)
	require.Error(t, st.Update(context.Background(), "Hello"))
	grow(t, st, "Hello", "Hello there")
	_, err := st.Finish(context.Background(), reply(ada, "Hello there!"))
	require.NoError(t, err)
	require.Equal(t, []string{"Hello there!"}, messagePlains(b.srv.Messages(ada.ID)))
	require.Equal(t, "Hello", b.srv.Sent(ada.ID)[0].Plain, "grown by edits")
	require.Equal(t, core.StreamCapabilities{Mode: "drafts", Refresh: 20 * time.Second}, b.adapter.StreamCapabilities(), "the bot keeps drafts")
}
