package console_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/httpapi"
)

// seeded is what seed put in a fake store.
type seeded struct {
	ada, bob                                   core.Conversation
	failed, soon, later, recurring, sent, late core.Job
}

// seed fills b's store: Ada on Telegram (New York) and Bob on the web
// (no zone), a failing adapter and model, activity, failures, tokens and
// jobs of every kind.
func seed(b *fakeBundle) seeded {
	var s seeded
	f := b.fs
	s.ada = f.addConversation(core.Conversation{Platform: telegram, ChannelThreadID: "4242", ChannelUserID: "4242",
		DisplayName: "Ada", TimeZone: "America/New_York"})
	s.bob = f.addConversation(core.Conversation{Platform: web, ChannelThreadID: "bob-1", ChannelUserID: "bob-1",
		DisplayName: "Bob"})
	f.addMessage(core.Message{ConversationID: s.ada.ID, Role: core.RoleUser, Source: core.SourceUser, Content: "hello there", CreatedAt: t0.Add(-10 * time.Minute)})
	f.addMessage(core.Message{ConversationID: s.ada.ID, Role: core.RoleAssistant, Source: core.SourceReply, Content: "Hi **Ada**!", CreatedAt: t0.Add(-9 * time.Minute)})
	f.addMessage(core.Message{ConversationID: s.bob.ID, Role: core.RoleUser, Source: core.SourceUser, Content: "what's new?", CreatedAt: t0.Add(-3 * time.Hour)})

	b.setHealth(
		httpapi.Component{Name: "adapter:telegram", State: "failing", Decides: true,
			Error: "telegram adapter: polling failing: 3 getUpdates requests failed in a row, last: getUpdates: 401 Unauthorized"},
		httpapi.Component{Name: "adapter:web", State: "ok", Decides: true},
		httpapi.Component{Name: "llm", State: "auth", Error: "401 invalid api key", Since: t0.Add(-30 * time.Minute)},
		httpapi.Component{Name: "mcp:files", State: "ok"},
		httpapi.Component{Name: "store", State: "ok", Decides: true},
	)
	f.buckets[5*time.Minute] = []core.ActivityBucket{
		{Start: t0.Add(-10 * time.Minute), Inbound: 1, Outbound: 1, Turns: 1},
		{Start: t0.Add(-5 * time.Minute), Inbound: 2, Turns: 1, Failed: 1},
	}
	f.buckets[time.Hour] = []core.ActivityBucket{
		{Start: t0.Add(-5 * time.Hour), Inbound: 4, Outbound: 4, Turns: 4},
		{Start: t0.Add(-time.Hour), Inbound: 3, Outbound: 1, Turns: 2, Failed: 1},
	}
	f.tokenDays = []core.TokenDay{
		{Day: "2030-01-14", Model: "local-llama", Prompt: 5000, Completion: 500},
		{Day: "2030-01-15", Model: "gpt-4o-mini", Prompt: 1_200_000, Completion: 100_000},
	}

	s.failed = f.addJob(core.Job{ConversationID: s.ada.ID, Status: core.JobFailed, Text: "Time to check the bread!",
		DueAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-30 * time.Minute), Attempts: 1,
		LastError: "sending scheduled message: unauthorized (is the token revoked?)"})
	s.soon = f.addJob(core.Job{ConversationID: s.ada.ID, Text: "Stretch your legs", DueAt: t0.Add(2 * time.Hour)})
	s.later = f.addJob(core.Job{ConversationID: s.bob.ID, Text: "Dentist on Friday", DueAt: t0.Add(3 * 24 * time.Hour)})
	next := t0.Add(6 * time.Hour)
	s.recurring = f.addJob(core.Job{ConversationID: s.ada.ID, Kind: core.JobAgentTurn, Name: "check-in", Text: "Ask how the day went",
		Recurrence: "every 6h", DueAt: next, NextRunAt: &next})
	sentAt := t0.Add(-2 * time.Hour)
	s.sent = f.addJob(core.Job{ConversationID: s.bob.ID, Status: core.JobSent, Text: "Good morning!", DueAt: sentAt,
		SentAt: &sentAt, UpdatedAt: sentAt, Attempts: 1})
	s.late = f.addJob(core.Job{ConversationID: s.bob.ID, Text: "Water the plants", DueAt: t0.Add(-10 * time.Minute)})

	f.failures = []core.Failure{
		{Kind: "job", At: t0.Add(-30 * time.Minute), ConversationID: s.ada.ID, JobID: s.failed.ID,
			Error: "sending scheduled message: unauthorized (is the token revoked?)"},
		{Kind: "turn", At: t0.Add(-time.Hour), ConversationID: s.bob.ID, RunID: 7, Error: "model: 401 invalid api key"},
	}
	return s
}

