package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// fileKeys are the fields a client might put a file in. The web chat
// takes files only as uploads (POST /web/uploads) named by id in
// "files", so none of them may turn what it carries into an attachment.
var fileKeys = []string{"attachments", "files", "file", "image", "photo", "voice", "sticker", "data", "url"}

// webClientID is the client id the web chat documents.
var webClientID = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// FuzzPostFiles checks that the web chat never turns what a post carries
// beside its text into an attachment: a post of a client id and text with
// one more field named like a file (value, raw JSON, as it comes) is taken
// exactly when the body is JSON, the client id valid, the text not blank
// and, for "files", the value null or an empty list (no upload is made
// here, so any id names no file of the client's); it is then a DM of the
// client with the text trimmed and no attachments. Anything else is a 4xx
// with nothing handed to the core, never a 5xx.
func FuzzPostFiles(f *testing.F) {
	for _, v := range []string{
		`[{"kind":"image","ref":"https://example.com/cat.png","size":-1}]`,
		`{"name":"a.txt","data":"aGVsbG8="}`,
		`"data:image/png;base64,iVBORw0KGgo="`,
		`null`, `[]`, `-1e999`, `[[[[[[[[[[]]]]]]]]]]`, `{"a":`, `"\u0000"`,
	} {
		f.Add(uint8(0), []byte(v), "abcdefgh", "look at this")
	}
	f.Add(uint8(4), []byte(`{}`), "abc", "hi")
	f.Add(uint8(1), []byte(`1`), "abcdefgh", " \n")
	f.Add(uint8(1), []byte(`""`), "00000000", "0")                                    // "files" not a list: refused
	f.Add(uint8(1), []byte(`["0123456789abcdef0123456789abcdef"]`), "00000000", "hi") // no such upload

	a := web.New()
	a.Limits = web.Limits{} // every input is judged on its body alone
	a.Uploads.Dir = f.TempDir()
	if err := a.Provision(context.Background(), core.Env{Clock: coretest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}); err != nil {
		f.Fatal(err)
	}
	box := adaptertest.NewRecorder()
	if err := a.Start(context.Background(), box); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = a.Stop(context.Background()) })
	mux := http.NewServeMux()
	a.Mount(mux)

	f.Fuzz(func(t *testing.T, key uint8, value []byte, clientID, text string) {
		if len(value) > 4<<10 {
			value = value[:4<<10] // well under the body limit: a 413 is not what is tested
		}
		head, err := json.Marshal(map[string]string{"client_id": clientID, "text": text})
		if err != nil {
			t.Fatal(err)
		}
		field := fileKeys[int(key)%len(fileKeys)]
		body := append(head[:len(head)-1:len(head)-1], `,"`+field+`":`...)
		body = append(append(body, value...), '}')

		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/web/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(rec, req)
		got := box.Take()

		var sent struct{ Text string }
		_ = json.Unmarshal(head, &sent) // the text as JSON carries it
		want := json.Valid(body) && webClientID.MatchString(clientID) && strings.TrimSpace(sent.Text) != ""
		if field == "files" {
			var ids []string
			want = want && json.Unmarshal(value, &ids) == nil && len(ids) == 0
		}
		switch {
		case want && (rec.Code != http.StatusAccepted || len(got) != 1):
			t.Fatalf("%s: %d %s, and the core got %+v; want it taken", body, rec.Code, rec.Body, got)
		case !want && (rec.Code < 400 || rec.Code >= 500 || len(got) != 0):
			t.Fatalf("%s: %d %s, and the core got %+v; want a 4xx", body, rec.Code, rec.Body, got)
		case !want:
			return
		}
		msg := got[0]
		if err := adaptertest.CheckInbound(msg, web.Platform, 0, body); err != nil {
			t.Fatalf("%s became %+v: %v", body, msg, err)
		}
		if msg.ChannelThreadID != clientID || msg.Text != strings.TrimSpace(sent.Text) {
			t.Fatalf("%s became %+v", body, msg)
		}
	})
}
