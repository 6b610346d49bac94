package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

func TestPrivateMessageIsNormalised(t *testing.T) {
	t.Parallel()
	b := setup(t)
	upd := b.srv.SendPrivate(ada, "Hi there — wie geht's? 🙂")
	upd2 := b.srv.SendPrivate(grace, "no name, only a username")

	got := b.core.Wait(t, 2, waitFor)
	require.Len(t, got, 2)
	// Two chats' messages of one batch reach the core side by side.
	slices.SortFunc(got, func(x, y core.InboundMessage) int { return strings.Compare(x.ChannelThreadID, y.ChannelThreadID) })
	require.Equal(t, core.InboundMessage{
		Platform:          Platform,
		ChannelThreadID:   "100001",
		ChannelUserID:     "100001",
		DisplayName:       "Ada Lovelace",
		Text:              "Hi there — wie geht's? 🙂",
		PlatformMessageID: strconv.Itoa(upd.Message.ID),
		SentAt:            time.Unix(int64(upd.Message.Date), 0).UTC(),
		Direct:            true,
	}, got[0])
	require.Equal(t, "100002", got[1].ChannelThreadID)
	require.Equal(t, "grace_h", got[1].DisplayName, "falls back to the username")
	require.Equal(t, strconv.Itoa(upd2.Message.ID), got[1].PlatformMessageID)
}

// requireOnlySentinel sends a DM after whatever the test played and
// requires that it is the only message the core got.
func (b *testBundle) requireOnlySentinel(t *testing.T) {
	t.Helper()
	b.srv.SendPrivate(ada, "sentinel")
	got := b.core.Wait(t, 1, waitFor)
	require.Len(t, got, 1, "something else reached the core: %+v", got)
	require.Equal(t, "sentinel", got[0].Text)
	// The next poll confirms everything handled so far.
	eventually(t, func() bool { return b.srv.Pending() == 0 }, "updates left unconfirmed")
}

func TestIgnoredUpdates(t *testing.T) {
	t.Parallel()
	botSender := func(b *testBundle) json.RawMessage {
		return json.RawMessage(`{"update_id": 500, "message": {"message_id": 7, "date": 1700000000,
			"chat": {"id": 100001, "type": "private"},
			"from": {"id": 4242, "is_bot": true, "first_name": "OtherBot"}, "text": "beep"}}`)
	}
	for _, tc := range []struct {
		name string
		play func(b *testBundle)
	}{
		{"group", func(b *testBundle) { b.srv.SendGroup(-100500, ada, "hello group") }},
		{"supergroup", func(b *testBundle) {
			b.srv.InjectRaw(json.RawMessage(`{"update_id": 500, "message": {"message_id": 1, "date": 1700000000,
				"chat": {"id": -1001234, "type": "supergroup", "title": "Big"},
				"from": {"id": 100001, "is_bot": false, "first_name": "Ada"}, "text": "hi all"}}`))
		}},
		{"channel post", func(b *testBundle) { b.srv.SendChannelPost(-100600, "announcement") }},
		{"own message", func(b *testBundle) { b.srv.SendOwn(ada.ID, "something the bot said") }},
		{"edit", func(b *testBundle) { b.srv.EditPrivate(ada, 1, "edited text") }},
		{"another bot", func(b *testBundle) { b.srv.InjectRaw(botSender(b)) }},
		{"no text and no file", func(b *testBundle) {
			b.srv.InjectRaw(json.RawMessage(`{"update_id": 500, "message": {"message_id": 3, "date": 1700000000,
				"chat": {"id": 100001, "type": "private"},
				"from": {"id": 100001, "is_bot": false, "first_name": "Ada"},
				"location": {"latitude": 52.5, "longitude": 13.4}}}`))
		}},
		{"no sender", func(b *testBundle) {
			b.srv.InjectRaw(json.RawMessage(`{"update_id": 500, "message": {"message_id": 3, "date": 1700000000,
				"chat": {"id": 100001, "type": "private"}, "text": "who am I"}}`))
		}},
		{"no chat", func(b *testBundle) {
			b.srv.InjectRaw(json.RawMessage(`{"update_id": 500, "message": {"message_id": 3, "date": 1700000000,
				"from": {"id": 100001, "is_bot": false, "first_name": "Ada"}, "text": "where am I"}}`))
		}},
		{"unknown update type", func(b *testBundle) {
			b.srv.InjectRaw(json.RawMessage(`{"update_id": 500, "brand_new_kind": {"x": 1}}`))
		}},
		{"wrong types", func(b *testBundle) {
			b.srv.InjectRaw(json.RawMessage(`{"update_id": 500, "message": "not an object"}`))
			b.srv.InjectRaw(json.RawMessage(`{"update_id": 501, "message": {"message_id": "seven", "chat": {"id": 100001, "type": "private"}}}`))
		}},
		{"not an object", func(b *testBundle) {
			b.srv.InjectRaw(json.RawMessage(`[1, 2, 3]`))
			b.srv.InjectRaw(json.RawMessage(`"just a string"`))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tc.play(b)
			b.requireOnlySentinel(t)
		})
	}
}

func TestCaptionIsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.InjectRaw(json.RawMessage(`{"update_id": 1, "message": {"message_id": 9, "date": 1700000000,
		"chat": {"id": 100001, "type": "private"},
		"from": {"id": 100001, "is_bot": false, "first_name": "Ada"},
		"photo": [{"file_id": "p", "file_unique_id": "q", "width": 10, "height": 10}],
		"caption": "look at this"}}`))
	got := b.core.Wait(t, 1, waitFor)
	require.Equal(t, "look at this", got[0].Text)
	require.Equal(t, "9", got[0].PlatformMessageID)
	require.Equal(t, time.Unix(1700000000, 0).UTC(), got[0].SentAt)
}

func TestManyUpdatesArriveInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 150 { // more than one getUpdates batch of 100
		b.srv.SendPrivate(ada, fmt.Sprint("message ", i))
	}
	got := b.core.Wait(t, 150, waitFor)
	require.Len(t, got, 150)
	for i, m := range got {
		require.Equal(t, fmt.Sprint("message ", i), m.Text)
	}
}

// laneCore is a core that holds or fails the messages with given texts,
// and records what it took.
type laneCore struct {
	core.InboundOnly // takes messages; no history, model health or commands
	mu               sync.Mutex
	hold             map[string]chan struct{} // the message waits until it is closed
	fail             map[string]bool          // the message fails once
	got              []core.InboundMessage
}

func (c *laneCore) HandleInbound(_ context.Context, m core.InboundMessage) error {
	c.mu.Lock()
	gate, fail := c.hold[m.Text], c.fail[m.Text]
	delete(c.fail, m.Text)
	c.mu.Unlock()
	if fail {
		return errors.New("database is locked")
	}
	if gate != nil {
		<-gate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, m)
	return nil
}

// texts are the texts taken from a chat, in order.
func (c *laneCore) texts(user telegramtest.User) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.got {
		if m.ChannelThreadID == userID(user) {
			out = append(out, m.Text)
		}
	}
	return out
}

// startWith starts b's adapter with h as its core.
func (b *testBundle) startWith(t *testing.T, h core.Host) {
	t.Helper()
	require.NoError(t, b.adapter.Start(context.Background(), h))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.adapter.Stop(ctx))
	})
}

// The chats of one batch are handed over side by side, each in order, and
// the batch is confirmed once all of it is through.
func TestChatsOfABatchGoSideBySide(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	gate := make(chan struct{})
	c := &laneCore{hold: map[string]chan struct{}{"ada 1": gate}}
	b.srv.SendPrivate(ada, "ada 1")
	b.srv.SendPrivate(ada, "ada 2")
	b.srv.SendPrivate(grace, "grace 1")
	b.startWith(t, c)
	released := false
	t.Cleanup(func() {
		if !released {
			close(gate) // before Stop, which waits for the handler
		}
	})

	eventually(t, func() bool { return len(c.texts(grace)) == 1 }, "grace waited behind ada's held message")
	require.Empty(t, c.texts(ada), "ada's second message went ahead of her first")
	require.Equal(t, 3, b.srv.Pending(), "confirmed before the batch was through")
	close(gate)
	released = true
	eventually(t, func() bool { return len(c.texts(ada)) == 2 }, "ada's messages never arrived")
	require.Equal(t, []string{"ada 1", "ada 2"}, c.texts(ada))
	eventually(t, func() bool { return b.srv.Pending() == 0 }, "the batch was never confirmed")
}

// A message the core could not take is fetched again with everything after
// it, and its chat's later messages wait for it. Another chat's message of
// the same batch, already taken, comes again too: the core knows it by its
// message id (core.ErrDuplicateInbound) and stores it once.
func TestAFailedChatIsFetchedAgainInOrder(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	c := &laneCore{fail: map[string]bool{"ada 1": true}}
	b.srv.SendPrivate(ada, "ada 1")
	b.srv.SendPrivate(ada, "ada 2")
	g := b.srv.SendPrivate(grace, "grace 1")
	b.startWith(t, c)

	eventually(t, func() bool { return len(c.texts(ada)) == 2 }, "ada's messages never arrived")
	require.Equal(t, []string{"ada 1", "ada 2"}, c.texts(ada))
	eventually(t, func() bool { return b.srv.Pending() == 0 }, "the batch was never confirmed")
	require.NotEmpty(t, c.texts(grace))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.got {
		if m.ChannelThreadID == userID(grace) {
			require.Equal(t, strconv.Itoa(g.Message.ID), m.PlatformMessageID)
		}
	}
}

func TestCoreFailureOrPanicDoesNotStopPolling(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.core.PanicOn("boom")
	b.srv.SendPrivate(ada, "boom")
	b.srv.SendPrivate(ada, "after the panic")
	got := b.core.Wait(t, 1, waitFor)
	require.Equal(t, "after the panic", got[0].Text)
	require.Contains(t, b.logs.String(), "panic while handling a telegram update")

	b.core.FailWith(errors.New("database is locked"))
	b.srv.SendPrivate(ada, "kept while the database is down")
	b.srv.SendPrivate(ada, "behind it")
	eventually(t, func() bool { return strings.Contains(b.logs.String(), "database is locked") }, "the core's error was not logged")
	b.core.FailWith(nil)
	b.srv.SendPrivate(ada, "works again")
	got = b.core.Wait(t, 4, waitFor)
	var texts []string
	for _, m := range got[1:] {
		texts = append(texts, m.Text)
	}
	require.Equal(t, []string{"kept while the database is down", "behind it", "works again"}, texts,
		"an update the core could not take is fetched again, in order, not dropped")
}

func TestNormaliseIgnoresOwnID(t *testing.T) {
	t.Parallel()
	a := New()
	a.botID = 777
	msg := telegramtest.User{ID: 777, FirstName: "Me"}
	b := newBundle(t)
	upd := b.srv.SendPrivate(msg, "echo")
	upd.Message.From.IsBot = false // some clients omit is_bot; the id still tells
	_, ok := a.normalise(&upd)
	require.False(t, ok)
}