func TestOverviewShowsHowTheBotIsDoing(t *testing.T) {
	t.Parallel()
	b := setupFake(t, map[string]config.Price{"gpt-4o-mini": {Prompt: 0.15, Completion: 0.6}})
	s := seed(b)
	body, _ := b.page(t, "/console/", b.login(t))

	require.Contains(t, body, "Times are in Europe/Berlin")
	require.Contains(t, body, `aria-current="page">Overview<`, "the menu says where the owner is")

	// Health: each component, the failing adapter with its error, the
	// model's state with its error and since when.
	require.Contains(t, body, `id="health-status">Something is failing`)
	adapter := section(t, body, `<tr class="component[^"]*" id="component-adapter:telegram"`, `</tr>`)
	require.Contains(t, adapter, `data-state="failing"`)
	require.Contains(t, adapter, "401 Unauthorized")
	llm := section(t, body, `id="component-llm"`, `</tr>`)
	require.Contains(t, llm, ">auth<")
	require.Contains(t, llm, "401 invalid api key")
	require.Contains(t, llm, "2030-01-15 09:30:00 CET (30 min ago)", "since when, in the owner's zone")
	require.Contains(t, llm, "shown only, never fails /healthz")
	require.Contains(t, section(t, body, `id="component-store"`, `</tr>`), `data-state="ok"`)

	// Activity: the totals of both charts, a bar per interval.
	hour := section(t, body, `<figure class="chart" id="chart-hour"`, `</figure>`)
	require.Contains(t, hour, "3 received · 1 sent · 2 turns · <span class=\"error\">1 failed</span>")
	require.Equal(t, 12, strings.Count(hour, `<g class="bar">`), "5-minute bars over the hour")
	require.Contains(t, hour, "09:55–10:00: 2 messages received, 0 sent; 1 turns, 1 failed", "interval tooltips in the owner's zone")
	day := section(t, body, `<figure class="chart" id="chart-day"`, `</figure>`)
	require.Contains(t, day, "7 received · 5 sent · 6 turns")
	require.Equal(t, 24, strings.Count(day, `<g class="bar">`))

	// Failures, linked to where they happened.
	failures := section(t, body, `<section id="failures"`, `</section>`)
	require.Regexp(t, fmt.Sprintf(`(?s)<a href="/console/jobs/%d">job %d</a>.*Ada \(telegram\).*unauthorized \(is the token revoked\?\)`, s.failed.ID, s.failed.ID), failures)
	require.Regexp(t, fmt.Sprintf(`(?s)<a href="/console/conversations/%d#run-7">run 7</a>.*Bob \(web\).*model: 401 invalid api key`, s.bob.ID), failures)

	// Tokens per day and model, with the cost of the model that has a price.
	tokens := section(t, body, `<section id="tokens"`, `</section>`)
	require.Regexp(t, `(?s)<td>2030-01-15</td><td>gpt-4o-mini</td><td class="num">1,200,000</td><td class="num">100,000</td><td class="num">0.24</td>`, tokens)
	require.Regexp(t, `(?s)<td>2030-01-14</td><td>local-llama</td><td class="num">5,000</td><td class="num">500</td><td class="num"><span class="muted">no price</span>`, tokens)
	require.Contains(t, tokens, `id="cost-total">0.24<`)

	// Pending jobs and the next one due (overdue, here).
	pending := section(t, body, `<section id="pending"`, `</section>`)
	require.Contains(t, pending, `<b id="pending-count">4</b>`)
	require.Contains(t, pending, fmt.Sprintf(`<a href="/console/jobs/%d" id="next-job">`, s.late.ID))
	require.Contains(t, pending, "Water the plants")

	// Recently active conversations, with their last message.
	recent := section(t, body, `<table id="conversations"`, `</table>`)
	require.Regexp(t, `(?s)Ada</a>.*telegram.*bot:</span> Hi \*\*Ada\*\*!.*Bob</a>.*what&#39;s new\?`, recent)
}

func TestOverviewWithoutPricesSaysHowToSetThem(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	seed(b)
	body, _ := b.page(t, "/console/", b.login(t))
	tokens := section(t, body, `<section id="tokens"`, `</section>`)
	require.Contains(t, tokens, "Set prices per model under <code>console.prices</code>")
	require.NotContains(t, tokens, "no price")
	require.NotContains(t, tokens, "cost-total")
}

func TestOverviewOfANewBot(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	b.setHealth(httpapi.Component{Name: "store", State: "ok", Decides: true}, httpapi.Component{Name: "llm", State: "unknown"})
	body, _ := b.page(t, "/console/", b.login(t))
	require.Contains(t, body, "All is well")
	require.Contains(t, section(t, body, `id="component-llm"`, `</tr>`), `data-state="unknown"`)
	require.Contains(t, body, "Nothing failed.")
	require.Contains(t, body, "Nothing is scheduled.")
	require.Contains(t, body, "No conversations yet")
	require.Contains(t, body, "No tokens used in these days.")
	require.Contains(t, body, "0 received · 0 sent · 0 turns")
}

