package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
)

// changeHost is a Recorder that also keeps the reactions and changes the
// adapter hands over.
type changeHost struct {
	*adaptertest.Recorder
	mu        sync.Mutex
	reactions []core.Reaction
	changes   []core.MessageChange
	taps      []core.InboundMessage
}

// HandleTap keeps the tap and acknowledges it plainly.
func (h *changeHost) HandleTap(_ context.Context, m core.InboundMessage) (core.TapAnswer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.taps = append(h.taps, m)
	return core.TapAnswer{}, nil
}

// takeTaps returns the taps kept so far and forgets them.
func (h *changeHost) takeTaps() []core.InboundMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	taps := h.taps
	h.taps = nil
	return taps
}

func (h *changeHost) HandleReaction(_ context.Context, r core.Reaction) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.At = r.At.UTC()
	h.reactions = append(h.reactions, r)
	return nil
}

func (h *changeHost) HandleChange(_ context.Context, c core.MessageChange) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = append(h.changes, c)
	return nil
}

func (h *changeHost) got() ([]core.Reaction, []core.MessageChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reactions), slices.Clone(h.changes)
}

// setupChanges starts an adapter in mode whose host keeps reactions and
// changes.
func setupChanges(t *testing.T, mode string) (*testBundle, *changeHost) {
	t.Helper()
	b := newBundle(t, mode)
	h := &changeHost{Recorder: b.core}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.Start(ctx, h))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.adapter.Stop(ctx))
		b.requireNoSecrets(t)
	})
	return b, h
}

// settle sends a DM and waits for it: the events sent before it have
// been handled (the fake delivers in order, the adapter handles in order).
func (b *testBundle) settle(t *testing.T, n int) {
	t.Helper()
	b.srv.SendDM(ada, fmt.Sprintf("settle %d", n))
	b.core.Wait(t, n, waitFor)
}

func TestUsersReactionsReachTheCore(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeSocket, ModeEvents} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b, h := setupChanges(t, mode)
			ch, userTS := b.srv.SendDM(ada, "hi")
			b.core.Wait(t, 1, waitFor)
			res, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: ch, Text: "Hello"})
			require.NoError(t, err)
			botTS := res.PlatformMessageIDs[0]

			b.srv.ReactDM(ada, botTS, "thumbsup", false)
			b.srv.ReactDM(ada, botTS, "partyparrot", false) // a custom emoji
			b.srv.ReactDM(ada, botTS, "+1::skin-tone-4", true)
			id := b.srv.ReactDM(ada, userTS, "heart", false) // the core tells whose message it is
			b.srv.Redeliver(id)
			// The bot's own reaction, echoed as Slack does, is not the user's.
			require.NoError(t, b.adapter.React(context.Background(), ch, userTS, "👀"))
			b.srv.WaitBotReactions(t, ch, userTS, []string{"eyes"}, waitFor)
			b.srv.SendEvent(json.RawMessage(`{"type":"reaction_added","user":"U0ADA00001","reaction":"tada","item":{"type":"message","channel":"C0GENERAL1","ts":"1.2"},"event_ts":"1.3"}`))
			b.srv.SendEvent(json.RawMessage(`{"type":"reaction_added","user":"U0ADA00001","reaction":"tada","item":{"type":"file","file":"F1"},"event_ts":"1.3"}`))
			b.settle(t, 2)

			reactions, changes := h.got()
			require.Empty(t, changes)
			want := []struct {
				ts, emoji string
				removed   bool
			}{{botTS, "👍", false}, {botTS, "partyparrot", false}, {botTS, "👍", true}, {userTS, "❤️", false}}
			require.Len(t, reactions, len(want), "%+v", reactions)
			for i, w := range want {
				r := reactions[i]
				require.Equal(t, core.Reaction{Platform: Platform, ChannelThreadID: ch, ChannelUserID: ada.ID,
					MessageID: w.ts, Emoji: w.emoji, Removed: w.removed, At: r.At}, r)
				require.False(t, r.At.IsZero())
			}
		})
	}
}

