package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/console"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/plugins/mood"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// The store is what the console reads in production.
var _ console.Store = (*store.Store)(nil)

const token = "console-token-DONOTLEAK-0123456789"

// t0 is 10:00 in Berlin.
var t0 = time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)

type testBundle struct {
	srv   *httptest.Server
	st    *store.Store
	facts *memory.FactStore
	moods *mood.Points
	clock *coretest.Clock
	logs  *coretest.Logs
	token string
	conv  core.Conversation
	// job is the conversation's pending scheduled message.
	job core.Job
}

// setup serves a console with tok over a real SQLite store holding one
// conversation: a user message, a reply, a silent turn, a failure notice
// and a pending scheduled message.
func setup(t *testing.T, tok string) *testBundle {
	t.Helper()
	b := &testBundle{st: storetest.OpenSQLite(t), clock: coretest.NewClock(t0), logs: &coretest.Logs{}, token: tok}
	ctx := context.Background()
	require.NoError(t, b.st.Migrate(ctx, memory.New(), mood.New()))
	b.facts, b.moods = memory.NewFactStore(b.st.Database()), mood.NewPoints(b.st.Database())
	in, err := b.st.RecordInbound(ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "777",
		ChannelUserID: "777", DisplayName: "Ada", TimeZone: "Europe/Berlin", Text: "remind me about the bread", Now: t0})
	require.NoError(t, err)
	b.conv = in.Conversation
	for i, m := range []core.Message{
		{Role: core.RoleAssistant, Source: core.SourceReply, Content: "I will, in an hour."},
		{Role: core.RoleAssistant, Source: core.SourceReply, Metadata: map[string]any{"silent": true}},
		{Role: core.RoleAssistant, Source: core.SourceSystem, Content: "Sorry, something went wrong.",
			Metadata: map[string]any{"failure_notice": true}},
	} {
		m.ConversationID, m.CreatedAt = b.conv.ID, t0.Add(time.Duration(i+1)*time.Second)
		require.NoError(t, b.st.AppendMessage(ctx, &m))
	}
	b.job = core.Job{ConversationID: b.conv.ID, Text: "Check on the bread!", DueAt: t0.Add(time.Hour),
		Origin: "tool", CreatedByToolCallID: "call-1", CreatedAt: t0}
	_, err = b.st.ScheduleMessage(ctx, &b.job, false, 50)
	require.NoError(t, err)

	mux := http.NewServeMux()
	console.New(console.Config{Token: tok, Store: b.st, Facts: b.facts, Mood: b.moods, Location: time.UTC, Clock: b.clock, Logger: b.logs.Logger()}).Mount(mux)
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	return b
}

// do sends a request without following redirects.
func (b *testBundle) do(t *testing.T, method, path string, form url.Values, cookies ...*http.Cookie) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(raw)
}

// login logs in and returns the session cookie.
func (b *testBundle) login(t *testing.T) *http.Cookie {
	t.Helper()
	resp, _ := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {b.token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			return c
		}
	}
	t.Fatal("no session cookie after a good login")
	return nil
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// page GETs a console page as the session and returns its body and CSRF
// token.
func (b *testBundle) page(t *testing.T, path string, c *http.Cookie) (string, string) {
	t.Helper()
	resp, body := b.do(t, http.MethodGet, path, nil, c)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "a signed-in page has a logout form with the CSRF token")
	return body, m[1]
}

func (b *testBundle) convPath() string { return fmt.Sprintf("/console/conversations/%d", b.conv.ID) }

func (b *testBundle) cancelPath(id int64) string {
	return fmt.Sprintf("/console/conversations/%d/jobs/%d/cancel", b.conv.ID, id)
}

func TestLoginWithAWrongTokenIs401WithoutACookie(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	for _, given := range []string{"wrong", "", token + "x", strings.ToUpper(token)} {
		resp, body := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {given}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "token %q", given)
		require.Empty(t, resp.Header.Values("Set-Cookie"), "token %q", given)
		require.Contains(t, body, "That is not the API token")
	}
	require.Contains(t, b.logs.String(), "console login refused")
	require.NotContains(t, b.logs.String(), token)
}

