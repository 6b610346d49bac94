package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/slack/eventset"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// wireFiles is the part of an event_callback the oracle reads of the
// files its event carries.
type wireFiles struct {
	Event *struct {
		Files []struct {
			URLPrivate         string `json:"url_private"`
			URLPrivateDownload string `json:"url_private_download"`
		} `json:"files"`
	} `json:"event"`
}

// FuzzEventFiles checks the Slack adapter's inbound decoding of DMs with
// files, through its Events API endpoint (Socket Mode hands the same
// payloads to the same decoding). On body as it comes, signed: no panic,
// never a 5xx, at most one message, and a message that reaches the core is
// a DM with a thread, no more attachments than the event has files, each
// well formed with the file's url_private_download or url_private as its
// Ref, and no token or signing secret in it. On a DM made of the other
// arguments, carrying n files (type, per-file subtype, mode, external
// flag, size, private URLs, dimensions, length), as a plain message or a
// file_share: a file is kept exactly when it has a private URL and is not
// external, deleted (tombstone) or hidden by the free plan's limit; the
// message is taken unless it had files, kept none and has no text; each
// kept file has its URL, name, type and the kind its type says (a voice
// note for a clip recorded in Slack), with no negative size, length or
// dimension.
func FuzzEventFiles(f *testing.F) {
	const head = `{"type":"event_callback","event_id":"EvF1","event":{"type":"message","channel":"D0ADA00001","user":"U0ADA00001","ts":"1700000000.000100","channel_type":"im",`
	for _, body := range []string{
		head + `"subtype":"file_share","text":"","files":[{"id":"F1","name":"cat.png","mimetype":"image/png","filetype":"png","mode":"hosted","size":51234,"url_private":"https://files.slack.com/files-pri/T1-F1/cat.png","url_private_download":"https://files.slack.com/files-pri/T1-F1/download/cat.png","original_w":640,"original_h":480}]}}`,
		head + `"text":"listen","files":[{"id":"F2","name":"audio_message.webm","mimetype":"audio/webm","subtype":"slack_audio","mode":"hosted","size":9000,"url_private":"https://files.slack.com/files-pri/T1-F2/audio_message.webm","duration_ms":3400}]}}`,
		head + `"subtype":"file_share","text":"","files":[{"id":"F3","mode":"tombstone"},{"id":"F4","mode":"hidden_by_limit"},{"id":"F5","is_external":true,"url_private":"https://docs.google.com/x"}]}}`,
		head + `"text":"","files":[{"id":"F6","name":"v.mp4","mimetype":"video/mp4","size":-1,"original_w":-2,"original_h":-3,"duration_ms":-1500,"url_private":"https://files.slack.com/v.mp4"}]}}`,
		head + `"text":"","files":[{"id":"F7","url_private":"https://files.slack.com/x","duration_ms":9223372036854775807}]}}`,
		head + `"text":"","files":"nope"}}`,
		head + `"text":"","files":[null,{}]}}`,
		head + `"subtype":"file_share","text":"hi"}}`,
	} {
		f.Add([]byte(body), uint8(1), "image/png", "", "hosted", false, int64(51234),
			"https://files.slack.com/files-pri/T1-F1/cat.png", "", 640, 480, 0, false, "")
	}
	f.Add([]byte(`{}`), uint8(2), "audio/mp4", wire.VoiceClipSubtype, "hosted", false, int64(-1), "", "https://files.slack.com/d", -1, -1, -2500, true, "")
	f.Add([]byte(`{}`), uint8(3), "", "", "tombstone", false, int64(0), "https://files.slack.com/x", "", 0, 0, 0, true, " ")
	f.Add([]byte(`{}`), uint8(1), "text/plain", "", "external", true, int64(1), "u", "v", 0, 0, 1<<62, false, "x")

	srv := slacktest.NewServer(f)
	a := New()
	a.Mode = ModeEvents
	a.BotToken = config.Secret(srv.BotToken())
	a.AppToken = config.Secret(srv.AppToken())
	a.SigningSecret = config.Secret(srv.SigningSecret())
	a.APIURL = srv.APIURL()
	a.serverBackoff = time.Millisecond
	if err := a.Provision(context.Background(), core.Env{Logger: (&coretest.Logs{}).Logger()}); err != nil {
		f.Fatal(err)
	}
	if err := a.Validate(); err != nil {
		f.Fatal(err)
	}
	box := adaptertest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := a.Start(ctx, box); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = a.Stop(ctx)
	})
	mux := http.NewServeMux()
	a.Mount(mux)
	post := func(body []byte) (int, []core.InboundMessage) {
		// Every body is new to the adapter: the de-duplication of Slack's
		// retries would otherwise hide a mutated body with a seen event id.
		a.seen = eventset.NewSet(time.Hour, 10)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, EventsPath, bytes.NewReader(body))
		slacktest.SignRequest(req, body, srv.SigningSecret(), time.Now())
		mux.ServeHTTP(rec, req)
		return rec.Code, box.Take()
	}
	secrets := []string{srv.BotToken(), srv.AppToken(), srv.SigningSecret()}
	check := func(t *testing.T, body []byte, msg core.InboundMessage) {
		t.Helper()
		var w wireFiles
		if err := json.Unmarshal(body, &w); err != nil || w.Event == nil {
			t.Fatalf("%q reached the core as %+v, but its files do not decode: %v", body, msg, err)
		}
		if err := adaptertest.CheckInbound(msg, Platform, len(w.Event.Files), body, secrets...); err != nil {
			t.Fatalf("%q reached the core as %+v: %v", body, msg, err)
		}
		var urls []string
		for _, f := range w.Event.Files {
			urls = append(urls, f.URLPrivate, f.URLPrivateDownload)
		}
		for _, att := range msg.Attachments {
			if !slices.Contains(urls, att.Ref) {
				t.Fatalf("%q: Ref %q is none of the files' private URLs", body, att.Ref)
			}
		}
	}

	f.Fuzz(func(t *testing.T, body []byte, n uint8, mime, sub, mode string, external bool, size int64,
		urlPrivate, urlDownload string, width, height, durationMs int, share bool, text string) {
		status, got := post(body)
		if status >= 500 || len(got) > 1 {
			t.Fatalf("%q: %d, and the core got %+v", body, status, got)
		}
		for _, msg := range got {
			check(t, body, msg)
		}

		files := make([]any, int(n%4))
		for i := range files {
			files[i] = map[string]any{"id": fmt.Sprintf("F%d", i), "name": fmt.Sprintf("f%d", i), "mimetype": mime,
				"subtype": sub, "mode": mode, "is_external": external, "size": size, "url_private": urlPrivate,
				"url_private_download": urlDownload, "original_w": width, "original_h": height, "duration_ms": durationMs}
		}
		event := map[string]any{"type": "message", "channel": "D0ADA00001", "user": "U0ADA00001", "text": text,
			"ts": "1700000000.000100", "channel_type": "im", "files": files}
		if share {
			event["subtype"] = "file_share"
		}
		made, err := json.Marshal(map[string]any{"type": "event_callback", "event_id": "EvFiles", "event": event})
		if err != nil {
			t.Fatal(err)
		}
		status, got = post(made)
		if status != http.StatusOK || len(got) > 1 {
			t.Fatalf("%s: %d, and the core got %+v", made, status, got)
		}
		// The strings as JSON carries them (valid UTF-8).
		var back struct {
			Event struct {
				Text  string `json:"text"`
				Files []struct {
					Mimetype, Subtype, Mode string
					URLPrivate              string `json:"url_private"`
					URLPrivateDownload      string `json:"url_private_download"`
				} `json:"files"`
			} `json:"event"`
		}
		if err := json.Unmarshal(made, &back); err != nil {
			t.Fatal(err)
		}
		kept := 0
		fetchable := len(files) > 0 && (back.Event.Files[0].URLPrivate != "" || back.Event.Files[0].URLPrivateDownload != "") &&
			!external && !slices.Contains([]string{"tombstone", "hidden_by_limit", "external"}, back.Event.Files[0].Mode)
		if fetchable {
			kept = len(files)
		}
		want := !(share && len(files) == 0) && !(len(files) > 0 && kept == 0 && strings.TrimSpace(back.Event.Text) == "")
		if want != (len(got) == 1) {
			t.Fatalf("%s: want taken %t, the core got %+v", made, want, got)
		}
		if !want {
			return
		}
		msg := got[0]
		check(t, made, msg)
		if len(msg.Attachments) != kept {
			t.Fatalf("%s: %d files to keep became %+v", made, kept, msg.Attachments)
		}
		for i, att := range msg.Attachments {
			in := back.Event.Files[i]
			ref := in.URLPrivateDownload
			if ref == "" {
				ref = in.URLPrivate
			}
			if att.Ref != ref || att.Name != fmt.Sprintf("f%d", i) || att.MIME != in.Mimetype || att.Size != max(size, 0) ||
				att.Kind != slackKind(in.Mimetype, in.Subtype) || (durationMs >= 500) != (att.Seconds > 0) {
				t.Fatalf("%s: file %d became %+v", made, i, att)
			}
		}
	})
}

// slackKind is the kind the adapter documents for a file of type mime
// and per-file subtype sub: by the type's major part, a voice note for
// audio recorded in Slack (subtype slack_audio).
func slackKind(mime, sub string) core.AttachmentKind {
	major, _, _ := strings.Cut(strings.ToLower(mime), "/")
	switch major {
	case "image":
		return core.AttachImage
	case "audio":
		if sub == wire.VoiceClipSubtype {
			return core.AttachVoice
		}
		return core.AttachAudio
	case "video":
		return core.AttachVideo
	}
	return core.AttachDocument
}
