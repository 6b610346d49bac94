package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
)

// TestConformance runs the adapter conformance suite with browsers as the
// fake platform. Not parallel: the suite's Stop case checks goroutines.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
		a := web.New()
		require.NoError(t, a.Provision(context.Background(), core.Env{BotName: "Subaru"}))
		require.NoError(t, a.Validate())
		mux := http.NewServeMux()
		a.Mount(mux)
		b := newBrowsers(t, httptest.NewServer(mux))
		return &adaptertest.Rig{
			Adapter: a,
			DM: func(t *testing.T, u adaptertest.User, text string) string {
				b.open(t, u.ID) // the page is open while its user writes
				b.post(t, u, text)
				return u.ID
			},
			ThreadOf: func(t *testing.T, u adaptertest.User) string {
				b.open(t, u.ID)
				return u.ID
			},
			Sent:        func(_ *testing.T, thread string) []adaptertest.Sent { return b.sent(thread) },
			TypingShown: func(_ *testing.T, thread string) int { return b.typing(thread) },
			Tap:         b.tap,
			Quiesce:     b.quiesce,
			FilesSent:   b.filesSent,
			// The page plays a voice note as it plays audio, with a player.
			VoiceAs: core.AttachAudio,
			// A page shows a reply's HTML whole, however long.
			WholeRichText: true,
			// Group, Channel, Own, Edit: a browser only ever writes in its own
			// one-to-one chat, and never edits, deletes or reacts. RateLimit*, Block, UnknownThread: the web chat
			// has no rate limits, no blocking, and a send to a client with no
			// page open succeeds (the page loads it from the history).
		}
	})
}

// browsers plays the users' chat pages: it posts their messages and keeps
// one open event stream per client, recording what the pages show.
type browsers struct {
	srv       *httptest.Server
	transport *http.Transport
	client    *http.Client
	ctx       context.Context
	cancel    context.CancelFunc
	readers   sync.WaitGroup

	mu    sync.Mutex
	pages map[string]*page
}

// page is what one client's open page has shown.
type page struct {
	sent   []adaptertest.Sent
	files  []shownFiles
	typing int
}

// shownFiles are the files under one message of a page, and the message's
// text above them.
type shownFiles struct {
	messageID string
	shown     *markuptest.Rendered
	files     []pageFile
}

// pageFile is a file of a message event, as the page reads it.
type pageFile struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	MIME string `json:"mime"`
	Size int    `json:"size"`
	URL  string `json:"url"`
}

func newBrowsers(t *testing.T, srv *httptest.Server) *browsers {
	transport := &http.Transport{}
	ctx, cancel := context.WithCancel(context.Background())
	b := &browsers{
		srv:       srv,
		transport: transport,
		client:    &http.Client{Transport: transport},
		ctx:       ctx,
		cancel:    cancel,
		pages:     map[string]*page{},
	}
	// Runs after the suite's Stop (cleanups run last-registered first).
	t.Cleanup(func() {
		cancel()
		b.readers.Wait()
		srv.Close()
		transport.CloseIdleConnections()
	})
	return b
}