func TestLoginSetsASessionCookieThatIsNotTheToken(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	resp, _ := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {token}, "next": {b.convPath()}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, b.convPath(), resp.Header.Get("Location"), "back to the page that asked for a login")
	require.Len(t, resp.Cookies(), 1)
	c := resp.Cookies()[0]
	require.Equal(t, console.CookieName, c.Name)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.Equal(t, "/console/", c.Path)
	require.Equal(t, int(console.SessionTTL/time.Second), c.MaxAge)
	require.NotContains(t, c.Value, token)

	// Two logins are two sessions.
	require.NotEqual(t, c.Value, b.login(t).Value)

	body, _ := b.page(t, "/console/", c)
	require.Contains(t, body, "Ada")
	require.Contains(t, body, b.convPath())
}

func TestLoginNeverRedirectsOffTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	for next, want := range map[string]string{
		"https://evil.example/":             "/console/",
		"//evil.example/console/":           "/console/",
		`/\evil.example`:                    "/console/",
		"/api/v1/jobs":                      "/console/",
		"/console/../api/v1/jobs":           "/console/",
		"/console/login":                    "/console/",
		"/console/conversations/3?notice=x": "/console/conversations/3?notice=x",
		"":                                  "/console/",
	} {
		resp, _ := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {token}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, want, resp.Header.Get("Location"), "next %q", next)
	}
}

