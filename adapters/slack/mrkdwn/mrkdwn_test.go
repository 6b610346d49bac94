package mrkdwn

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromMrkdwn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"plain words", "plain words"},
		{"fish &amp; chips &lt;3 &gt;_&lt;", "fish & chips <3 >_<"},
		{"&amp;lt; stays", "&lt; stays"},
		{"hi <@U0ADA00001>", "hi @U0ADA00001"},
		{"hi <@U0ADA00001|ada>", "hi @ada"},
		{"in <#C0GENERAL1|general>", "in #general"},
		{"<!here> and <!channel>", "@here and @channel"},
		{"<!subteam^S0TEAM|@devs> ping", "@devs ping"},
		{"<!date^1392734382^{date}|Feb 18, 2014>", "Feb 18, 2014"},
		{"see <https://example.com>", "see https://example.com"},
		{"see <https://example.com|example.com>", "see https://example.com"},
		{"see <https://example.com/a?b=1&amp;c=2|the docs>", "see the docs (https://example.com/a?b=1&c=2)"},
		{"mail <mailto:ada@example.com|ada@example.com>", "mail ada@example.com"},
		{"unclosed < bracket", "unclosed < bracket"},
		{"a > b", "a > b"},
		{"emoji 🙂 and ünïcödé", "emoji 🙂 and ünïcödé"},
	} {
		require.Equal(t, tc.want, ToText(tc.in), tc.in)
	}
}
