package storetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// A tap answers a question once: stored as the user's message with the
// choice's label as its text; a second tap, a tap naming another
// conversation's question, a choice the question has not, or a message
// that asks nothing stores nothing and says why. A tap delivered again
// is a redelivery.
func testTapAnswersAQuestionOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.inbound(t, "ann", "which?", b.t0, false)
	other := b.inbound(t, "bob", "hi", b.t0, false)
	q := &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant, Content: "Tea or coffee?",
		Source: core.SourceReply, CreatedAt: b.at(time.Second), Metadata: map[string]any{core.ChoicesKey: []string{"Tea", "Coffee"}}}
	require.NoError(t, b.st.AppendMessage(b.ctx, q))
	plain := &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant, Content: "Hello",
		Source: core.SourceReply, CreatedAt: b.at(time.Second)}
	require.NoError(t, b.st.AppendMessage(b.ctx, plain))
	tap := func(thread string, question int64, choice int, id string) (core.InboundResult, error) {
		return b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: thread, ChannelUserID: "user-" + thread,
			PlatformMessageID: id, Now: b.at(2 * time.Second), PlanRun: true, Answers: question, Choice: choice})
	}

	_, err := tap("bob", q.ID, 0, "tap:b1")
	require.ErrorIs(t, err, core.ErrStaleChoice, "another conversation's question")
	_, err = tap("ann", q.ID, 2, "tap:a0")
	require.ErrorIs(t, err, core.ErrStaleChoice, "no such choice")
	_, err = tap("ann", plain.ID, 0, "tap:a0")
	require.ErrorIs(t, err, core.ErrStaleChoice, "a message that asks nothing")

	res, err := tap("ann", q.ID, 1, "tap:a1")
	require.NoError(t, err)
	require.Equal(t, "Coffee", res.Message.Content)
	require.Equal(t, core.RoleUser, res.Message.Role)
	require.NotNil(t, res.Run, "the choice is answered by a turn")
	_, err = tap("ann", q.ID, 1, "tap:a1")
	require.ErrorIs(t, err, core.ErrDuplicateInbound, "the same tap delivered again")
	_, err = tap("ann", q.ID, 0, "tap:a2")
	require.ErrorIs(t, err, core.ErrAlreadyAnswered, "a second tap")

	msgs, err := b.st.RecentMessages(b.ctx, first.Conversation.ID, 10)
	require.NoError(t, err)
	require.Len(t, msgs, 4, "only the first tap was stored")
	msgs, err = b.st.RecentMessages(b.ctx, other.Conversation.ID, 10)
	require.NoError(t, err)
	require.Len(t, msgs, 1, "the forged tap stored nothing")
}

// A button the core answers itself (a command's confirmation) is named by
// its data: the tap must name the data the question shows at that
// choice, and the question takes one answer all the same.
func testTapAnswersACommandsQuestionOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.inbound(t, "ann", "/forget all", b.t0, false)
	q := &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant, Content: "Erase it all?",
		Source: core.SourceCommand, CreatedAt: b.at(time.Second), Metadata: map[string]any{
			core.ChoicesKey: []string{"Erase all", "Keep"}, core.ChoiceDataKey: []string{"cf.yes", "cf.no"}, core.OneAnswerKey: true}}
	require.NoError(t, b.st.AppendMessage(b.ctx, q))
	tap := func(choice int, data, id string) (core.InboundResult, error) {
		return b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "ann", ChannelUserID: "user-ann",
			PlatformMessageID: id, Now: b.at(2 * time.Second), Source: core.SourceCommand, Answers: q.ID, Choice: choice, ChoiceData: data})
	}
	_, err := tap(0, "cf.no", "tap:a0")
	require.ErrorIs(t, err, core.ErrStaleChoice, "data the choice does not carry")
	_, err = tap(0, "q"+strconv.FormatInt(q.ID, 10)+".0", "tap:a0")
	require.ErrorIs(t, err, core.ErrStaleChoice, "a question's data on a command's button")
	_, err = b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "ann", ChannelUserID: "user-ann",
		PlatformMessageID: "tap:q", Now: b.at(2 * time.Second), PlanRun: true, Answers: q.ID, Choice: 0})
	require.ErrorIs(t, err, core.ErrStaleChoice, "a command's buttons are not the model's question")
	res, err := tap(0, "cf.yes", "tap:a1")
	require.NoError(t, err)
	require.Equal(t, "Erase all", res.Message.Content)
	require.Nil(t, res.Run, "a command's button starts no turn")
	_, err = tap(1, "cf.no", "tap:a2")
	require.ErrorIs(t, err, core.ErrAlreadyAnswered)
}
