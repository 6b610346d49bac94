package userdata_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
	"github.com/parleybot/parley/userdata"
)

// longConversation is a conversation of n messages, a user's and the
// bot's in turn a minute apart: the first recorded through the store,
// the rest inserted in one statement (appending them one by one takes
// seconds), as the store writes them.
func longConversation(tb testing.TB, n int) (*store.Store, core.Conversation) {
	tb.Helper()
	ctx := context.Background()
	st := storetest.OpenSQLite(tb)
	require.NoError(tb, st.Migrate(ctx, memory.New()))
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: "web", ChannelThreadID: "long", ChannelUserID: "u",
		Text: "message 1", Now: t0})
	require.NoError(tb, err)
	id := res.Conversation.ID
	require.NoError(tb, st.DB().Exec(`WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO messages (conversation_id, seq, role, content, source, platform_message_id, metadata, created_at, delivery)
		SELECT ?, i, CASE i % 2 WHEN 0 THEN 'assistant' ELSE 'user' END, 'message ' || i,
			CASE i % 2 WHEN 0 THEN 'reply' ELSE 'user' END, '', '{}',
			strftime('%Y-%m-%dT%H:%M:%S', ?, '+' || i || ' minutes') || '.000000Z', '' FROM n`,
		n, id, t0.Format("2006-01-02 15:04:05")).Error)
	require.NoError(tb, st.DB().Exec(`UPDATE conversations SET last_seq = ? WHERE id = ?`, n, id).Error)
	return st, res.Conversation
}

// pages is a Source that counts the pages read and the largest asked for.
type pages struct {
	userdata.Source
	calls, largest int
}

func (p *pages) MessagesPage(ctx context.Context, conversationID, afterSeq int64, limit int) ([]core.Message, error) {
	p.calls++
	p.largest = max(p.largest, limit)
	return p.Source.MessagesPage(ctx, conversationID, afterSeq, limit)
}

// TestALongConversationIsReadInPages gathers a conversation of 20,000
// messages: every one, in order, read a bounded page at a time.
func TestALongConversationIsReadInPages(t *testing.T) {
	const n = 20000
	st, conv := longConversation(t, n)
	src := &pages{Source: st}
	start := time.Now()
	d, err := userdata.Gather(context.Background(), src, memory.NewFactStore(st.Database()), conv.ID, t0)
	require.NoError(t, err)
	gathered := time.Since(start)
	require.Len(t, d.Messages, n)
	for i, m := range d.Messages {
		if m.Seq != int64(i+1) || m.Text != fmt.Sprintf("message %d", i+1) {
			t.Fatalf("message %d is seq %d %q", i+1, m.Seq, m.Text)
		}
	}
	require.True(t, d.Messages[n-1].Time.Equal(t0.Add(n*time.Minute)), "%v", d.Messages[n-1].Time)
	require.Equal(t, n/1000+1, src.calls, "pages of 1,000, and the empty one that ends them")
	require.Equal(t, 1000, src.largest)

	start = time.Now()
	b, err := d.JSON()
	require.NoError(t, err)
	md := d.Markdown()
	t.Logf("%d messages: gathered in %v, rendered in %v (JSON %d KB, Markdown %d KB)", n, gathered.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), len(b)>>10, len(md)>>10)
	require.Equal(t, n, strings.Count(md, "\n> message "))
}

// BenchmarkGather gathers and renders a conversation of 20,000 messages.
func BenchmarkGather(b *testing.B) {
	st, conv := longConversation(b, 20000)
	ctx := context.Background()
	for b.Loop() {
		d, err := userdata.Gather(ctx, st, nil, conv.ID, t0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.JSON(); err != nil {
			b.Fatal(err)
		}
		_ = d.Markdown()
	}
}