func TestPagesNeedASession(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	good := b.login(t)
	otherToken := setup(t, "another-token-entirely")
	foreign := otherToken.login(t) // signed with another token: what a token change does
	for name, cookies := range map[string][]*http.Cookie{
		"none":          nil,
		"garbage":       {{Name: console.CookieName, Value: "garbage"}},
		"the token":     {{Name: console.CookieName, Value: token}},
		"tampered":      {{Name: console.CookieName, Value: "1" + good.Value}},
		"another token": {foreign},
	} {
		for _, path := range []string{"/console/", b.convPath()} {
			resp, body := b.do(t, http.MethodGet, path, nil, cookies...)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%s %s", name, path)
			require.Equal(t, "/console/login?next="+url.QueryEscape(path), resp.Header.Get("Location"), name)
			require.NotContains(t, body, "Ada", name)
		}
	}
	resp, body := b.do(t, http.MethodGet, "/console/login", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `name="token"`)
	require.NotContains(t, body, "Log out")
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	c := b.login(t)
	b.clock.Advance(console.SessionTTL - time.Second)
	b.page(t, "/console/", c)
	b.clock.Advance(time.Second)
	resp, _ := b.do(t, http.MethodGet, "/console/", nil, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestCancelNeedsTheSessionsCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	c := b.login(t)
	_, csrf := b.page(t, b.convPath(), c)
	_, otherCSRF := b.page(t, "/console/", b.login(t))
	require.NotEqual(t, csrf, otherCSRF, "each session has its own CSRF token")

	for name, form := range map[string]url.Values{
		"no field":            {},
		"empty":               {"csrf": {""}},
		"wrong":               {"csrf": {"not-it"}},
		"another session's":   {"csrf": {otherCSRF}},
		"the session cookie":  {"csrf": {c.Value}},
		"the token as csrf":   {"csrf": {token}},
		"right but truncated": {"csrf": {csrf[:len(csrf)-1]}},
	} {
		resp, _ := b.do(t, http.MethodPost, b.cancelPath(b.job.ID), form, c)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
	}
	// No session at all: refused however good the field.
	resp, _ := b.do(t, http.MethodPost, b.cancelPath(b.job.ID), url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	j, err := b.st.Job(context.Background(), b.job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobPending, j.Status, "nothing refused may cancel")

	resp, _ = b.do(t, http.MethodPost, b.cancelPath(b.job.ID), url.Values{"csrf": {csrf}}, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, fmt.Sprintf("%s?job=%d&notice=cancelled#job-%d", b.convPath(), b.job.ID, b.job.ID), resp.Header.Get("Location"))
	j, err = b.st.Job(context.Background(), b.job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, j.Status)
	require.Equal(t, console.CancelToolCallID, j.CancelledByToolCallID)

	body, _ := b.page(t, resp.Header.Get("Location"), c)
	require.Contains(t, body, fmt.Sprintf("Job %d cancelled.", b.job.ID))
	require.Regexp(t, fmt.Sprintf(`id="job-%d" data-status="cancelled"`, b.job.ID), body)
	require.NotContains(t, body, fmt.Sprintf(`id="cancel-%d"`, b.job.ID), "no Cancel button for a cancelled job")

	// Again: it is no longer pending, and the page says so.
	resp, _ = b.do(t, http.MethodPost, b.cancelPath(b.job.ID), url.Values{"csrf": {csrf}}, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "notice=not_pending")
	// Another conversation's job, or none: not found, nothing changes.
	resp, _ = b.do(t, http.MethodPost, fmt.Sprintf("/console/conversations/%d/jobs/%d/cancel", b.conv.ID+1, b.job.ID),
		url.Values{"csrf": {csrf}}, c)
	require.Contains(t, resp.Header.Get("Location"), "notice=not_found")
}

func TestLogout(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	c := b.login(t)
	_, csrf := b.page(t, "/console/", c)

	resp, _ := b.do(t, http.MethodPost, "/console/logout", url.Values{}, c)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "logout needs the CSRF token too")

	resp, _ = b.do(t, http.MethodPost, "/console/logout", url.Values{"csrf": {csrf}}, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/login", resp.Header.Get("Location"))
	require.Len(t, resp.Cookies(), 1)
	require.Equal(t, console.CookieName, resp.Cookies()[0].Name)
	require.Empty(t, resp.Cookies()[0].Value)
	require.Negative(t, resp.Cookies()[0].MaxAge, "the browser drops the cookie")
}

func TestUserTextIsNeverMarkup(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	ctx := context.Background()
	evil := `<script>alert("pwned")</script><img src=x onerror=alert(1)>`
	in, err := b.st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: "evil",
		ChannelUserID: "evil", DisplayName: `<b onmouseover="x()">Mallory</b>`, Text: evil, Now: t0})
	require.NoError(t, err)
	_, err = b.st.ScheduleMessage(ctx, &core.Job{ConversationID: in.Conversation.ID, Text: "</pre><script>x()</script>",
		DueAt: t0.Add(time.Hour)}, false, 50)
	require.NoError(t, err)
	_, _, err = b.facts.Remember(ctx, in.Conversation.ID, `likes <iframe src="//evil">`, 30, t0)
	require.NoError(t, err)
	require.NoError(t, b.moods.Add(ctx, &core.MoodPoint{ConversationID: in.Conversation.ID, Valence: 0.1,
		Source: "set_mood", Reason: `</title><script>x()</script>`, CreatedAt: t0}))

	c := b.login(t)
	list, _ := b.page(t, "/console/", c)
	body, _ := b.page(t, fmt.Sprintf("/console/conversations/%d", in.Conversation.ID), c)
	for _, page := range []string{list, body} {
		require.NotContains(t, withoutOwnScript(page), "<script")
		require.NotContains(t, page, "<b onmouseover")
		require.NotContains(t, page, "<img")
		require.NotContains(t, page, "<iframe")
	}
	require.Contains(t, list, "&lt;b onmouseover=&#34;x()&#34;&gt;Mallory&lt;/b&gt;")
	require.Contains(t, body, `&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;`)
	require.Contains(t, body, "&lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;")
	require.Contains(t, body, "likes &lt;iframe")
	require.Contains(t, body, "&lt;/title&gt;&lt;script&gt;")
}