// open opens clientID's page event stream unless it is open, and returns
// once the server says it is live, so nothing sent afterwards is missed.
func (b *browsers) open(t *testing.T, clientID string) {
	t.Helper()
	b.mu.Lock()
	_, ok := b.pages[clientID]
	b.mu.Unlock()
	if ok {
		return
	}
	req, err := http.NewRequestWithContext(b.ctx, http.MethodGet,
		b.srv.URL+"/web/events?client_id="+url.QueryEscape(clientID), nil)
	require.NoError(t, err)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("opening the event stream of %q: status %d", clientID, resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil || first != ": connected\n" {
		resp.Body.Close()
		t.Fatalf("event stream of %q: first line %q, %v; want \": connected\"", clientID, first, err)
	}
	p := &page{}
	b.mu.Lock()
	b.pages[clientID] = p
	b.mu.Unlock()
	b.readers.Add(1)
	go func() {
		defer b.readers.Done()
		defer resp.Body.Close()
		b.read(clientID, p, r)
	}()
}

// read records the events of one stream until it ends.
func (b *browsers) read(clientID string, p *page, r *bufio.Reader) {
	var name string
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return // the stream ended: Stop, or the rig's cleanup
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			b.record(clientID, p, name, strings.Join(data, "\n"))
			name, data = "", nil
		case strings.HasPrefix(line, ":"): // comment: connected, ping
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

// record applies one event to the page, as the chat page would show it.
func (b *browsers) record(clientID string, p *page, name, data string) {
	at := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch name {
	case "message":
		var m struct {
			ID    string     `json:"id"`
			Text  string     `json:"text"`
			HTML  string     `json:"html"`
			Files []pageFile `json:"files"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			// Shown as a message so the case that expects text fails on it.
			m.Text = "undecodable message event: " + err.Error()
		}
		shown := pageShows(m.Text, m.HTML)
		p.sent = append(p.sent, adaptertest.Sent{ChannelThreadID: clientID, Text: m.Text, Shown: shown,
			PlatformMessageID: m.ID, At: at})
		if len(m.Files) > 0 {
			p.files = append(p.files, shownFiles{messageID: m.ID, shown: shown, files: m.Files})
		}
	case "typing":
		p.typing++
	}
}

// pageShows is what the chat page shows of a message: its HTML, read as a
// browser would, when it has some; its text, as written, otherwise. HTML a
// browser would run or fetch from is shown as a failure, so every case
// that looks at what a user sees fails on it.
func pageShows(text, html string) *markuptest.Rendered {
	if html == "" {
		return &markuptest.Rendered{Text: text}
	}
	if unsafe := markuptest.UnsafeHTML(html); len(unsafe) > 0 {
		return &markuptest.Rendered{Text: "unsafe html: " + strings.Join(unsafe, "; ")}
	}
	r, err := markuptest.HTML(html)
	if err != nil {
		return &markuptest.Rendered{Text: "unreadable html: " + err.Error()}
	}
	return &r
}

// post sends text as user from their page.
func (b *browsers) post(t *testing.T, u adaptertest.User, text string) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"client_id": u.ID, "name": u.Name, "text": text})
	require.NoError(t, err)
	resp, err := b.client.Post(b.srv.URL+"/web/messages", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "POST /web/messages: %s", reply)
}

// tap taps the button data of message id as user from their page; the
// answer to the POST is the acknowledgement.
func (b *browsers) tap(t *testing.T, u adaptertest.User, id, data string) func() bool {
	t.Helper()
	body, err := json.Marshal(map[string]string{"client_id": u.ID, "name": u.Name, "message_id": id, "data": data})
	require.NoError(t, err)
	resp, err := b.client.Post(b.srv.URL+"/web/taps", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST /web/taps: %s", reply)
	return func() bool { return true } // the 200 is the acknowledgement
}

func (b *browsers) sent(thread string) []adaptertest.Sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.pages[thread]; ok {
		return append([]adaptertest.Sent(nil), p.sent...)
	}
	return nil
}

// filesSent is every file the page of thread has shown, as it shows it
// (page.html's renderFiles), with the bytes its link loads; the text of
// their message is the first one's caption.
func (b *browsers) filesSent(t *testing.T, thread string) []adaptertest.SentFile {
	t.Helper()
	b.mu.Lock()
	var shown []shownFiles
	if p, ok := b.pages[thread]; ok {
		shown = append(shown, p.files...)
	}
	b.mu.Unlock()
	var out []adaptertest.SentFile
	for _, m := range shown {
		for i, f := range m.files {
			sf := adaptertest.SentFile{Kind: shownAs(f), Name: f.Name, MIME: f.MIME, Data: b.load(t, f),
				PlatformMessageID: m.messageID}
			if i == 0 && m.shown.Text != "" {
				sf.Caption, sf.CaptionShown = m.shown.Text, m.shown
			}
			out = append(out, sf)
		}
	}
	return out
}

// shownAs is how the page shows f: a picture inline, audio with a player
// (a voice note too), anything else as a download link.
func shownAs(f pageFile) core.AttachmentKind {
	switch {
	case f.Kind == "image" && (f.MIME == "image/png" || f.MIME == "image/jpeg" || f.MIME == "image/gif" || f.MIME == "image/webp"):
		return core.AttachImage
	case (f.Kind == "voice" || f.Kind == "audio") && strings.HasPrefix(f.MIME, "audio/"):
		return core.AttachAudio
	}
	return core.AttachDocument
}

// load fetches f's link as the page does, from the page's origin; the
// browser saves it under the name the page shows.
func (b *browsers) load(t *testing.T, f pageFile) []byte {
	t.Helper()
	resp, err := b.client.Get(b.srv.URL + f.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", f.URL, data)
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	require.NoError(t, err, "GET %s: Content-Disposition", f.URL)
	require.Equal(t, f.Name, params["filename"], "GET %s: the file's name", f.URL)
	return data
}

func (b *browsers) typing(thread string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.pages[thread]; ok {
		return p.typing
	}
	return 0
}

// quiesce requires that the adapter's Stop ended every event stream, then
// drops the idle keep-alive connections, which belong to the test's HTTP
// client and server rather than to the adapter.
func (b *browsers) quiesce(t *testing.T) {
	t.Helper()
	ended := make(chan struct{})
	go func() {
		b.readers.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("an event stream is still open after Stop")
	}
	b.transport.CloseIdleConnections()
	b.srv.CloseClientConnections()
}
