package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// inbox is a core that keeps the messages handed to it since the last take.
type inbox struct {
	core.InboundOnly // takes messages; no history, model health or commands
	mu               sync.Mutex
	got              []core.InboundMessage
}

func (b *inbox) HandleInbound(_ context.Context, msg core.InboundMessage) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, msg)
	return nil
}

func (b *inbox) take() []core.InboundMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	got := b.got
	b.got = nil
	return got
}

// clientIDRE is what the adapter documents a client id to be.
var clientIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// FuzzPostMessage checks POST /web/messages, the web adapter's inbound
// decoding, twice per input: with body as it comes, and with a well-formed
// body made of clientID, name and text. Whatever the body, the answer is
// 202 with exactly one message handed to the core, or a 4xx with none,
// never a 5xx; a message handed on is a DM whose thread and user are the
// body's client_id (8 to 64 of A-Z a-z 0-9 _ -) and whose text is the
// body's text trimmed, never empty, with a display name of one line of at
// most 64 characters. A well-formed body is taken exactly when its client
// id is valid and its text is not blank.
func FuzzPostMessage(f *testing.F) {
	for _, s := range []struct{ body, clientID, name, text string }{
		{`{"client_id":"abcdefgh","name":"Ada","text":"hi"}`, "abcdefgh", "Ada", "hi"},
		{`{"client_id":"abcdefgh","text":"  \n "}`, "abcdefgh", "", " \t"},
		{`{"client_id":"abc","text":"hi"}`, "abc", "Ada", "hi"},
		{`{"client_id":"../../etc/passwd","text":"hi"}`, "a b c d e f g h", "x", "hi"},
		{`{"CLIENT_ID":"abcdefgh","Text":"case"}`, strings.Repeat("a", 64), strings.Repeat("é", 70), "ok"},
		{`{"client_id":"abcdefgh","text":"a"} trailing`, strings.Repeat("a", 65), "a\nb\tc", "x"},
		{`{"client_id":"abcdefgh","text":"a","client_id":"zzzzzzzz"}`, "ABC_def-12", "  ", "\xff\xfe"},
		{`{"client_id":12345678,"text":"hi"}`, "abcdefgh", "\u2028", "\u00a0"},
		{`{"client_id":"abcdefgh","text":null}`, "abcdefgh", "", "\x00"},
		{`[]`, "abcdefgh", "", "hi 👋"},
		{`not json`, "", "", ""},
		{``, "abcdefgh", "Grace", "<script>alert(1)</script>"},
	} {
		f.Add([]byte(s.body), s.clientID, s.name, s.text)
	}
	a := web.New()
	// The limits have tests of their own; here every input is judged on
	// its body alone, however many the fuzzer makes.
	a.Limits = web.Limits{}
	if err := a.Provision(context.Background(), core.Env{Clock: coretest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}); err != nil {
		f.Fatal(err)
	}
	box := &inbox{}
	if err := a.Start(context.Background(), box); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = a.Stop(context.Background()) })
	mux := http.NewServeMux()
	a.Mount(mux)

	f.Fuzz(func(t *testing.T, body []byte, clientID, name, text string) {
		checkPost(t, mux, box, body)

		wellFormed, err := json.Marshal(map[string]string{"client_id": clientID, "name": name, "text": text})
		if err != nil {
			t.Fatal(err)
		}
		got, status := checkPost(t, mux, box, wellFormed)
		// JSON carries text as valid UTF-8; what the body says is its
		// decoding.
		var sent struct{ Text string }
		if err := json.Unmarshal(wellFormed, &sent); err != nil {
			t.Fatal(err)
		}
		want := clientIDRE.MatchString(clientID) && strings.TrimSpace(sent.Text) != ""
		if want != (got != nil) {
			t.Fatalf("client %q, text %q: got %d, %+v", clientID, text, status, got)
		}
		if got != nil && (got.ChannelThreadID != clientID || got.Text != strings.TrimSpace(sent.Text)) {
			t.Fatalf("client %q, text %q became %+v", clientID, text, got)
		}
	})
}

// checkPost posts body and checks what holds of any answer; it returns
// the message the core got, if any, and the status.
func checkPost(t *testing.T, h http.Handler, box *inbox, body []byte) (*core.InboundMessage, int) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/web/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json") // as the chat page sends it
	h.ServeHTTP(rec, req)
	got := box.take()
	var answer map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("answer %d %q is not a JSON object: %v", rec.Code, rec.Body, err)
	}
	switch {
	case rec.Code == http.StatusAccepted:
		if len(got) != 1 || answer["id"] == "" || answer["id"] != got[0].PlatformMessageID {
			t.Fatalf("202 %v for %q, with %d messages handed on: %+v", answer, body, len(got), got)
		}
	case rec.Code >= 400 && rec.Code < 500:
		if len(got) != 0 || answer["error"] == "" {
			t.Fatalf("%d %v for %q, yet the core got %+v", rec.Code, answer, body, got)
		}
		return nil, rec.Code
	default:
		t.Fatalf("%d %q for %q: want 202 or a 4xx", rec.Code, rec.Body, body)
	}
	m := got[0]
	var in struct {
		ClientID string `json:"client_id"`
		Text     string `json:"text"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&in); err != nil {
		t.Fatalf("%q was taken, but it does not decode: %v", body, err)
	}
	switch {
	case m.Platform != web.Platform || !m.Direct:
		t.Fatalf("%q became %+v: not a web DM", body, m)
	case !clientIDRE.MatchString(m.ChannelThreadID) || m.ChannelThreadID != in.ClientID || m.ChannelUserID != in.ClientID:
		t.Fatalf("%q became thread %q, user %q", body, m.ChannelThreadID, m.ChannelUserID)
	case m.Text == "" || m.Text != strings.TrimSpace(in.Text):
		t.Fatalf("%q became text %q", body, m.Text)
	case m.DisplayName == "" || strings.ContainsAny(m.DisplayName, "\r\n") || utf8.RuneCountInString(m.DisplayName) > 64:
		t.Fatalf("%q became display name %q", body, m.DisplayName)
	}
	return &m, rec.Code
}
