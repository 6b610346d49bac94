package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// longAnswer is a Markdown answer of about n characters in paragraphs,
// with bold, code and a list, and the prefixes a model writing it shows:
// a word at a time, every marker closed.
func longAnswer(n int) (string, []string) {
	var md strings.Builder
	var prefixes []string
	for i := 0; md.Len() < n; i++ {
		switch i % 3 {
		case 0:
			md.WriteString(fmt.Sprintf("**Step %d** uses `code_%d` and goes on", i, i))
		case 1:
			md.WriteString(fmt.Sprintf("- item %d\n- item %d with *style*", i, i+1))
		default:
			md.WriteString(fmt.Sprintf("Paragraph %d", i))
		}
		prefixes = append(prefixes, md.String())
		for w := range 12 {
			md.WriteString(fmt.Sprintf(" word%d", w))
			prefixes = append(prefixes, md.String())
		}
		md.WriteString(".\n\n")
	}
	return strings.TrimSpace(md.String()), prefixes
}

// every keeps every nth text (and the last), as the core's coalescing
// does: it shows the text at most once an interval.
func every(texts []string, n int) []string {
	var out []string
	for i := 0; i < len(texts); i += n {
		out = append(out, texts[i])
	}
	return append(out, texts[len(texts)-1])
}

func TestLongStreamedReplyEndsAsSendsParts(t *testing.T) {
	t.Parallel()
	final, prefixes := longAnswer(11000)
	for _, mode := range []string{StreamingAuto, StreamingEdits} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(a *Adapter) { a.Streaming = mode })
			b.greet(t, ada)
			b.greet(t, grace)
			// What Send sends for the finished text, in Grace's chat.
			want, err := b.adapter.Send(context.Background(), reply(grace, final))
			require.NoError(t, err)
			require.Len(t, want.PlatformMessageIDs, 3)

			st := b.streamIn(t, ada)
			grow(t, st, every(prefixes, 9)...)
			require.Len(t, b.srv.Messages(ada.ID), map[string]int{StreamingAuto: 2, StreamingEdits: 3}[mode],
				"parts the text moved past are finished while it grows")
			if mode == StreamingAuto {
				drafts := b.srv.Drafts(ada.ID)
				ids := map[int64]bool{}
				for _, d := range drafts {
					ids[d.DraftID] = true
				}
				require.Len(t, ids, 3, "one draft id a part")
			}
			res, err := st.Finish(context.Background(), reply(ada, final))
			require.NoError(t, err)

			got, sent := b.srv.Messages(ada.ID), b.srv.Sent(grace.ID)
			require.Len(t, got, len(sent))
			for i := range sent {
				require.Equal(t, sent[i].Text, got[i].Text, "part %d as Send sends it", i+1)
				require.Equal(t, sent[i].Plain, got[i].Plain)
				require.Equal(t, sent[i].Entities, got[i].Entities)
			}
			require.Equal(t, ids(got), res.PlatformMessageIDs)
			require.Len(t, b.srv.Sent(ada.ID), 3, "no message sent twice")
			if mode == StreamingAuto {
				require.Zero(t, b.srv.Calls("editMessageText"), "the parts finished while growing were Send's already")
			}
		})
	}
}

func TestRateLimitedPartialsAreSkippedNotTheFinal(t *testing.T) {
	t.Parallel()
	t.Run("drafts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.greet(t, ada)
		b.greet(t, grace)
		b.srv.FloodWait("sendMessageDraft", time.Minute)
		st, other := b.streamIn(t, ada), b.streamIn(t, grace)

		err := st.Update(context.Background(), "Hello")
		require.ErrorIs(t, err, core.ErrStreamBusy, "a 429 skips the partial")
		require.ErrorContains(t, err, "rate limited for 60s")
		for _, text := range []string{"Hello there", "Hello there, Ada"} {
			require.ErrorIs(t, st.Update(context.Background(), text), core.ErrStreamBusy)
		}
		require.ErrorIs(t, other.Update(context.Background(), "Hi"), core.ErrStreamBusy, "every chat holds back")
		require.Equal(t, 1, b.srv.Calls("sendMessageDraft"), "never retried, nothing sent meanwhile")

		res, err := st.Finish(context.Background(), reply(ada, "Hello there, Ada!"))
		require.NoError(t, err, "the final is never skipped")
		require.Equal(t, []string{"Hello there, Ada!"}, messagePlains(b.srv.Sent(ada.ID)))
		require.Len(t, res.PlatformMessageIDs, 1)
	})
	t.Run("edits", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(a *Adapter) { a.Streaming = StreamingEdits })
		b.greet(t, ada)
		st := b.streamIn(t, ada)
		grow(t, st, "Hello")
		// One second: Finish's edit waits it out, as Send waits a 429.
		b.srv.FloodWait("editMessageText", time.Second)
		require.ErrorIs(t, st.Update(context.Background(), "Hello there"), core.ErrStreamBusy)
		require.ErrorIs(t, st.Update(context.Background(), "Hello there, Ada"), core.ErrStreamBusy)
		require.Equal(t, 1, b.srv.Calls("editMessageText"))

		_, err := st.Finish(context.Background(), reply(ada, "Hello there, Ada!"))
		require.NoError(t, err)
		require.Equal(t, []string{"Hello there, Ada!"}, messagePlains(b.srv.Messages(ada.ID)))
		require.Len(t, b.srv.Sent(ada.ID), 1)
	})
}

