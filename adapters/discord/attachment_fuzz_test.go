package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// fuzzToken is the bot token in FuzzMessageFiles: it must never reach
// what the core is given.
const fuzzToken = "MTAwMDAwMDAwMDAwMDAwOTk5.GfUzz0.fuzz-token-never-delivered"

// wireFiles is the part of a MESSAGE_CREATE payload the oracle reads of
// its files.
type wireFiles struct {
	Attachments []*struct {
		URL string `json:"url"`
	} `json:"attachments"`
	StickerItems []*struct {
		ID string `json:"id"`
	} `json:"sticker_items"`
}

// FuzzMessageFiles checks the Discord adapter's inbound decoding of DMs
// with attachments and stickers: a MESSAGE_CREATE payload decoded as
// discordgo does, then normalised (without onMessageCreate's panic guard,
// so a panic fails the target). On payload as it comes: a message taken
// is a DM with a thread, no more attachments than the payload's
// attachments and stickers, each well formed, whose Ref is an
// attachment's url or the CDN image of one of its stickers, and no bot
// token in it. On a DM made of the other arguments, with n files
// (content type, size, name, url, length, dimensions) and a sticker: a
// file without a url is left out (there is nothing to fetch), a sticker
// only with a snowflake id; the message is taken exactly when it has text
// or something left, and each file keeps its url, name and type, of the
// kind its content type says (a voice note in a voice message), with no
// negative size, length or dimension.
func FuzzMessageFiles(f *testing.F) {
	const dm = `"id":"300000000000000001","channel_id":"200000000000000001","author":{"id":"100000000000000001","username":"ada"},"type":0,"timestamp":"2026-01-02T03:04:05.000000+00:00"`
	for _, p := range []string{
		`{` + dm + `,"content":"look","attachments":[{"id":"4","filename":"cat.png","content_type":"image/png","size":51234,"url":"https://cdn.discordapp.com/attachments/2/4/cat.png?ex=1&is=2&hm=3","proxy_url":"https://media.discordapp.net/attachments/2/4/cat.png","width":640,"height":480}]}`,
		`{` + dm + `,"content":"","flags":8192,"attachments":[{"id":"4","filename":"voice-message.ogg","content_type":"audio/ogg","size":8000,"url":"https://cdn.discordapp.com/attachments/2/4/voice-message.ogg","duration_secs":3.4,"waveform":"AAAA"}]}`,
		`{` + dm + `,"content":"","sticker_items":[{"id":"700000000000000001","name":"Wave","format_type":1},{"id":"700000000000000002","name":"Dance","format_type":3},{"id":"../../x","name":"bad","format_type":4}]}`,
		`{` + dm + `,"content":"","attachments":[{"id":"4","filename":"a.bin","size":-5,"width":-1,"height":-1,"duration_secs":-1,"url":"https://cdn.discordapp.com/a.bin"},{"id":"5","filename":"nourl.txt"}]}`,
		`{` + dm + `,"content":"","attachments":[{"id":"4","content_type":"audio/ogg","duration_secs":1e308}]}`,
		`{` + dm + `,"content":"x","attachments":[null,{"url":"https://cdn.discordapp.com/x","content_type":"VIDEO/MP4; codecs=avc1"}],"sticker_items":[null]}`,
		`{` + dm + `,"content":"","attachments":"nope"}`,
		`{` + dm + `,"content":"","attachments":[{"url":"https://cdn.discordapp.com/x","size":1e30}]}`,
	} {
		f.Add([]byte(p), uint8(1), "image/png", 51234, "cat.png", "https://cdn.discordapp.com/attachments/2/4/cat.png", 2.5,
			640, 480, false, "700000000000000001", uint8(1), "hi")
	}
	f.Add([]byte(`null`), uint8(2), "audio/ogg", -1, "", "https://cdn.discordapp.com/v.ogg", math.Inf(1), -1, -1, true, "", uint8(3), "")
	f.Add([]byte(`{}`), uint8(3), "", 0, "\xff", "", 0.2, 0, 0, true, "../1", uint8(2), " ")
	f.Add([]byte(`[]`), uint8(0), "text/plain;charset=utf-8", 10, "a.txt", "u", math.NaN(), 0, 0, false, "123456789012345678901", uint8(4), "")

	a := New()
	a.Token = config.Secret(fuzzToken)
	if err := a.Provision(context.Background(), core.Env{Logger: (&coretest.Logs{}).Logger()}); err != nil {
		f.Fatal(err)
	}
	a.botID = fuzzBotID
	stickerRef := func(id string) bool {
		for _, ext := range []string{"png", "json", "gif"} {
			if strings.HasPrefix(id, a.cdnOrigin()+"/stickers/") && strings.HasSuffix(id, "."+ext) {
				return isSnowflake(strings.TrimSuffix(strings.TrimPrefix(id, a.cdnOrigin()+"/stickers/"), "."+ext))
			}
		}
		return false
	}
	check := func(t *testing.T, payload []byte, msg core.InboundMessage) {
		t.Helper()
		var w wireFiles
		if err := json.Unmarshal(payload, &w); err != nil {
			t.Fatalf("%q was taken as %+v, but its files do not decode: %v", payload, msg, err)
		}
		if err := adaptertest.CheckInbound(msg, Platform, len(w.Attachments)+len(w.StickerItems), payload, fuzzToken); err != nil {
			t.Fatalf("%q was taken as %+v: %v", payload, msg, err)
		}
		urls := make([]string, 0, len(w.Attachments))
		for _, att := range w.Attachments {
			if att != nil {
				urls = append(urls, att.URL)
			}
		}
		for _, att := range msg.Attachments {
			if !slices.Contains(urls, att.Ref) && !(att.Kind == core.AttachSticker && stickerRef(att.Ref)) {
				t.Fatalf("%q: Ref %q is neither an attachment's url nor a sticker's image", payload, att.Ref)
			}
		}
	}

	f.Fuzz(func(t *testing.T, payload []byte, n uint8, contentType string, size int, name, url string, secs float64,
		width, height int, voice bool, stickerID string, format uint8, content string) {
		var ev discordgo.MessageCreate
		if json.Unmarshal(payload, &ev) == nil {
			if msg, ok := a.normalise(&ev); ok {
				check(t, payload, msg)
			}
		}

		if math.IsNaN(secs) || math.IsInf(secs, 0) {
			secs = 0 // JSON has no such number
		}
		files := make([]any, int(n%4))
		for i := range files {
			u := url
			if u != "" {
				u += fmt.Sprint(i) // each file its own url
			}
			files[i] = map[string]any{"id": fmt.Sprint(400000000000000000 + i), "filename": name, "content_type": contentType,
				"size": size, "url": u, "duration_secs": secs, "width": width, "height": height}
		}
		flags := 0
		if voice {
			flags = int(discordgo.MessageFlagsIsVoiceMessage)
		}
		made, err := json.Marshal(map[string]any{
			"id": "300000000000000001", "channel_id": "200000000000000001", "type": 0,
			"author":  map[string]any{"id": "100000000000000001", "username": "ada"},
			"content": content, "flags": flags, "attachments": files,
			"sticker_items": []any{map[string]any{"id": stickerID, "name": "S", "format_type": format}},
			"timestamp":     "2026-01-02T03:04:05.000000+00:00",
		})
		if err != nil {
			t.Fatal(err)
		}
		ev = discordgo.MessageCreate{}
		if err := json.Unmarshal(made, &ev); err != nil {
			t.Fatalf("%s does not decode: %v", made, err)
		}
		msg, ok := a.normalise(&ev)
		// The strings as JSON carries them (valid UTF-8).
		var back struct {
			Content     string
			Attachments []struct {
				URL         string `json:"url"`
				Filename    string `json:"filename"`
				ContentType string `json:"content_type"`
			} `json:"attachments"`
			Stickers []struct{ ID string } `json:"sticker_items"`
		}
		if err := json.Unmarshal(made, &back); err != nil {
			t.Fatal(err)
		}
		var kept []int
		if url != "" {
			kept = make([]int, len(files))
		}
		sticker := isSnowflake(back.Stickers[0].ID)
		nFiles := len(kept)
		if sticker {
			nFiles++
		}
		want := strings.TrimSpace(back.Content) != "" || nFiles > 0
		if ok != want {
			t.Fatalf("%s: want taken %t, got %t (%+v)", made, want, ok, msg)
		}
		if !ok {
			return
		}
		check(t, made, msg)
		if len(msg.Attachments) != nFiles {
			t.Fatalf("%s: %d files to keep became %+v", made, nFiles, msg.Attachments)
		}
		for i := range kept {
			in, got := back.Attachments[i], msg.Attachments[i]
			if got.Ref != in.URL || got.Name != in.Filename || got.MIME != strings.TrimSpace(in.ContentType) ||
				got.Kind != fileKind(in.ContentType, voice) || (secs > 0) != (got.Seconds > 0) {
				t.Fatalf("%s: file %d became %+v", made, i, got)
			}
		}
		if sticker {
			got := msg.Attachments[nFiles-1]
			if got.Kind != core.AttachSticker || !strings.Contains(got.Ref, "/stickers/"+back.Stickers[0].ID+".") {
				t.Fatalf("%s: sticker %q became %+v", made, back.Stickers[0].ID, got)
			}
		}
	})
}

// fileKind is the kind the adapter documents for an attachment of
// content type ct: by its type (parameters and case aside), a voice note
// when it belongs to a voice message and is audio or untyped.
func fileKind(ct string, voice bool) core.AttachmentKind {
	base, _, _ := strings.Cut(strings.ToLower(ct), ";")
	base = strings.TrimSpace(base)
	switch {
	case voice && (base == "" || strings.HasPrefix(base, "audio/")):
		return core.AttachVoice
	case strings.HasPrefix(base, "image/"):
		return core.AttachImage
	case strings.HasPrefix(base, "audio/"):
		return core.AttachAudio
	case strings.HasPrefix(base, "video/"):
		return core.AttachVideo
	}
	return core.AttachDocument
}
