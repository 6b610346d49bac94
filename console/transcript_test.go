package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestSearchConversationsByNameUserAndText(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	seed(b)
	c := b.login(t)

	body, _ := b.page(t, "/console/conversations", c)
	require.Contains(t, body, `<label for="q">Search by name, user id or message text`)
	require.Contains(t, body, `aria-current="page">Conversations<`)
	require.Regexp(t, `(?s)Ada</a>.*Bob</a>`, section(t, body, `<table id="conversations"`, `</table>`), "most recently active first")

	for q, want := range map[string][]string{
		"bob":   {"Bob"},
		"4242":  {"Ada"},
		"new?":  {"Bob"},
		"there": {"Ada"},
	} {
		body, _ := b.page(t, "/console/conversations?q="+strings.ReplaceAll(q, "?", "%3F"), c)
		list := section(t, body, `<table id="conversations"`, `</table>`)
		for _, name := range []string{"Ada", "Bob"} {
			if name == want[0] {
				require.Contains(t, list, name+"</a>", "q=%s", q)
			} else {
				require.NotContains(t, list, name+"</a>", "q=%s", q)
			}
		}
		require.Contains(t, body, `id="q" value="`+q+`"`, "the search stays in its field")
	}
	require.Contains(t, b.fs.searches, "4242")

	body, _ = b.page(t, "/console/conversations?q=nobody", c)
	require.Contains(t, body, `id="no-conversations">No conversation matches “nobody”.`)
	require.Contains(t, body, `<a href="/console/conversations" id="clear-search">Show all</a>`)

	body, _ = b.page(t, "/console/conversations?q=%3Cscript%3E", c)
	require.NotContains(t, withoutOwnScript(body), "<script>")
	resp, _ := b.do(t, http.MethodGet, "/console/conversations?q="+strings.Repeat("x", 201), nil, c)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestTranscriptShowsToolCallsTemplatesImagesAndTokens(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	b.images["photo-1"] = pngBytes
	b.images["photo-svg"] = []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	f := b.fs
	f.addMessage(core.Message{ConversationID: s.ada.ID, Role: core.RoleUser, Source: core.SourceUser, Content: "look at my bread",
		CreatedAt: t0.Add(-8 * time.Minute), Metadata: map[string]any{"attachments": []core.Attachment{
			{Kind: core.AttachImage, MIME: "image/jpeg", Size: 20480, Width: 640, Height: 480, Ref: "photo-1"},
			{Kind: core.AttachImage, Ref: "photo-svg"},
			{Kind: core.AttachDocument, Name: "recipe.pdf", MIME: "application/pdf", Ref: "doc-1"},
		}}})
	runID := int64(42)
	started, finished := t0.Add(-7*time.Minute), t0.Add(-7*time.Minute+2300*time.Millisecond)
	reply := f.addMessage(core.Message{ConversationID: s.ada.ID, Role: core.RoleAssistant, Source: core.SourceReply, RunID: &runID,
		Content: "Lovely crumb! I will remind you to **feed the starter**.", CreatedAt: finished})
	f.runs[runID] = core.Run{ID: runID, ConversationID: s.ada.ID, Kind: core.RunUserTurn, Status: core.RunSucceeded,
		Model: "gpt-4o-mini", PromptTokens: 1500, CompletionTokens: 120, TotalTokens: 1620, StartedAt: &started, FinishedAt: &finished,
		Record: core.RunRecord{PromptID: "persona", PromptVersion: "7", Rounds: 2, Reasoning: "They want praise and a reminder.",
			ToolCalls: []core.ToolCallRecord{{ID: "call-9", Name: "schedule_private_message",
				Arguments: `{"send_at":"2030-01-15T18:00:00Z","message_text":"Feed the starter <now>"}`, Result: `{"task_id":12,"status":"pending"}`}},
			Template: &core.TemplateRecord{ID: "checkin", Version: 3, SHA256: "abc123", Rendered: "Check in with Ada."}}}
	f.tokens[s.ada.ID] = [2]int64{1500, 120}

	c := b.login(t)
	body, _ := b.page(t, fmt.Sprintf("/console/conversations/%d", s.ada.ID), c)
	require.Contains(t, body, `<span id="conv-tokens">1,500 prompt + 120 completion</span>`, "the conversation's token usage")

	msg := section(t, body, fmt.Sprintf(`<article class="msg msg-role-assistant" id="msg-%d"`, reply.Seq), `</article>`)
	require.Contains(t, msg, "<strong>feed the starter</strong>", "the reply's Markdown, rendered")
	tool := section(t, msg, `<details class="more tool" id="tool-42-0">`, `</details>`)
	require.Contains(t, tool, "Tool call: <code>schedule_private_message</code>")
	require.Contains(t, tool, "&#34;message_text&#34;: &#34;Feed the starter &lt;now&gt;&#34;", "arguments, indented, as text")
	require.Contains(t, tool, "&#34;task_id&#34;: 12", "the result")
	require.Contains(t, msg, `<details class="more reasoning" id="reasoning-42"><summary>Reasoning</summary>`)
	require.Contains(t, msg, `<summary>Prompt template <code>checkin</code> version 3</summary>`)
	run := section(t, msg, `<details class="more run" id="run-42">`, `</details>`)
	for _, want := range []string{"<code>gpt-4o-mini</code>", "<code>persona</code> version <code>7</code>",
		"<code>checkin</code> version 3", "1500 prompt + 120 output = 1620", "2.3s", "2 · 1 tool call(s)"} {
		require.Contains(t, run, want)
	}
	require.NotContains(t, msg, "<details open", "each part collapsed until clicked")

	files := section(t, body, `<ul class="files">`, `</ul>`)
	thumb := fmt.Sprintf("/console/conversations/%d/files/%d/0", s.ada.ID, reply.Seq-1)
	require.Contains(t, files, fmt.Sprintf(`<img class="thumb" src="%s" alt="image (image/jpeg, 20 KB)"`, thumb))
	require.Contains(t, files, `<li><span class="file">document (recipe.pdf, application/pdf)</span></li>`, "a document is described, not shown")

	resp, img := b.do(t, http.MethodGet, thumb, nil, c)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"), "by its bytes")
	require.Equal(t, string(pngBytes), img)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "sandbox")

	resp, _ = b.do(t, http.MethodGet, strings.TrimSuffix(thumb, "0")+"1", nil, c)
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "never an SVG, whatever it says it is")
	resp, _ = b.do(t, http.MethodGet, strings.TrimSuffix(thumb, "0")+"2", nil, c)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "only images")
	resp, _ = b.do(t, http.MethodGet, strings.TrimSuffix(thumb, "0")+"3", nil, c)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = b.do(t, http.MethodGet, thumb, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "files need a session too")
}

func TestTranscriptIsLive(t *testing.T) {
	t.Parallel()
	b := setupFake(t, nil)
	s := seed(b)
	c := b.login(t)
	body, _ := b.page(t, fmt.Sprintf("/console/conversations/%d", s.ada.ID), c)
	es := b.openStream(t, liveURL(t, body), c, "")
	b.clock.WaitForTimer(t, t0.Add(liveEvery), 5*time.Second)
	es.none(t)

	b.fs.addMessage(core.Message{ConversationID: s.ada.ID, Role: core.RoleUser, Source: core.SourceUser,
		Content: "is it ready yet?", CreatedAt: t0})
	b.clock.Advance(liveEvery)
	ev := es.next(t)
	require.Equal(t, "update", ev.name)
	require.Contains(t, ev.data, "is it ready yet?")
	require.Contains(t, ev.data, `"transcript":`)
}

// pngBytes is a 1×1 PNG.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