func TestPartialsTakeOnlyAFreeSlot(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	b := setup(t, func(a *Adapter) { a.clock, a.SendRate = clock, pace.Limits{PerChatPerSecond: 1, PerChatBurst: 2} })
	b.greet(t, ada)
	st := b.streamIn(t, ada)

	grow(t, st, "One", "One two")
	err := st.Update(context.Background(), "One two three")
	require.True(t, errors.Is(err, core.ErrStreamBusy), "the chat's burst is spent: skipped at once, got %v", err)
	require.Len(t, b.srv.Drafts(ada.ID), 2)
	clock.Advance(1100 * time.Millisecond)
	grow(t, st, "One two three")
	require.Len(t, b.srv.Drafts(ada.ID), 3)

	// The final waits for its slot (a reply's priority) instead of skipping.
	done := make(chan error, 1)
	go func() {
		_, err := st.Finish(context.Background(), reply(ada, "One two three four."))
		done <- err
	}()
	clock.WaitForTimers(t, 1, waitFor)
	require.Empty(t, b.srv.Sent(ada.ID))
	clock.Advance(2 * time.Second)
	require.NoError(t, <-done)
	require.Equal(t, []string{"One two three four."}, messagePlains(b.srv.Sent(ada.ID)))
}

func TestMessageEditorEditsAndDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	ctx := context.Background()
	res, err := b.adapter.Send(ctx, reply(ada, "Draft answer"))
	require.NoError(t, err)
	id := res.PlatformMessageIDs[0]

	require.NoError(t, b.adapter.EditMessage(ctx, id, reply(ada, "The **finished** answer")))
	require.NoError(t, b.adapter.EditMessage(ctx, id, reply(ada, "The **finished** answer")), "not modified is no error")
	now := b.srv.Messages(ada.ID)
	require.Equal(t, []string{"The finished answer"}, messagePlains(now))
	require.Len(t, b.srv.Edits(ada.ID, now[0].MessageID), 1)

	// Markup Telegram refuses: the plain text goes instead, as Send does.
	b.srv.RefuseNextMarkup()
	require.NoError(t, b.adapter.EditMessage(ctx, id, reply(ada, "The **bold** one")))
	m := b.srv.Messages(ada.ID)[0]
	require.Equal(t, "The bold one", m.Plain)
	require.Empty(t, m.ParseMode)
	require.Contains(t, b.logs.String(), "telegram refused an edited message's markup")

	// Text over the limit is cut where Send ends its first part.
	long, _ := longAnswer(6000)
	require.NoError(t, b.adapter.EditMessage(ctx, id, reply(ada, long)))
	parts, _ := b.adapter.textParts(reply(ada, long))
	require.Equal(t, parts[0].Text, b.srv.Messages(ada.ID)[0].Text)

	require.NoError(t, b.adapter.DeleteMessage(ctx, reply(ada, "").ChannelThreadID, id))
	require.Empty(t, b.srv.Messages(ada.ID))
	require.NoError(t, b.adapter.DeleteMessage(ctx, reply(ada, "").ChannelThreadID, id), "already gone is no error")
	require.Equal(t, "message id \"x\" is not a telegram message id", permanentReason(t, b.adapter.EditMessage(ctx, "x", reply(ada, "y"))))
	err = b.adapter.EditMessage(ctx, "9999", reply(ada, "y"))
	require.ErrorContains(t, err, "message to edit not found")
}

func TestFinishCorrectsWhatGrewToTheFinishedText(t *testing.T) {
	t.Parallel()
	text, prefixes := longAnswer(9000)
	b := setup(t)
	b.greet(t, ada)
	st := b.streamIn(t, ada)
	grow(t, st, every(prefixes, 9)...)
	grown := st.Grown()
	require.Len(t, grown, 2, "two parts finished while growing")

	// The model's finished reply is not what grew (a retried answer): the
	// first message is edited to it, the second is not needed.
	final := "**Short** answer.\n\n" + text[len(text)-200:]
	res, err := st.Finish(context.Background(), reply(ada, final))
	require.NoError(t, err)
	require.Equal(t, grown[:1], res.PlatformMessageIDs)
	now := b.srv.Messages(ada.ID)
	require.Len(t, now, 1)
	parts, _ := b.adapter.textParts(reply(ada, final))
	require.Len(t, parts, 1)
	require.Equal(t, parts[0].Text, now[0].Text)
	require.Equal(t, 2, len(b.srv.Sent(ada.ID)), "nothing sent twice")
}
