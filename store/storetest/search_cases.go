package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func testSearchMessages(t *testing.T, open Opener) {
	b := setup(t, open)
	var conv core.Conversation
	for i, text := range []string{
		"I baked sourdough bread today",
		"我今天烤了面包，很好吃",
		"The bread was a bit dry",
		"明天想去北京看朋友",
		"Breadmaker arrived!",
		"北京的天气怎么样？",
	} {
		conv = b.inbound(t, "chat", text, b.at(time.Duration(i)*time.Minute), false).Conversation
	}
	other := b.inbound(t, "other", "my bread secret, 北京 secret", b.t0, false).Conversation
	search := func(conv core.Conversation, kw string) []string {
		t.Helper()
		got, err := b.st.SearchMessages(b.ctx, conv.ID, kw, 10)
		require.NoError(t, err, kw)
		for _, m := range got {
			require.Equal(t, conv.ID, m.ConversationID)
		}
		return contents(got)
	}
	require.Equal(t, []string{"Breadmaker arrived!", "The bread was a bit dry", "I baked sourdough bread today"}, search(conv, "bread"),
		"newest first, words as prefixes")
	require.Equal(t, []string{"The bread was a bit dry"}, search(conv, "DRY bread"), "every word, any case")
	require.Equal(t, []string{"北京的天气怎么样？", "明天想去北京看朋友"}, search(conv, "北京"), "Chinese without spaces")
	require.Equal(t, []string{"我今天烤了面包，很好吃"}, search(conv, "面包"))
	require.Equal(t, []string{"我今天烤了面包，很好吃"}, search(conv, "包"), "one character, even at the end of a phrase")
	require.Equal(t, []string{"北京的天气怎么样？", "明天想去北京看朋友", "我今天烤了面包，很好吃"}, search(conv, "天"))
	require.Equal(t, []string{"北京的天气怎么样？"}, search(conv, "天气 北京"))
	require.Empty(t, search(conv, "secret"), "another conversation's messages are never found")
	require.Empty(t, search(conv, "京北"), "characters in the wrong order")
	require.Equal(t, []string{"my bread secret, 北京 secret"}, search(other, "北京"))

	_, err := b.st.SearchMessages(b.ctx, conv.ID, "  ?! ", 10)
	require.ErrorIs(t, err, core.ErrEmptyQuery)

	got, err := b.st.SearchMessages(b.ctx, conv.ID, "bread", 2)
	require.NoError(t, err)
	require.Len(t, got, 2, "limit")

	// A reply is searchable too; a failure notice is not.
	run := b.claimedOn(t, conv, b.at(10*time.Minute))
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(10 * time.Minute),
		Messages: []*core.Message{
			{Role: core.RoleAssistant, Content: "Rye bread next?", Source: core.SourceReply},
			{Role: core.RoleAssistant, Content: "Sorry, bread trouble", Source: core.SourceSystem, Metadata: map[string]any{"failure_notice": true}},
		}}))
	require.Equal(t, "Rye bread next?", search(conv, "bread")[0])
	require.NotContains(t, search(conv, "trouble"), "Sorry, bread trouble")

	// Deleting a conversation takes its messages out of the index.
	_, err = b.st.DeleteConversation(b.ctx, other.ID, false)
	require.NoError(t, err)
	again := b.inbound(t, "third", "nothing about bread here", b.at(time.Hour), false).Conversation
	require.Equal(t, []string{"nothing about bread here"}, search(again, "bread"))
}

// claimedOn plans and claims a run of conv for owner "w".
func (b *testBundle) claimedOn(t *testing.T, conv core.Conversation, now time.Time) *core.Run {
	t.Helper()
	b.inbound(t, conv.ChannelThreadID, "and?", now, true)
	run, err := b.st.ClaimRun(b.ctx, "w", now)
	require.NoError(t, err)
	require.NotNil(t, run)
	return run
}

func testSearchManyMessages(t *testing.T, open Opener) {
	b := setup(t, open)
	var conv core.Conversation
	for i := range 300 {
		text := fmt.Sprintf("message %d about the weather", i)
		if i%3 == 0 {
			text = fmt.Sprintf("第%d条消息：今天下雨了", i)
		}
		conv = b.inbound(t, "chat", text, b.at(time.Duration(i)*time.Second), false).Conversation
	}
	got, err := b.st.SearchMessages(b.ctx, conv.ID, "下雨", 10)
	require.NoError(t, err)
	require.Len(t, got, 10)
	require.Equal(t, "第297条消息：今天下雨了", got[0].Content, "the newest first")
	for i := 1; i < len(got); i++ {
		require.Greater(t, got[i-1].Seq, got[i].Seq)
	}
}

// testSearchBackfill rolls the database back to before message search,
// with messages in it, and migrates again: the old messages are found.
func testSearchBackfill(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "chat", "an old message about 面包 and bread", b.t0, false).Conversation
	db := b.st.DB()
	if b.st.Driver() == "postgres" {
		require.NoError(t, db.Exec(`DROP INDEX messages_search`).Error)
		require.NoError(t, db.Exec(`ALTER TABLE messages DROP COLUMN search`).Error)
	} else {
		require.NoError(t, db.Exec(`DROP TABLE message_search`).Error)
		require.NoError(t, db.Exec(`DROP TABLE search_progress`).Error)
	}
	require.NoError(t, db.Exec(`DELETE FROM schema_migrations WHERE version = 3`).Error)
	require.NoError(t, b.st.Migrate(b.ctx))
	for _, kw := range []string{"bread", "面包"} {
		got, err := b.st.SearchMessages(b.ctx, conv.ID, kw, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"an old message about 面包 and bread"}, contents(got), kw)
	}
}

// testSearchAfterTheNewestAreDeleted: SQLite hands out the ids of deleted
// newest messages again; those new messages are still found.
func testSearchAfterTheNewestAreDeleted(t *testing.T, open Opener) {
	b := setup(t, open)
	keep := b.inbound(t, "keep", "first bread", b.t0, false).Conversation
	gone := b.inbound(t, "gone", "second bread", b.at(time.Second), false).Conversation
	got, err := b.st.SearchMessages(b.ctx, gone.ID, "bread", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"second bread"}, contents(got))
	_, err = b.st.DeleteConversation(b.ctx, gone.ID, false)
	require.NoError(t, err)
	again := b.inbound(t, "again", "third bread", b.at(2*time.Second), false).Conversation
	got, err = b.st.SearchMessages(b.ctx, again.ID, "bread", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"third bread"}, contents(got))
	got, err = b.st.SearchMessages(b.ctx, keep.ID, "bread", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"first bread"}, contents(got))
}
