package discord

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
)

// fetch fetches a through the adapter with a bound on the wait.
func (b *testBundle) fetch(a core.Attachment, maxBytes int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.FetchAttachment(ctx, a, maxBytes)
}

// requireNoTokenToCDN checks that no download carried an Authorization
// header: the CDN needs none, and the bot token must not leave for it.
func (b *testBundle) requireNoTokenToCDN(t *testing.T) {
	t.Helper()
	downloads := b.srv.Downloads()
	require.NotEmpty(t, downloads, "nothing was downloaded")
	for _, d := range downloads {
		require.Empty(t, d.Authorization, "%s was fetched with an Authorization header", d.Path)
	}
}

// pngOf is a w×h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{B: 255, A: 255})
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func TestAttachmentKindsAreDescribed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	photo := pngOf(t, 3, 2)
	for _, tc := range []struct {
		name string
		file discordtest.File
		text string
		want core.Attachment // Ref and Size are checked apart
	}{
		{"image", discordtest.File{Filename: "cat.png", ContentType: "image/png", Data: photo}, "look",
			core.Attachment{Kind: core.AttachImage, MIME: "image/png", Name: "cat.png", Width: 3, Height: 2}},
		{"audio", discordtest.File{Filename: "song.mp3", ContentType: "audio/mpeg", Data: []byte("ID3 fake mp3")}, "",
			core.Attachment{Kind: core.AttachAudio, MIME: "audio/mpeg", Name: "song.mp3"}},
		{"video", discordtest.File{Filename: "clip.mp4", ContentType: "video/mp4", Data: []byte("fake mp4"), Width: 640, Height: 480}, "a clip",
			core.Attachment{Kind: core.AttachVideo, MIME: "video/mp4", Name: "clip.mp4", Width: 640, Height: 480}},
		{"document", discordtest.File{Filename: "report.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 fake")}, "",
			core.Attachment{Kind: core.AttachDocument, MIME: "application/pdf", Name: "report.pdf"}},
		{"text with charset", discordtest.File{Filename: "notes.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("hello")}, "",
			core.Attachment{Kind: core.AttachDocument, MIME: "text/plain; charset=utf-8", Name: "notes.txt"}},
		{"no content type", discordtest.File{Filename: "blob.bin", Data: []byte{0, 1, 2}}, "",
			core.Attachment{Kind: core.AttachDocument, Name: "blob.bin"}},
	} {
		n := len(b.core.Messages())
		ch, id := b.srv.SendFiles(ada, tc.text, tc.file)
		got := b.core.Wait(t, n+1, waitFor)[n]
		require.Equal(t, ch, got.ChannelThreadID, tc.name)
		require.Equal(t, id, got.PlatformMessageID, tc.name)
		require.Equal(t, tc.text, got.Text, tc.name)
		require.True(t, got.Direct, tc.name)
		require.Len(t, got.Attachments, 1, tc.name)
		a := got.Attachments[0]
		require.True(t, strings.HasPrefix(a.Ref, b.srv.URL()+"/attachments/"+ch+"/"), "%s: Ref %q is the attachment's URL", tc.name, a.Ref)
		require.EqualValues(t, len(tc.file.Data), a.Size, tc.name)
		want := tc.want
		want.Ref, want.Size = a.Ref, a.Size
		require.Equal(t, want, a, tc.name)

		data, err := b.fetch(a, 1<<20)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.file.Data, data, tc.name)
	}
	b.requireNoTokenToCDN(t)
}

func TestVoiceMessageIsVoice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	voice := []byte("OggS\x00fake opus")
	b.srv.SendVoiceMessage(ada, discordtest.File{Data: voice, DurationSecs: 4.6})
	got := b.core.Wait(t, 1, waitFor)[0]
	require.Equal(t, "", got.Text, "a voice message has no text, and still arrives")
	require.Len(t, got.Attachments, 1)
	a := got.Attachments[0]
	require.Equal(t, core.AttachVoice, a.Kind)
	require.Equal(t, "audio/ogg", a.MIME)
	require.Equal(t, "voice-message.ogg", a.Name)
	require.Equal(t, 5, a.Seconds)
	data, err := b.fetch(a, 1<<20)
	require.NoError(t, err)
	require.Equal(t, voice, data)

	// The same ogg file sent as an ordinary attachment is audio.
	b.srv.SendFiles(ada, "", discordtest.File{Filename: "memo.ogg", ContentType: "audio/ogg", Data: voice})
	require.Equal(t, core.AttachAudio, b.core.Wait(t, 2, waitFor)[1].Attachments[0].Kind)
}

