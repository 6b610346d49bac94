package console_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// held stores a user message a limit held on the thread, at.
func (b *testBundle) held(t *testing.T, thread, name, limit string, at time.Time) core.Message {
	t.Helper()
	res, err := b.st.RecordInbound(t.Context(), core.InboundRecord{Platform: telegram, ChannelThreadID: thread,
		ChannelUserID: thread, DisplayName: name, Text: "one more thing", Now: at,
		Metadata: map[string]any{"limited": limit}})
	require.NoError(t, err)
	return res.Message
}

func TestOverviewCountsMessagesHeldByLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	b.held(t, "777", "Ada", core.LimitTurnsPerDay, t0.Add(-25*time.Hour)) // a day and more ago
	b.held(t, "777", "Ada", core.LimitTurnsPerDay, t0.Add(-2*time.Hour))
	var bob core.Message
	for i := range 3 {
		bob = b.held(t, "888", "Bob", core.LimitMessagesPerMinute, t0.Add(time.Duration(i-10)*time.Minute))
	}
	b.held(t, "888", "Bob", core.LimitTokensPerDay, t0.Add(-5*time.Minute))

	body, _ := b.page(t, "/console/", b.login(t))
	limits := section(t, body, `<section id="limits"`, `</section>`)
	require.Contains(t, limits, "Held by per-user limits (the last 24 hours)")
	require.Contains(t, limits, `<b id="limited-total">5</b> messages held`)
	require.Regexp(t, `id="limited-messages_per_minute"><code>messages_per_minute</code> <b>3</b>`, limits)
	require.Regexp(t, `id="limited-turns_per_day"><code>turns_per_day</code> <b>1</b>`, limits)
	require.Regexp(t, `id="limited-tokens_per_day"><code>tokens_per_day</code> <b>1</b>`, limits)
	users := section(t, limits, `<table class="stack" id="limited-users"`, `</table>`)
	require.Regexp(t, `(?s)Bob</a>.*Ada</a>`, users, "the most held first")
	bobRow := section(t, users, fmt.Sprintf(`<tr id="limited-conversation-%d"`, bob.ConversationID), `</tr>`)
	require.Contains(t, bobRow, fmt.Sprintf(`href="/console/conversations/%d#transcript"`, bob.ConversationID))
	require.Contains(t, bobRow, `<td data-label="Held" class="num">4</td>`)
	require.Contains(t, bobRow, `<code>messages_per_minute</code> 3, <code>tokens_per_day</code> 1`)
	require.Contains(t, bobRow, "2030-01-15 08:55", "the newest held, in the owner's zone (UTC here)")
}

func TestOverviewWithNothingHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	body, _ := b.page(t, "/console/", b.login(t))
	limits := section(t, body, `<section id="limits"`, `</section>`)
	require.Contains(t, limits, `id="limited-none">No message was held by a per-user limit`)

	// A store that does not count them shows no section.
	f := setupFake(t, nil)
	seed(f)
	body, _ = f.page(t, "/console/", f.login(t))
	require.NotContains(t, body, `id="limits"`)
	require.Contains(t, body, `<section id="tokens"`)
}

func TestTranscriptMarksHeldMessagesAndLimitNotices(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	m := b.held(t, "777", "Ada", core.LimitTurnsPerDay, t0.Add(time.Minute))
	notice := &core.Message{ConversationID: b.conv.ID, Role: core.RoleAssistant, Source: core.SourceSystem,
		Content:   "You've reached the limit of 20 replies in 24 hours. I'll answer again after 10:00 tomorrow (Europe/Berlin time).",
		Metadata:  map[string]any{"limit_notice": core.LimitTurnsPerDay, "limit_until": "2030-01-16T09:00:00Z"},
		CreatedAt: t0.Add(time.Minute)}
	require.NoError(t, b.st.AppendMessage(t.Context(), notice))

	body, _ := b.page(t, b.convPath(), b.login(t))
	held := section(t, body, fmt.Sprintf(`<article class="msg msg-role-user" id="msg-%d"`, m.Seq), `</article>`)
	require.Contains(t, held, `<span class="badge flag msg-flag msg-held">held by <code>turns_per_day</code>: no turn</span>`)
	require.Contains(t, held, "one more thing")
	told := section(t, body, fmt.Sprintf(`id="msg-%d"`, notice.Seq), `</article>`)
	require.Contains(t, told, `limit notice: <code>turns_per_day</code>`)
	require.Contains(t, told, "I&#39;ll answer again after 10:00 tomorrow")
	first := section(t, body, `id="msg-1"`, `</article>`)
	require.NotContains(t, first, "held by", "a message no limit held is not marked")
}
