package slack

import (
	"testing"
	"time"

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
		require.Equal(t, tc.want, fromMrkdwn(tc.in), tc.in)
	}
}

func TestParseTS(t *testing.T) {
	t.Parallel()
	fallback := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, time.Unix(1700000000, 100000).UTC(), parseTS("1700000000.000100", fallback))
	require.Equal(t, time.Unix(1700000000, 0).UTC(), parseTS("1700000000", fallback))
	require.Equal(t, time.Unix(1700000000, 500000000).UTC(), parseTS("1700000000.5", fallback))
	for _, bad := range []string{"", "abc", "-5.000001", "17.x"} {
		require.Equal(t, fallback, parseTS(bad, fallback), bad)
	}
}

func TestEventSet(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newEventSet(time.Hour, 4)
	require.Equal(t, eventNew, s.begin("a", now))
	require.Equal(t, eventInFlight, s.begin("a", now))
	s.forget("a")
	require.Equal(t, eventNew, s.begin("a", now))
	s.finish("a", now)
	require.Equal(t, eventDone, s.begin("a", now.Add(59*time.Minute)))
	require.Equal(t, eventNew, s.begin("a", now.Add(61*time.Minute)), "forgotten after the ttl")

	// Full: the oldest half goes.
	s = newEventSet(time.Hour, 4)
	for i, id := range []string{"1", "2", "3", "4"} {
		s.begin(id, now.Add(time.Duration(i)*time.Second))
		s.finish(id, now.Add(time.Duration(i)*time.Second))
	}
	require.Equal(t, eventNew, s.begin("5", now.Add(5*time.Second)))
	require.Equal(t, eventDone, s.begin("4", now.Add(6*time.Second)), "the newest are kept")
	require.Equal(t, eventNew, s.begin("1", now.Add(6*time.Second)), "the oldest were dropped")
}
