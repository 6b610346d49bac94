package slack

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
)

// fetch fetches a through the adapter with at most maxBytes.
func (b *testBundle) fetch(a core.Attachment, maxBytes int64) ([]byte, error) {
	ctx, cancel := contextWithTimeout()
	defer cancel()
	return b.adapter.FetchAttachment(ctx, a, maxBytes)
}

// requireNoToken fails if err shows a secret.
func (b *testBundle) requireNoToken(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	for _, s := range []string{b.srv.BotToken(), b.srv.AppToken(), b.srv.SigningSecret()} {
		require.NotContains(t, err.Error(), s, "a secret leaked into an error")
	}
}

// shareDoc shares a small document from ada and returns its attachment
// as the core got it.
func (b *testBundle) shareDoc(t *testing.T, data []byte, unknownSize bool) core.Attachment {
	t.Helper()
	n := len(b.core.Messages())
	b.srv.ShareFile(ada, slacktest.File{Name: "notes.txt", MIME: "text/plain", Data: data, UnknownSize: unknownSize})
	msgs := b.core.Wait(t, n+1, waitFor)
	require.Len(t, msgs[n].Attachments, 1)
	return msgs[n].Attachments[0]
}

func TestFileSharesArrive(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := setup(t, mode)
		for _, tc := range []struct {
			name string
			file slacktest.File
			want core.Attachment
			text string
		}{
			{"image", slacktest.File{Name: "cat.png", MIME: "image/png", Data: []byte("png"), Width: 640, Height: 480, Text: "my cat &amp; me"},
				core.Attachment{Kind: core.AttachImage, MIME: "image/png", Size: 3, Name: "cat.png", Width: 640, Height: 480}, "my cat & me"},
			{"voice clip", slacktest.File{Name: "audio_message.webm", MIME: "audio/webm", Data: []byte("webm!"), VoiceClip: true},
				core.Attachment{Kind: core.AttachVoice, MIME: "audio/webm", Size: 5, Name: "audio_message.webm"}, ""},
			{"audio file", slacktest.File{Name: "song.mp3", MIME: "audio/mpeg", Data: []byte("ID3"), Text: "listen"},
				core.Attachment{Kind: core.AttachAudio, MIME: "audio/mpeg", Size: 3, Name: "song.mp3"}, "listen"},
			{"video", slacktest.File{Name: "clip.mp4", MIME: "video/mp4", Data: []byte("mp4")},
				core.Attachment{Kind: core.AttachVideo, MIME: "video/mp4", Size: 3, Name: "clip.mp4"}, ""},
			{"document", slacktest.File{Name: "report.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7")},
				core.Attachment{Kind: core.AttachDocument, MIME: "application/pdf", Size: 8, Name: "report.pdf"}, ""},
		} {
			n := len(b.core.Messages())
			shared := b.srv.ShareFile(ada, tc.file)
			msgs := b.core.Wait(t, n+1, waitFor)
			got := msgs[n]
			require.Equal(t, shared.Channel, got.ChannelThreadID, tc.name)
			require.Equal(t, ada.ID, got.ChannelUserID, tc.name)
			require.Equal(t, shared.TS, got.PlatformMessageID, tc.name)
			require.True(t, got.Direct, tc.name)
			require.Equal(t, tc.text, got.Text, "%s: the text, empty or not", tc.name)
			want := tc.want
			want.Ref = shared.URL
			require.Equal(t, []core.Attachment{want}, got.Attachments, tc.name)
			require.NotContains(t, want.Ref, b.srv.BotToken(), "a Ref holds no secret")

			data, err := b.fetch(got.Attachments[0], 1<<20)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.file.Data, data, tc.name)
		}
	})
}

func TestFileSharesIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	file := `{"id":"F0X","name":"a.txt","mimetype":"text/plain","size":1,"mode":"hosted","url_private":"` + b.srv.URL() + `/files-pri/T-F0X/a.txt"}`
	// A file shared in a channel.
	b.srv.SendEvent([]byte(`{"type":"message","subtype":"file_share","user":"` + ada.ID + `","text":"","files":[` + file + `],"ts":"1700000000.000100","channel":"C0GENERAL01","channel_type":"channel"}`))
	// The bot's own file.
	b.srv.SendEvent([]byte(`{"type":"message","subtype":"file_share","user":"` + b.srv.BotUserID() + `","bot_id":"` + b.srv.BotID() + `","text":"","files":[` + file + `],"ts":"1700000000.000200","channel":"D0ADA00001","channel_type":"im"}`))
	// Only a file hidden by the free plan's limit, and no text.
	b.srv.SendEvent([]byte(`{"type":"message","subtype":"file_share","user":"` + ada.ID + `","text":"","files":[{"id":"F0Y","mode":"hidden_by_limit"}],"ts":"1700000000.000300","channel":"D0ADA00001","channel_type":"im"}`))
	requireOnlySentinel(t, b, "an ignored file share")
}