func TestOverviewIsLiveASectionChangesWithoutAReload(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	c := b.login(t)
	body, _ := b.page(t, "/console/", c)
	require.Contains(t, body, ownScript, "the page loads the console's script")
	stream := liveURL(t, body)
	require.True(t, strings.HasPrefix(stream, "/console/events/?v="), stream)

	es := b.openStream(t, stream, c, "")
	// Nothing changed since the page was made: nothing is sent, and the
	// stream waits for its next look.
	b.clock.WaitForTimer(t, t0.Add(liveEvery), 5*time.Second)
	es.none(t)

	b.fs.addMessage(core.Message{ConversationID: s.bob.ID, Role: core.RoleUser, Source: core.SourceUser,
		Content: "the bread is ready", CreatedAt: t0.Add(time.Second)})
	b.clock.Advance(liveEvery)
	ev := es.next(t)
	require.Equal(t, "update", ev.name)
	require.NotEmpty(t, ev.id, "the version, for a reconnect's Last-Event-ID")
	var data struct{ Sections map[string]string }
	require.NoError(t, json.Unmarshal([]byte(ev.data), &data))
	require.Contains(t, data.Sections["recent"], "the bread is ready")
	require.Contains(t, data.Sections, "health")
	require.Contains(t, data.Sections, "activity")

	// A reconnect that has the newest version gets nothing until
	// something changes again.
	again := b.openStream(t, "/console/events/", c, ev.id)
	b.clock.WaitForTimers(t, 2, 5*time.Second)
	again.none(t)
	es.none(t)
}

func TestStreamsNeedASessionAndEndWithIt(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	seed(b)
	for _, path := range []string{"/console/events/", "/console/events/jobs", "/console/events/conversations/1", "/console/events/jobs/1"} {
		resp, _ := b.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: no redirect to a login page for a stream", path)
	}
	c := b.login(t)
	resp, _ := b.do(t, http.MethodGet, "/console/events/conversations/99", nil, c)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	es := b.openStream(t, "/console/events/", c, "")
	require.Equal(t, "update", es.next(t).name, "without a version, the stream sends what it has")
	b.clock.WaitForTimer(t, t0.Add(liveEvery), 5*time.Second)
	b.clock.Advance(7 * 24 * time.Hour)
	require.Equal(t, "expired", es.next(t).name)
	_, open := <-es.events
	require.False(t, open, "the stream ends with the session")
}

func TestCloseEndsTheStreams(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	c := b.login(t)
	es := b.openStream(t, "/console/events/", c, "")
	require.Equal(t, "update", es.next(t).name)
	b.console.Close()
	select {
	case _, open := <-es.events:
		require.False(t, open)
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived Close")
	}
}

// section is the first part of body from a match of start to the next
// end after it.
func section(t *testing.T, body, start, end string) string {
	t.Helper()
	loc := regexp.MustCompile(start).FindStringIndex(body)
	require.NotNil(t, loc, "no %s in the page", start)
	rest := body[loc[0]:]
	i := strings.Index(rest[loc[1]-loc[0]:], end)
	require.GreaterOrEqual(t, i, 0, "no %s after %s", end, start)
	return rest[:loc[1]-loc[0]+i+len(end)]
}

// Logging out in one tab ends the session everywhere: another tab's live
// stream says "expired" on its next tick, and a store that cannot say
// whether a session was logged out refuses the console (503) rather than
// trusting the cookie, and fails the logout loudly, keeping the cookie.
func TestLogoutEndsTheSessionsStreamsAndNeedsTheStore(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	seed(b)
	c := b.login(t)
	es := b.openStream(t, "/console/events/", c, "")
	require.Equal(t, "update", es.next(t).name)
	_, csrf := b.page(t, "/console/", c)
	resp, _ := b.do(t, http.MethodPost, "/console/logout", url.Values{"csrf": {csrf}}, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	b.clock.WaitForTimer(t, t0.Add(liveEvery), 5*time.Second)
	b.clock.Advance(liveEvery)
	require.Equal(t, "expired", es.next(t).name)
	_, open := <-es.events
	require.False(t, open, "the stream ends with the session")

	c = b.login(t)
	b.fs.mu.Lock()
	b.fs.revokeErr = errors.New("database is locked")
	b.fs.mu.Unlock()
	resp, body := b.do(t, http.MethodGet, "/console/", nil, c)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, body, "The console cannot check your session right now")
	require.Contains(t, b.logs.String(), "database is locked")
}