func TestConversationPage(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	body, _ := b.page(t, b.convPath(), b.login(t))

	require.Contains(t, body, "Times are in Europe/Berlin (the conversation&#39;s zone).")
	// The transcript: each message with its source; silence and failure marked.
	require.Contains(t, body, "remind me about the bread")
	require.Contains(t, body, "2030-01-15 10:00:00 CET", "times in the conversation's zone")
	require.Equal(t, []string{"user", "reply", "reply", "system"}, matches(body, `class="badge src-\w+ msg-source">(\w+)<`))
	require.Regexp(t, `(?s)id="msg-3".*silent turn: nothing was sent.*id="msg-4".*failure notice.*Sorry, something went wrong`, body)
	require.Equal(t, 1, strings.Count(body, "silent turn: nothing was sent"))
	require.Equal(t, 1, strings.Count(body, ">failure notice<"))
	// The job, pending, with its text, due time and a Cancel button.
	require.Regexp(t, fmt.Sprintf(`(?s)id="job-%d" data-status="pending".*2030-01-15 11:00:00 CET.*Check on the bread!.*id="cancel-%d"`,
		b.job.ID, b.job.ID), body)
	require.Contains(t, body, `<tr class="now">`, "now is drawn above the job due later")

	resp, _ := b.do(t, http.MethodGet, "/console/conversations/999", nil, b.login(t))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = b.do(t, http.MethodGet, "/console/conversations/abc", nil, b.login(t))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = b.do(t, http.MethodGet, "/console/nothing-here", nil, b.login(t))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestFactsAndSummaries(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	ctx := context.Background()
	_, _, err := b.facts.Remember(ctx, b.conv.ID, "bakes sourdough on Sundays", 30, t0)
	require.NoError(t, err)
	rec := &core.SessionRecord{ConversationID: b.conv.ID, StartedAt: t0.Add(-48 * time.Hour)}
	require.NoError(t, b.st.CreateSessionRecord(ctx, rec))
	require.NoError(t, b.st.SaveSummary(ctx, rec.ID, "Talked about flour."))

	body, _ := b.page(t, b.convPath(), b.login(t))
	require.Regexp(t, `(?s)id="facts".*F01.*bakes sourdough on Sundays`, body)
	require.Regexp(t, `(?s)id="summaries".*Talked about flour\.`, body)
}

func TestMoodChartHasOnePointPerMoodPoint(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	c := b.login(t)
	body, _ := b.page(t, b.convPath(), c)
	require.Contains(t, body, "No mood recorded.")
	require.NotContains(t, body, "<svg")

	ctx := context.Background()
	const n = 7
	for i := range n {
		v := float64(i)/3 - 1 // -1 … +1
		require.NoError(t, b.moods.Add(ctx, &core.MoodPoint{ConversationID: b.conv.ID, Valence: v, Arousal: -v,
			Source: "set_mood", CreatedAt: t0.Add(time.Duration(i) * time.Hour)}))
	}
	body, _ = b.page(t, b.convPath(), c)
	svg := regexp.MustCompile(`(?s)<svg id="mood-chart".*?</svg>`).FindString(body)
	require.NotEmpty(t, svg)
	require.Equal(t, n, strings.Count(svg, `<g class="mood-point">`))
	require.Equal(t, n, strings.Count(svg, `<circle class="valence"`))
	require.Equal(t, n, strings.Count(svg, `<circle class="arousal"`))
	// Time runs left to right: the x of each point grows.
	xs := matches(svg, `<circle class="valence" cx="([\d.]+)"`)
	require.Len(t, xs, n)
	require.Equal(t, "44.0", xs[0])
	require.Equal(t, "708.0", xs[n-1])
	require.Contains(t, svg, "valence -1.00, arousal &#43;1.00", "each point has a tooltip (+ escaped)")
}

func TestDisabledWithoutAToken(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for _, path := range []string{"/console/", "/console/login", b.convPath()} {
		resp, body := b.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.NotContains(t, body, "Ada")
	}
	// Not even the empty token logs in.
	resp, _ := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {""}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Empty(t, resp.Cookies())
	require.Contains(t, b.logs.String(), "http.api_token is empty: the web console is disabled")
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	resp, _ := b.do(t, http.MethodGet, "/console/login", nil)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self';", "the console's own script only")
	require.NotContains(t, resp.Header.Get("Content-Security-Policy"), "unsafe-inline'; script", "never inline script")
	require.NotContains(t, resp.Header.Get("Content-Security-Policy"), "unsafe-eval")
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
}

// ownScript is the console's script tag, the only script a page has.
const ownScript = `<script src="/console/static/console.js" defer></script>`

// withoutOwnScript is page without the console's own script tag.
func withoutOwnScript(page string) string { return strings.ReplaceAll(page, ownScript, "") }

// matches returns the first group of every match of re in s.
func matches(s, re string) []string {
	var out []string
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// replyWithRun records a user message and the run that answered it with
// reply (Markdown) and rec, as a turn does, and returns the run's id.
func (b *testBundle) replyWithRun(t *testing.T, text, reply string, rec core.RunRecord) int64 {
	t.Helper()
	ctx := context.Background()
	at := t0.Add(time.Minute)
	_, err := b.st.RecordInbound(ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "777",
		ChannelUserID: "777", Text: text, Now: at, PlanRun: true})
	require.NoError(t, err)
	run, err := b.st.ClaimRun(ctx, "test-owner", at)
	require.NoError(t, err)
	require.NotNil(t, run, "the user message planned a run")
	require.NoError(t, b.st.CompleteRun(ctx, run.ID, "test-owner", core.RunCompletion{
		Status: core.RunSucceeded, Record: rec, PromptTokens: 1200, CompletionTokens: 80, TotalTokens: 1280, Now: at.Add(time.Second),
		Messages: []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: reply}},
	}))
	return run.ID
}

