package console_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// appendMarked stores a message of role with content and metadata at
// t0 plus a minute.
func (b *testBundle) appendMarked(t *testing.T, role core.Role, content string, meta map[string]any) *core.Message {
	t.Helper()
	src := core.SourceUser
	if role == core.RoleAssistant {
		src = core.SourceReply
	}
	m := &core.Message{ConversationID: b.conv.ID, Role: role, Source: src, Content: content, Metadata: meta,
		CreatedAt: t0.Add(time.Minute)}
	require.NoError(t, b.st.AppendMessage(t.Context(), m))
	return m
}

// The transcript shows the user's reactions under the bot message they
// are on, and the user's edited and deleted messages as such, times in
// the conversation's zone (Europe/Berlin).
func TestTranscriptShowsReactionsEditsAndDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	edited := b.appendMarked(t, core.RoleUser, "bake at 220 degrees", map[string]any{core.EditedAtKey: "2030-01-15T09:05:00Z"})
	reply := b.appendMarked(t, core.RoleAssistant, "220 it is.", map[string]any{core.ReactionsKey: []any{"👍", "🍞"}})
	deleted := b.appendMarked(t, core.RoleUser, "", map[string]any{core.DeletedKey: true, core.EditedAtKey: "2030-01-15T09:06:00Z"})
	plain := b.appendMarked(t, core.RoleAssistant, "Anything else?", nil)

	body, _ := b.page(t, b.convPath(), b.login(t))
	msg := func(m *core.Message) string { return section(t, body, fmt.Sprintf(`id="msg-%d"`, m.Seq), `</article>`) }

	e := msg(edited)
	require.Contains(t, e, `<span class="badge msg-flag msg-edited">edited by the user 2030-01-15 10:05:00 CET</span>`)
	require.Contains(t, e, "bake at 220 degrees", "the text as it is now")
	require.NotContains(t, e, "msg-deleted")

	r := msg(reply)
	require.Contains(t, r, `<div class="msg-reactions" aria-label="the user's reactions"><span class="reaction">👍</span><span class="reaction">🍞</span><span class="muted">the user's reactions</span></div>`)
	require.NotContains(t, r, "msg-edited")

	d := msg(deleted)
	require.Contains(t, d, `<span class="badge flag-silent msg-flag msg-deleted">deleted by the user 2030-01-15 10:06:00 CET</span>`)
	require.Contains(t, d, `The user deleted this message: its text is gone, and the model no longer reads it.`)
	require.NotContains(t, d, "msg-edited", "a deletion is not shown as an edit too")

	p := msg(plain)
	require.NotContains(t, p, "msg-reactions")
	require.NotContains(t, p, "msg-edited")
	require.NotContains(t, p, "msg-deleted")
}

// One reaction reads "reaction"; an edit time the console cannot read is
// shown as stored.
func TestTranscriptOneReactionAndAnOddEditTime(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	reply := b.appendMarked(t, core.RoleAssistant, "Done.", map[string]any{core.ReactionsKey: []string{"❤️"}})
	edited := b.appendMarked(t, core.RoleUser, "thanks!", map[string]any{core.EditedAtKey: "yesterday"})
	body, _ := b.page(t, b.convPath(), b.login(t))
	r := section(t, body, fmt.Sprintf(`id="msg-%d"`, reply.Seq), `</article>`)
	require.Contains(t, r, `<span class="reaction">❤️</span><span class="muted">the user's reaction</span>`)
	e := section(t, body, fmt.Sprintf(`id="msg-%d"`, edited.Seq), `</article>`)
	require.Contains(t, e, `edited by the user yesterday</span>`)
}