func TestUsersEditsAndDeletesReachTheCore(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeSocket, ModeEvents} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b, h := setupChanges(t, mode)
			ch, ts := b.srv.SendDM(ada, "my cat is Tom &amp; co")
			b.core.Wait(t, 1, waitFor)
			res, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: ch, Text: "Nice"})
			require.NoError(t, err)
			botTS := res.PlatformMessageIDs[0]

			id := b.srv.EditDM(ada, ts, "my cat is Tim &amp; co")
			b.srv.Redeliver(id)
			b.srv.UnfurlDM(ada, ts, "https://example.com") // Slack's, not the user's
			// The bot's own message changed and deleted (its stream, its
			// edits) is none of the core's business.
			b.srv.SendEvent(json.RawMessage(fmt.Sprintf(`{"type":"message","subtype":"message_changed","channel":%q,"channel_type":"im","ts":"1.5",
				"message":{"type":"message","user":%q,"bot_id":%q,"text":"edited","ts":%q},"previous_message":{"text":"Nice","ts":%q}}`,
				ch, b.srv.BotUserID(), b.srv.BotID(), botTS, botTS)))
			b.srv.SendEvent(json.RawMessage(fmt.Sprintf(`{"type":"message","subtype":"message_deleted","channel":%q,"channel_type":"im","ts":"1.6",
				"deleted_ts":%q,"previous_message":{"user":%q,"bot_id":%q,"text":"Nice","ts":%q}}`,
				ch, botTS, b.srv.BotUserID(), b.srv.BotID(), botTS)))
			b.srv.DeleteDM(ada, ts)
			b.settle(t, 2)

			reactions, changes := h.got()
			require.Empty(t, reactions)
			require.Len(t, changes, 2, "%+v", changes)
			require.Equal(t, core.MessageChange{Platform: Platform, ChannelThreadID: ch, ChannelUserID: ada.ID,
				PlatformMessageID: ts, Text: "my cat is Tim & co", At: changes[0].At}, changes[0])
			require.Equal(t, core.MessageChange{Platform: Platform, ChannelThreadID: ch, ChannelUserID: ada.ID,
				PlatformMessageID: ts, Deleted: true, At: changes[1].At}, changes[1])
			require.False(t, changes[0].At.IsZero())
			require.Len(t, b.core.Messages(), 2, "no change is a new message")
		})
	}
}

func TestBotReacts(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch, ts := b.srv.SendDM(ada, "I passed!")
	b.core.Wait(t, 1, waitFor)
	ctx := context.Background()
	for _, emoji := range []string{"👍", "❤", ":tada:", "fire", "👍🏽"} {
		require.NoError(t, b.adapter.React(ctx, ch, ts, emoji), emoji)
	}
	require.NoError(t, b.adapter.React(ctx, ch, ts, "thumbsup"), "already_reacted is not an error")
	require.Equal(t, []string{"+1", "heart", "tada", "fire"}, b.srv.BotReactions(ch, ts))

	for emoji, says := range map[string]string{"🦩": `"🦩"`, "no_such_emoji": `"no_such_emoji"`, "not an emoji": `"not an emoji"`} {
		err := b.adapter.React(ctx, ch, ts, emoji)
		var perm *core.PermanentError
		require.ErrorAs(t, err, &perm, emoji)
		require.Contains(t, err.Error(), says)
	}
	var perm *core.PermanentError
	require.ErrorAs(t, b.adapter.React(ctx, ch, "1.000001", "👍"), &perm, "message_not_found")
	require.ErrorAs(t, b.adapter.React(ctx, ch, "yesterday", "👍"), &perm)

	b.srv.RateLimitNext("reactions.add", 1)
	require.NoError(t, b.adapter.React(ctx, ch, ts, "🚀"))
	require.Equal(t, 1, b.srv.RateLimited())
	b.srv.RateLimitNext("reactions.remove", 1)
	require.NoError(t, b.adapter.Unreact(ctx, ch, ts, "🚀"))
	require.NoError(t, b.adapter.Unreact(ctx, ch, ts, "👍"))
	require.NoError(t, b.adapter.Unreact(ctx, ch, ts, "👍"), "no_reaction is not an error")
	require.Equal(t, []string{"heart", "tada", "fire"}, b.srv.BotReactions(ch, ts))
}

// Every emoji of wire's table maps to a name Slack takes.
func TestEmojiTableNamesAreSlacks(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch, ts := b.srv.SendDM(ada, "react to me")
	b.core.Wait(t, 1, waitFor)
	for _, e := range wire.EmojiTable() {
		for _, n := range e.Names {
			require.NoError(t, b.adapter.React(context.Background(), ch, ts, n), n)
			require.NoError(t, b.adapter.Unreact(context.Background(), ch, ts, n), n)
		}
		require.NoError(t, b.adapter.React(context.Background(), ch, ts, e.Emoji), e.Emoji)
		require.NoError(t, b.adapter.Unreact(context.Background(), ch, ts, e.Emoji), e.Emoji)
	}
}
