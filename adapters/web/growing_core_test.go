package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/store/storetest"
)

// TestStreamedReplyThroughTheCore runs a real turn with streaming on, a
// browser's event stream open: the page gets the reply growing as
// partial events, then one message with the same id, which is the id the
// core stored; the history has the finished reply once, and no partial.
// Not parallel: goleak checks the dispatcher's goroutines at the end.
func TestStreamedReplyThroughTheCore(t *testing.T) {
	ctx := context.Background()
	st := storetest.OpenSQLite(t)
	require.NoError(t, st.Migrate(ctx))
	model := llmtest.NewServer(t)
	const answer = "Good morning! **The tests ran green** overnight, and the build is ready."
	model.Enqueue(llmtest.Text(answer))
	client, err := llm.New(llm.Config{BaseURL: model.URL(), APIKey: "sk-test", Model: "test-model", Timeout: 10 * time.Second})
	require.NoError(t, err)

	a := web.New()
	require.NoError(t, a.Provision(ctx, core.Env{BotName: "Subaru"}))
	require.NoError(t, a.Validate())
	mux := http.NewServeMux()
	a.Mount(mux)
	srv := httptest.NewServer(mux)
	page := &seen{}
	slow := adaptertest.PacedModel{LLM: client, Shown: page.showsPartial, T: t}
	// The visible text is the raw text here: no reasoning, Markdown that
	// is whole at each step.
	d, err := engine.New(engine.Config{Store: st, LLM: slow, Adapters: []core.Adapter{a},
		Debounce: time.Millisecond, PollInterval: 50 * time.Millisecond,
		Streaming: outbox.Streaming{Enabled: true, Interval: time.Millisecond,
			Visible: func(raw string, _ core.TextFormat) string { return raw }}})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx, d))
	require.NoError(t, d.Start(ctx))
	transport := &http.Transport{}
	b := &testBundle{adapter: a, server: srv, client: &http.Client{Transport: transport}}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, d.Stop(stop))
		require.NoError(t, a.Stop(stop))
		srv.Close()
		transport.CloseIdleConnections()
	})
	s := b.openStream(t, "client-0001")
	go page.read(s)

	require.Equal(t, http.StatusAccepted, b.postJSON(t, map[string]string{"client_id": "client-0001", "text": "morning?"}).Status)

	var evs []sseEvent
	require.Eventually(t, func() bool {
		evs = page.events()
		return len(evs) > 0 && evs[len(evs)-1].Name == "message"
	}, 10*time.Second, 5*time.Millisecond, "no finished reply")
	n := len(answer)
	var id string
	for i, end := range []int{n / 3, 2 * n / 3, n} {
		require.Equal(t, "partial", evs[i].Name)
		m := decodeWire(t, evs[i].Data)
		require.Equal(t, answer[:end], m.Text)
		if id == "" {
			id = m.ID
		}
		require.Equal(t, id, m.ID)
	}
	require.Len(t, evs, 4, "three partials, then the message: %v", evs)
	final := decodeWire(t, evs[3].Data)
	require.Equal(t, id, final.ID, "the finished message takes the partials' place")
	require.Equal(t, answer, final.Text)
	require.Contains(t, final.HTML, "<strong>The tests ran green</strong>")

	// The core records the platform id once the send returns.
	var hist struct{ Messages []wireMessage }
	require.Eventually(t, func() bool {
		resp, err := b.client.Get(srv.URL + "/web/history?client_id=client-0001")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&hist) == nil &&
			len(hist.Messages) == 2 && hist.Messages[1].ID == id
	}, 10*time.Second, 5*time.Millisecond, "stored with the id the page knows: %+v", hist.Messages)
	require.Equal(t, answer, hist.Messages[1].Text, "the question and the reply, once")
}

func decodeWire(t *testing.T, data string) wireMessage {
	t.Helper()
	var m wireMessage
	require.NoError(t, json.Unmarshal([]byte(data), &m))
	return m
}

// seen is what one page received, read in the background.
type seen struct {
	mu  sync.Mutex
	evs []sseEvent
}

func (p *seen) read(s *stream) {
	for ev := range s.events {
		if ev.Name == ":" {
			continue
		}
		p.mu.Lock()
		p.evs = append(p.evs, ev)
		p.mu.Unlock()
	}
}

func (p *seen) events() []sseEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sseEvent(nil), p.evs...)
}

// showsPartial reports whether the page's last partial is text.
func (p *seen) showsPartial(text string) bool {
	evs := p.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Name == "partial" {
			var m wireMessage
			return json.Unmarshal([]byte(evs[i].Data), &m) == nil && m.Text == strings.TrimSpace(text)
		}
	}
	return false
}
