package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// sendRich sends Markdown to thread as the model's reply.
func (b *testBundle) sendRich(t *testing.T, thread, md string) []string {
	t.Helper()
	res, err := b.adapter.Send(context.Background(), core.OutboundMessage{ConversationID: 1, ChannelThreadID: thread, Text: md, Format: core.FormatRichText})
	require.NoError(t, err)
	return res.PlatformMessageIDs
}

func TestRichTextArrivesAsSanitisedHTML(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")
	const md = "**Done!** Run `make test`:\n\n- one\n- two\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>"

	ids := b.sendRich(t, "client-0001", md)

	require.Len(t, ids, 1)
	m := s.nextMessage(t)
	require.Equal(t, ids[0], m.ID)
	require.Equal(t, md, m.Text, "text is the message as written")
	require.Equal(t, markup.HTML(md), m.HTML, "html is the sanitised rendering")
	require.Empty(t, markuptest.UnsafeHTML(m.HTML), "nothing in it runs script or loads anything")
	shown, err := markuptest.HTML(m.HTML)
	require.NoError(t, err)
	require.Equal(t, []string{"Done!"}, shown.Styled(markuptest.Bold))
	require.Equal(t, []string{"make test"}, shown.Styled(markuptest.Code))
	require.Contains(t, shown.Text, "one\ntwo", "the list's items on lines of their own")
	require.Contains(t, shown.Text, "<script>alert(1)</script>", "raw HTML shows as the text it is")
	require.NotContains(t, shown.Text, "**")
}

func TestTextHasNoHTML(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")

	b.send(t, "client-0001", "**not bold**, as written")

	m := s.nextMessage(t)
	require.Equal(t, "**not bold**, as written", m.Text)
	require.Empty(t, m.HTML, "text that is not the model's is shown as text")
}

func TestLongRichTextIsOneMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")
	var md strings.Builder
	for i := 0; utf8.RuneCountInString(md.String()) < 40_000; i++ {
		md.WriteString("**Paragraph** with ünïcödé and 😀, *number* ")
		md.WriteString(strings.Repeat("x", i%13))
		md.WriteString("\n\n")
	}

	ids := b.sendRich(t, "client-0001", md.String())

	require.Len(t, ids, 1, "a browser needs no split: the formatting stays whole")
	m := s.nextMessage(t)
	require.Equal(t, md.String(), m.Text)
	require.Equal(t, markup.HTML(md.String()), m.HTML)
}

func TestBlankRichTextIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: " \n ", Format: core.FormatRichText})

	require.True(t, core.IsPermanent(err), "got %v", err)
}

func TestHistoryHasHTMLForTheModelsMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)
	b.core.history = []core.Message{
		{ID: 1, Seq: 1, Role: core.RoleUser, Source: core.SourceUser, Content: "**my** text", CreatedAt: at},
		{ID: 2, Seq: 2, Role: core.RoleAssistant, Source: core.SourceReply, Content: "**Hi** there", CreatedAt: at},
		{ID: 3, Seq: 3, Role: core.RoleAssistant, Source: core.SourceSystem, Content: "Sorry, **something** broke.",
			Metadata: map[string]any{"failure_notice": true}, CreatedAt: at},
		{ID: 4, Seq: 4, Role: core.RoleAssistant, Source: core.SourceScheduledSend, Content: "Check the _bread_",
			Metadata: map[string]any{"format": string(core.FormatRichText)}, CreatedAt: at},
		{ID: 5, Seq: 5, Role: core.RoleAssistant, Source: core.SourceAPI, Content: "API *text*", CreatedAt: at},
	}

	status, _, body := b.get(t, "/web/history?client_id=client-0001")

	require.Equal(t, http.StatusOK, status)
	var got struct{ Messages []wireMessage }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Messages, 5)
	html := map[string]string{}
	for _, m := range got.Messages {
		html[m.ID] = m.HTML
	}
	require.Equal(t, map[string]string{
		"m-1": "",
		"m-2": markup.HTML("**Hi** there"),
		"m-3": "",
		"m-4": markup.HTML("Check the _bread_"),
		"m-5": "",
	}, html, "html only where the message is Markdown (core.FormatOf)")
	shown, err := markuptest.HTML(html["m-2"])
	require.NoError(t, err)
	require.Equal(t, "Hi there", shown.Text)
	require.Equal(t, []string{"Hi"}, shown.Styled(markuptest.Bold))
	require.Equal(t, "**Hi** there", got.Messages[1].Text, "text stays as written")
}

func TestStatusReportsTheModelsHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	since := time.Date(2025, 3, 14, 9, 0, 0, 0, time.FixedZone("CET", 3600))

	for _, tc := range []struct {
		health llm.Health
		want   string
	}{
		{llm.Health{State: llm.HealthUnknown}, `{"model": {"state": "unknown"}}`},
		{llm.Health{}, `{"model": {"state": "unknown"}}`},
		{llm.Health{State: llm.HealthOK, Since: since}, `{"model": {"state": "ok", "since": "2025-03-14T08:00:00Z"}}`},
		{llm.Health{State: llm.HealthAuth, Err: "401 Incorrect API key provided; the key in llm.api_key was refused: check it", Since: since},
			`{"model": {"state": "auth", "since": "2025-03-14T08:00:00Z"}}`},
		{llm.Health{State: llm.HealthRateLimited, Err: "429 slow down", Since: since},
			`{"model": {"state": "rate_limited", "since": "2025-03-14T08:00:00Z"}}`},
		{llm.Health{State: llm.HealthUnreachable, Err: "dial tcp 10.0.0.7:443: connection refused", Since: since},
			`{"model": {"state": "unreachable", "since": "2025-03-14T08:00:00Z"}}`},
	} {
		b.core.mu.Lock()
		b.core.health = tc.health
		b.core.mu.Unlock()

		// A visitor's page, through a proxy: the state only.
		req, err := http.NewRequest(http.MethodGet, b.server.URL+"/web/status", nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", "203.0.113.7")
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		body := string(raw)

		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		require.JSONEq(t, tc.want, body, "state %q", tc.health.State)
		require.NotContains(t, body, "Incorrect API key", "the page is public: no error text")

		// The owner's page, opened on the bot's machine: the error too,
		// while the model fails.
		_, _, local := b.get(t, "/web/status")
		var got struct{ Model struct{ Detail string } }
		require.NoError(t, json.Unmarshal([]byte(local), &got))
		if tc.health.State == llm.HealthOK || tc.health.State == llm.HealthUnknown || tc.health.State == "" {
			require.Empty(t, got.Model.Detail)
		} else {
			require.Equal(t, tc.health.Err, got.Model.Detail)
		}
	}
}

func TestStatusWithoutAReporterIsUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{handler: func(f *fakeCore) core.Host { return core.InboundOnly{InboundHandler: f} }})

	status, _, body := b.get(t, "/web/status")

	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"model": {"state": "unknown"}}`, body)
}

func TestChatPageShowsHTMLAndTheBanner(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, hdr, body := b.get(t, "/")

	require.Equal(t, "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "+
		"connect-src 'self'; img-src 'self' data:; media-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		hdr.Get("Content-Security-Policy"), "the policy stays as strict")
	for _, want := range []string{`id="banner" role="status" hidden`, "/web/status", "innerHTML = m.html", "setInterval(checkModel, 30000)",
		".msg.rich { white-space: normal"} {
		require.Contains(t, body, want)
	}
}
