package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// erasureCases are the cases of a user's erasure and of retention. That
// an erasure leaves none of the user's text in the database files is
// store's TestEraseConversation, with the memory plugin's tables.
func erasureCases() []storeCase {
	return []storeCase{
		{"EraseConversationViews", testEraseConversationViews},
		{"EraseIgnoresAutomations", testEraseIgnoresAutomations},
		{"DeleteMessagesBefore", testDeleteMessagesBefore},
		{"DeleteMessagesBeforeOnAllBots", testDeleteMessagesBeforeOnAllBots},
	}
}

// testEraseConversationViews: a bot's view erases only its own
// conversations, AllBots any; Erasures lists each bot's, newest first.
func testEraseConversationViews(t *testing.T, open Opener) {
	b := setup(t, open)
	ada := b.st.ForBot("ada")
	mine := b.remembered(t, "42")
	hers := b.botInbound(t, ada, "42", "hello ada", b.t0, true).Conversation

	_, err := ada.EraseConversation(b.ctx, mine.ID, b.t0)
	require.ErrorIs(t, err, core.ErrNotFound, "another bot's conversation")
	require.ErrorContains(t, err, "erasing conversation")
	b.requireKept(t, mine.ID, 0)
	_, err = b.st.EraseConversation(b.ctx, 424242, b.t0)
	require.ErrorIs(t, err, core.ErrNotFound)
	require.ErrorContains(t, err, "conversation 424242")

	// conversation, message, session record, queued run
	rows, err := b.st.AllBots().EraseConversation(b.ctx, hers.ID, b.at(time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(4), rows)
	b.requireGone(t, hers.ID)
	// conversation, two messages, session record, queued run
	rows, err = b.st.EraseConversation(b.ctx, mine.ID, b.at(2*time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(5), rows)
	b.requireGone(t, mine.ID)
	_, err = b.st.EraseConversation(b.ctx, mine.ID, b.at(3*time.Minute))
	require.ErrorIs(t, err, core.ErrNotFound, "erased once")

	all, err := b.st.AllBots().Erasures(b.ctx, 0)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, store.Erasure{ID: all[0].ID, ConversationID: mine.ID, Rows: 5, BotID: store.DefaultBot, At: b.at(2 * time.Minute)}, all[0])
	require.Equal(t, store.Erasure{ID: all[1].ID, ConversationID: hers.ID, Rows: 4, BotID: "ada", At: b.at(time.Minute)}, all[1])
	newest, err := b.st.AllBots().Erasures(b.ctx, 1)
	require.NoError(t, err)
	require.Equal(t, all[:1], newest, "newest first, limit")
	got, err := ada.Erasures(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, all[1:], got, "a bot's view lists its own")
}

// testEraseIgnoresAutomations: unlike DeleteConversation, an erasure
// never waits on the user's recurring jobs; they go with the rest.
func testEraseIgnoresAutomations(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.remembered(t, "bound")
	b.job(t, conv.ID, core.JobAgentTurn, core.JobPending, "daily check-in")
	b.job(t, conv.ID, core.JobMessage, core.JobPending, "")
	keep := b.remembered(t, "kept")
	b.job(t, keep.ID, core.JobAgentTurn, core.JobPending, "daily check-in")

	rows, err := b.st.EraseConversation(b.ctx, conv.ID, b.t0)
	require.NoError(t, err)
	require.Equal(t, int64(7), rows, "conversation, 2 messages, record, run, 2 jobs")
	b.requireGone(t, conv.ID)
	b.requireKept(t, keep.ID, 1)
}

// oldAndNew gives st's bot a conversation on thread with ten messages,
// one a minute from t0 (the words "old<i>"), the first a question the
// second answers and the third a reply with a file kept, and a summary.
func (b *testBundle) oldAndNew(t *testing.T, st *store.Store, thread string) (core.Conversation, []core.Message) {
	t.Helper()
	conv := b.botInbound(t, st, thread, "word0 question", b.t0, false).Conversation
	for i := 1; i < 10; i++ {
		m := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Source: core.SourceReply,
			Content: "word" + string(rune('0'+i)) + " reply", CreatedAt: b.at(time.Duration(i) * time.Minute)}
		if i == 2 {
			m.Delivery = core.DeliverySending
			m.Files = []core.OutboundFile{{Kind: core.AttachDocument, Name: "a.txt", MIME: "text/plain", Data: []byte("kept")}}
		}
		require.NoError(t, st.AppendMessage(b.ctx, m))
	}
	msgs, err := st.Messages(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 10)
	require.NoError(t, b.st.DB().WithContext(b.ctx).Exec(`INSERT INTO answered_questions (message_id, answer_id, answered_at)
		VALUES (?, ?, ?)`, msgs[0].ID, msgs[1].ID, b.st.Database().Time(b.t0)).Error)
	recs, err := st.SessionRecords(b.ctx, conv.ID)
	require.NoError(t, err)
	require.NoError(t, st.SaveSummary(b.ctx, recs[0].ID, "they asked and were answered"))
	_, err = st.IndexPending(b.ctx)
	require.NoError(t, err)
	return conv, msgs
}