func TestFetchTooLarge(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	data := bytes.Repeat([]byte("x"), 64<<10)

	a := b.shareDoc(t, data, false)
	_, err := b.fetch(a, 1000)
	require.ErrorIs(t, err, core.ErrTooLarge, "the size Slack gave is over max")
	require.Zero(t, b.srv.Calls(slacktest.FileDownloads), "nothing was downloaded")

	a.Size = 0 // as if Slack had not said: the Content-Length tells
	_, err = b.fetch(a, 1000)
	require.ErrorIs(t, err, core.ErrTooLarge, "the Content-Length is over max")

	streamed := b.shareDoc(t, data, true)
	require.Zero(t, streamed.Size)
	_, err = b.fetch(streamed, 1000)
	require.ErrorIs(t, err, core.ErrTooLarge, "more than max bytes arrived")

	got, err := b.fetch(streamed, int64(len(data)))
	require.NoError(t, err, "a file of exactly max bytes is fetched")
	require.Equal(t, data, got)
}

func TestFetchRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	a := b.shareDoc(t, []byte("shopping list"), false)

	b.srv.FailNextDownloads(1)
	got, err := b.fetch(a, 1<<20)
	require.NoError(t, err, "one 500 is retried")
	require.Equal(t, "shopping list", string(got))
	require.Equal(t, 2, b.srv.Calls(slacktest.FileDownloads))

	b.srv.FailNextDownloads(b.adapter.maxServerRetries + 1)
	_, err = b.fetch(a, 1<<20)
	require.ErrorContains(t, err, "fetching slack file: failed after 3 retries")
	require.False(t, errors.Is(err, core.ErrTooLarge))
	b.requireNoToken(t, err)

	b.srv.RateLimitNext(slacktest.FileDownloads, time.Second)
	got, err = b.fetch(a, 1<<20)
	require.NoError(t, err, "a 429 waits its Retry-After and tries again")
	require.Equal(t, "shopping list", string(got))
	require.Contains(t, b.logs.String(), "slack rate limit, waiting")
}

func TestFetchRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	a := b.shareDoc(t, []byte("data"), false)
	fake := strings.TrimPrefix(b.srv.URL(), "http://")
	for _, ref := range []string{
		"https://evil.example.com/files-pri/T0FAKE0001-F0FILE00001/download/notes.txt",
		"https://files.slack.com.evil.example.com/files-pri/x/download/a.txt",
		"http://files.slack.com/files-pri/x/download/a.txt", // not https
		"https://" + fake + "/files-pri/x/download/a.txt",   // another scheme than api_url's
		"http://" + strings.Split(fake, ":")[0] + ":1/files-pri/x/download/a.txt",
		"F0FILE00001",
	} {
		a.Ref = ref
		_, err := b.fetch(a, 1<<20)
		require.Error(t, err, ref)
		b.requireNoToken(t, err)
		if ref != "F0FILE00001" {
			require.ErrorContains(t, err, "refusing to send the bot token to", ref)
		}
	}
	require.Equal(t, 0, b.srv.Calls(slacktest.FileDownloads), "no request left the adapter")
}

func TestFetchWithoutFilesScope(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	a := b.shareDoc(t, []byte("data"), false)
	b.srv.SetFilesScope(false)
	_, err := b.fetch(a, 1<<20)
	require.ErrorIs(t, err, errLoginPage)
	require.ErrorContains(t, err, "slack served a login page: the bot token lacks files:read")
	require.Equal(t, 1, b.srv.Calls(slacktest.FileDownloads), "a login page is not retried")
	b.requireNoToken(t, err)

	b.srv.SetFilesScope(true)
	got, err := b.fetch(a, 1<<20)
	require.NoError(t, err)
	require.Equal(t, "data", string(got))
}

func TestFetchNotRunning(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeSocket)
	a := core.Attachment{Kind: core.AttachDocument, Ref: b.srv.URL() + "/files-pri/x/download/a.txt"}
	_, err := b.adapter.FetchAttachment(context.Background(), a, 1<<20)
	require.ErrorContains(t, err, "not started")
}

func TestFilesOnAPlainMessage(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ref := b.srv.URL() + "/files-pri/T0FAKE0001-F0OLD/download/a.txt"
	// Older clients sent files on a message without the file_share subtype.
	b.srv.SendEvent([]byte(`{"type":"message","user":"` + ada.ID + `","text":"see this","files":[{"id":"F0OLD","name":"a.txt","mimetype":"text/plain","size":3,"mode":"hosted","url_private":"` + ref + `"}],"ts":"1700000000.000100","channel":"D0ADA00001","channel_type":"im"}`))
	got := b.core.Wait(t, 1, waitFor)[0]
	require.Equal(t, "see this", got.Text)
	require.Equal(t, []core.Attachment{{Kind: core.AttachDocument, MIME: "text/plain", Size: 3, Name: "a.txt", Ref: ref}}, got.Attachments,
		"url_private when there is no url_private_download")
}