func TestAttachmentOnlyDMArrives(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := discordtest.File{Filename: "a.txt", ContentType: "text/plain", Data: []byte("a")}
	pic := discordtest.File{Filename: "b.png", ContentType: "image/png", Data: pngOf(t, 1, 1)}
	b.srv.SendFiles(ada, "", doc, pic)
	got := b.core.Wait(t, 1, waitFor)[0]
	require.Equal(t, "", got.Text)
	require.Len(t, got.Attachments, 2)
	require.Equal(t, []string{"a.txt", "b.png"}, []string{got.Attachments[0].Name, got.Attachments[1].Name}, "in Discord's order")
	require.Equal(t, []core.AttachmentKind{core.AttachDocument, core.AttachImage}, []core.AttachmentKind{got.Attachments[0].Kind, got.Attachments[1].Kind})
}

func TestStickerArrivesAsSticker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		format   int
		ext      string
		mimeType string
	}{
		{discordtest.StickerPNG, "png", "image/png"},
		{discordtest.StickerAPNG, "png", "image/apng"},
		{discordtest.StickerGIF, "gif", "image/gif"},
		{discordtest.StickerLottie, "json", "application/json"},
	} {
		n := len(b.core.Messages())
		data := []byte("sticker " + tc.ext)
		b.srv.SendSticker(ada, "", discordtest.Sticker{ID: "700000000000000001", Name: "Wave", FormatType: tc.format, Data: data})
		got := b.core.Wait(t, n+1, waitFor)[n]
		require.Equal(t, "", got.Text)
		require.Equal(t, []core.Attachment{{
			Kind: core.AttachSticker, MIME: tc.mimeType, Name: "Wave",
			Ref: b.srv.URL() + "/stickers/700000000000000001." + tc.ext,
		}}, got.Attachments, "format %d: Discord's sticker_items have no emoji", tc.format)
		fetched, err := b.fetch(got.Attachments[0], 1<<20)
		require.NoError(t, err)
		require.Equal(t, data, fetched)
	}
	// With text, the sticker follows the text.
	b.srv.SendSticker(ada, "hi!", discordtest.Sticker{Name: "Hello"})
	got := b.core.Wait(t, 5, waitFor)[4]
	require.Equal(t, "hi!", got.Text)
	require.Equal(t, "Hello", got.Attachments[0].Name)
	b.requireNoTokenToCDN(t)
}

func TestStickerRefUsesDiscordsCDNByDefault(t *testing.T) {
	t.Parallel()
	a := New()
	m := &discordgo.Message{StickerItems: []*discordgo.StickerItem{
		{ID: "700000000000000002", Name: "Cat", FormatType: discordgo.StickerFormatTypePNG},
		{ID: "../../evil", Name: "Bad", FormatType: discordgo.StickerFormatTypePNG},
		nil,
	}}
	got := a.attachmentsOf(m)
	require.Len(t, got, 1, "a sticker id that is not a snowflake is skipped")
	require.Equal(t, "https://cdn.discordapp.com/stickers/700000000000000002.png", got[0].Ref)
}

func TestGuildFilesAreIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Dispatch("MESSAGE_CREATE", map[string]any{
		"id": "400000000000000001", "channel_id": "300000000000000001", "guild_id": "200000000000000001",
		"content": "", "type": 0, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"author": map[string]any{"id": ada.ID, "username": ada.Username},
		"attachments": []map[string]any{{
			"id": "400000000000000002", "filename": "x.png", "size": 3, "content_type": "image/png",
			"url": b.srv.URL() + "/attachments/300000000000000001/400000000000000002/x.png",
		}},
		"sticker_items": []map[string]any{{"id": "700000000000000001", "name": "Wave", "format_type": 1}},
	})
	requireOnlySentinel(t, b, "a server message with files")
}

func TestOversizedFileIsNotDownloaded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	data := bytes.Repeat([]byte("x"), 1000)
	b.srv.SendFiles(ada, "", discordtest.File{Filename: "big.bin", ContentType: "application/octet-stream", Data: data})
	a := b.core.Wait(t, 1, waitFor)[0].Attachments[0]

	_, err := b.fetch(a, 999)
	require.ErrorIs(t, err, core.ErrTooLarge)
	require.Empty(t, b.srv.Downloads(), "the described size alone refuses it")

	// Without a size, Content-Length refuses it.
	a.Size = 0
	_, err = b.fetch(a, 999)
	require.ErrorIs(t, err, core.ErrTooLarge)
	require.Len(t, b.srv.Downloads(), 1, "not retried")

	data2, err := b.fetch(a, 1000)
	require.NoError(t, err, "exactly max is allowed")
	require.Equal(t, data, data2)
}