func TestRepliesAreRenderedMarkdown(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	b.replyWithRun(t, "plan?", "**Step one**: run `go test`.\n\n- read the *log*\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))",
		core.RunRecord{})

	body, _ := b.page(t, b.convPath(), b.login(t))

	require.Contains(t, body, "<strong>Step one</strong>", "the model's Markdown is shown formatted")
	require.Contains(t, body, "<code>go test</code>")
	require.Contains(t, body, "<li>read the <em>log</em></li>")
	require.NotContains(t, withoutOwnScript(body), "<script", "sanitised")
	require.NotContains(t, body, `href="javascript:`, "sanitised")
	// Text that is not the model's Markdown stays text, as written.
	require.Contains(t, body, `<pre class="content">Sorry, something went wrong.</pre>`)
	require.Regexp(t, `(?s)<div class="content rich"><p>I will, in an hour.</p>\s*</div>\s*</article>`, body,
		"a reply without a run: rendered, and no run record")
}

func TestRunRecordAndReasoningAreCollapsedUnderTheReply(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	runID := b.replyWithRun(t, "why?", "Because.", core.RunRecord{
		PromptID: "persona", PromptVersion: "3", Rounds: 2,
		ToolCalls: []core.ToolCallRecord{{ID: "call-1", Name: "retrieve_history"}},
		Notes:     []string{"stripped <WANT_MORE>"},
		Reasoning: "The user asks why; <b>keep it short</b>.",
	})

	body, _ := b.page(t, b.convPath(), b.login(t))

	record := regexp.MustCompile(fmt.Sprintf(`(?s)<details class="more reasoning" id="reasoning-%d">.*?<details class="more run" id="run-%d"><summary>Run record</summary>.*?</details>`, runID, runID)).FindString(body)
	require.NotEmpty(t, record, "a collapsed run record under the reply")
	require.Regexp(t, `(?s)Because\..*<details class="more reasoning"`, body, "under the reply it belongs to")
	for _, want := range []string{
		fmt.Sprintf("%d · user_turn · succeeded", runID),
		"<code>persona</code> version <code>3</code>",
		"1200 prompt + 80 output = 1280",
		"2 · 1 tool call(s)",
		"Tool call: <code>retrieve_history</code>",
		"<li>stripped &lt;WANT_MORE&gt;</li>",
		`<summary>Reasoning</summary><pre class="content code">The user asks why; &lt;b&gt;keep it short&lt;/b&gt;.</pre></details>`,
	} {
		require.Contains(t, record, want)
	}
	require.NotContains(t, record, "<details open", "collapsed until clicked")
	require.Equal(t, 1, strings.Count(body, `<summary>Run record</summary>`), "only the reply written by a run has one")
}

func TestFilesAndTranscriptsAreShown(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	ctx := context.Background()
	in, err := b.st.RecordInbound(ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "777",
		ChannelUserID: "777", Text: "", Now: t0.Add(time.Minute), Metadata: map[string]any{"attachments": []core.Attachment{
			{Kind: core.AttachVoice, MIME: "audio/ogg", Size: 2048, Seconds: 3, Ref: "file-1"},
			{Kind: core.AttachSticker, Emoji: "😺", Ref: "file-2"},
		}}})
	require.NoError(t, err)
	m := in.Message
	m.Content, m.Metadata = "buy flour <tomorrow>", map[string]any{"spoken": true, "attachments": m.Metadata["attachments"]}
	require.NoError(t, b.st.SetMessageText(ctx, m))

	body, _ := b.page(t, b.convPath(), b.login(t))

	require.Contains(t, body, "buy flour &lt;tomorrow&gt;", "the transcript, as text")
	require.Contains(t, body, "voice note, transcribed")
	require.Contains(t, body, `<li><span class="file">voice (audio/ogg, 2 KB, 3 s)</span></li>`)
	require.Contains(t, body, `<li><span class="file">sticker 😺</span></li>`)
}