// requireMessages checks which of msgs conv still has, by index.
func (b *testBundle) requireMessages(t *testing.T, conv core.Conversation, msgs []core.Message, want ...int) {
	t.Helper()
	got, err := b.st.Messages(b.ctx, conv.ID)
	require.NoError(t, err)
	wantIDs, gotIDs := []int64{}, []int64{}
	for _, i := range want {
		wantIDs = append(wantIDs, msgs[i].ID)
	}
	for _, m := range got {
		gotIDs = append(gotIDs, m.ID)
	}
	require.Equal(t, wantIDs, gotIDs)
}

// testDeleteMessagesBefore: retention deletes the view's bot's messages
// older than the cutoff, oldest first, limit at a time, with their search
// entries and what cascades from them; summaries and newer messages stay.
func testDeleteMessagesBefore(t *testing.T, open Opener) {
	b := setup(t, open)
	ada := b.st.ForBot("ada")
	conv, msgs := b.oldAndNew(t, b.st, "42")
	hers, _ := b.oldAndNew(t, ada, "42")
	cut := b.at(6 * time.Minute)

	n, err := b.st.DeleteMessagesBefore(b.ctx, cut, 4)
	require.NoError(t, err)
	require.Equal(t, int64(4), n, "the limit")
	b.requireMessages(t, conv, msgs, 4, 5, 6, 7, 8, 9)
	require.Zero(t, b.count(t, "answered_questions", "message_id = ?", msgs[0].ID), "cascades")
	require.Zero(t, b.count(t, "message_files", "message_id = ?", msgs[2].ID), "cascades")
	n, err = b.st.DeleteMessagesBefore(b.ctx, cut, 4)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	n, err = b.st.DeleteMessagesBefore(b.ctx, cut, 4)
	require.NoError(t, err)
	require.Zero(t, n, "nothing older left")
	b.requireMessages(t, conv, msgs, 6, 7, 8, 9)

	for word, want := range map[string]int{"word1": 0, "word5": 0, "word6": 1, "word9": 1} {
		got, err := b.st.SearchMessages(b.ctx, conv.ID, word, 10)
		require.NoError(t, err)
		require.Len(t, got, want, word)
	}
	if b.st.Driver() == store.DriverSQLite {
		// A stale entry would find the message that takes its id next.
		require.Zero(t, b.count(t, "message_search", "docid = ?", msgs[5].ID), "its search entry")
	}
	found, err := b.st.SearchConversations(b.ctx, "word5", 10, 0)
	require.NoError(t, err)
	require.Empty(t, found, "gone from the index across conversations too")
	recs, err := b.st.SessionRecords(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, "they asked and were answered", recs[0].Summary, "summaries stay")
	_, err = b.st.Conversation(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, int64(10), b.count(t, "messages", "conversation_id = ?", hers.ID), "another bot's untouched")
}

// testDeleteMessagesBeforeOnAllBots: on AllBots every bot's old messages
// go, oldest first across bots.
func testDeleteMessagesBeforeOnAllBots(t *testing.T, open Opener) {
	b := setup(t, open)
	conv, msgs := b.oldAndNew(t, b.st, "42")
	hers, theirs := b.oldAndNew(t, b.st.ForBot("ada"), "42")
	all := b.st.AllBots()

	n, err := all.DeleteMessagesBefore(b.ctx, b.at(90*time.Second), 3)
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "the two bots' first two, oldest first")
	n, err = all.DeleteMessagesBefore(b.ctx, b.at(90*time.Second), 3)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	b.requireMessages(t, conv, msgs, 2, 3, 4, 5, 6, 7, 8, 9)
	b.requireMessages(t, hers, theirs, 2, 3, 4, 5, 6, 7, 8, 9)

	// Every message old: the newest ids go too, and the search index
	// must not skip the messages that take them next.
	n, err = all.DeleteMessagesBefore(b.ctx, b.at(time.Hour), 0)
	require.NoError(t, err)
	require.Equal(t, int64(16), n)
	fresh := b.inbound(t, "fresh", "word7 again", b.at(2*time.Hour), false).Conversation
	got, err := b.st.SearchMessages(b.ctx, fresh.ID, "word7", 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
}