func TestFetchRetriesFailedDownloads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	data := []byte("retry me")
	b.srv.SendFiles(ada, "", discordtest.File{Filename: "r.txt", ContentType: "text/plain", Data: data})
	a := b.core.Wait(t, 1, waitFor)[0].Attachments[0]

	b.srv.FailNextDownloads(1)
	got, err := b.fetch(a, 1<<20)
	require.NoError(t, err, "one failure is retried")
	require.Equal(t, data, got)
	require.Len(t, b.srv.Downloads(), 2)

	retries := b.adapter.maxServerRetries
	b.srv.FailNextDownloads(retries + 1)
	_, err = b.fetch(a, 1<<20)
	require.Error(t, err, "failing more than the retries is an error")
	require.False(t, errors.Is(err, core.ErrTooLarge))
	require.ErrorContains(t, err, "HTTP 500")
	require.ErrorContains(t, err, `fetching discord attachment "r.txt"`)
	require.NotContains(t, err.Error(), "hm=", "no signature parameters in errors")
	require.NotContains(t, err.Error(), b.srv.Token())
	require.Len(t, b.srv.Downloads(), 2+retries+1)

	got, err = b.fetch(a, 1<<20)
	require.NoError(t, err, "the next fetch works")
	require.Equal(t, data, got)
	b.requireNoTokenToCDN(t)
	require.NotContains(t, b.logs.String(), "hm=", "no signature parameters in logs")
}

func TestFetchWaitsOutARateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.SendFiles(ada, "", discordtest.File{Filename: "r.txt", ContentType: "text/plain", Data: []byte("ok")})
	a := b.core.Wait(t, 1, waitFor)[0].Attachments[0]
	b.srv.RateLimitNext("cdn", 10*time.Millisecond) // Retry-After: 1
	got, err := b.fetch(a, 1<<20)
	require.NoError(t, err)
	require.Equal(t, []byte("ok"), got)
	require.Len(t, b.srv.Downloads(), 2)
	require.Contains(t, b.logs.String(), "discord rate limit, waiting")
}

func TestFetchGivesUpOnMissingFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.fetch(core.Attachment{Kind: core.AttachDocument, Ref: b.srv.URL() + "/attachments/1/2/gone.txt"}, 1<<20)
	require.ErrorContains(t, err, "HTTP 404")
	require.Len(t, b.srv.Downloads(), 1, "a 404 is not retried")
}

func TestFetchRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	origin, err := url.Parse(b.srv.URL())
	require.NoError(t, err)
	for _, ref := range []string{
		"https://evil.example/attachments/1/2/x.png",
		"https://cdn.discordapp.com/attachments/1/2/x.png",  // api_url stands in for the CDN
		"https://" + origin.Host + "/attachments/1/2/x.png", // another scheme
		"http://user:pw@" + origin.Host + "/attachments/1/2/x.png",
		"file:///etc/passwd",
		"/attachments/1/2/x.png",
		"",
	} {
		_, err := b.fetch(core.Attachment{Kind: core.AttachImage, Ref: ref}, 1<<20)
		require.Error(t, err, ref)
		require.NotContains(t, err.Error(), "pw", ref)
	}
	_, err = b.fetch(core.Attachment{Kind: core.AttachImage, Ref: "https://evil.example/x.png"}, 1<<20)
	require.ErrorContains(t, err, `refusing to fetch from "https://evil.example"`)
	require.Empty(t, b.srv.Downloads())
}

func TestAllowedOriginsWithoutAPIURL(t *testing.T) {
	t.Parallel()
	a := New()
	for ref, ok := range map[string]bool{
		"https://cdn.discordapp.com/attachments/1/2/x.png?ex=1&is=2&hm=3&": true,
		"https://media.discordapp.net/stickers/1.png":                      true,
		"https://CDN.discordapp.com/attachments/1/2/x.png":                 true,
		"http://cdn.discordapp.com/attachments/1/2/x.png":                  false,
		"https://cdn.discordapp.com.evil.example/x.png":                    false,
		"https://evil.example/x.png":                                       false,
	} {
		u, err := url.Parse(ref)
		require.NoError(t, err)
		require.Equal(t, ok, a.allowedOrigin(u), ref)
	}
}

func TestFetchNeedsARunningAdapter(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	_, err := b.fetch(core.Attachment{Ref: b.srv.URL() + "/attachments/1/2/x.png"}, 1<<20)
	require.ErrorContains(t, err, "not started")
}

func TestFetchRetriesRefusedConnections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.SendFiles(ada, "", discordtest.File{Filename: "r.txt", ContentType: "text/plain", Data: []byte("ok")})
	a := b.core.Wait(t, 1, waitFor)[0].Attachments[0]
	b.srv.Close() // every connection is refused from now on
	_, err := b.fetch(a, 1<<20)
	require.ErrorContains(t, err, "failed after 3 retries")
	require.NotContains(t, err.Error(), "hm=", "no signature parameters in errors")
	require.Contains(t, b.logs.String(), "failed, retrying", "each refusal is logged and retried")
	require.Contains(t, b.logs.String(), "connection refused")
	require.NotContains(t, b.logs.String(), "hm=", "no signature parameters in logs")
}
