package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// fetch fetches att through the adapter with at most maxBytes.
func (b *testBundle) fetch(att core.Attachment, maxBytes int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.FetchAttachment(ctx, att, maxBytes)
}

// receive plays send and returns the one attachment the core got with it.
func (b *testBundle) receive(t *testing.T, send func() models.Update) (core.InboundMessage, core.Attachment) {
	t.Helper()
	n := len(b.core.Messages())
	send()
	msg := b.core.Wait(t, n+1, waitFor)[n]
	require.Len(t, msg.Attachments, 1, "one attachment")
	return msg, msg.Attachments[0]
}

func TestEveryKindOfFileIsDescribed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		send func(s *telegramtest.Server) models.Update
		want core.Attachment
		data []byte
		text string
	}{
		{
			name: "photo",
			send: func(s *telegramtest.Server) models.Update {
				return s.SendPhoto(ada, telegramtest.Media{Data: []byte("jpeg bytes"), Caption: "my cat"})
			},
			want: core.Attachment{Kind: core.AttachImage, MIME: "image/jpeg", Size: 10, Width: 800, Height: 600},
			data: []byte("jpeg bytes"), text: "my cat",
		},
		{
			name: "voice",
			send: func(s *telegramtest.Server) models.Update {
				return s.SendVoice(ada, telegramtest.Media{Data: []byte("OggS voice"), Seconds: 4})
			},
			want: core.Attachment{Kind: core.AttachVoice, MIME: "audio/ogg", Size: 10, Seconds: 4},
			data: []byte("OggS voice"),
		},
		{
			name: "audio",
			send: func(s *telegramtest.Server) models.Update {
				return s.SendAudio(ada, telegramtest.Media{Data: []byte("ID3 song"), Name: "song.mp3", MIME: "audio/mpeg", Seconds: 181, Caption: "listen"})
			},
			want: core.Attachment{Kind: core.AttachAudio, MIME: "audio/mpeg", Size: 8, Name: "song.mp3", Seconds: 181},
			data: []byte("ID3 song"), text: "listen",
		},
		{
			name: "video",
			send: func(s *telegramtest.Server) models.Update {
				return s.SendVideo(ada, telegramtest.Media{Data: []byte("mp4 video"), Name: "clip.mp4", MIME: "video/mp4", Seconds: 12, Width: 1280, Height: 720})
			},
			want: core.Attachment{Kind: core.AttachVideo, MIME: "video/mp4", Size: 9, Name: "clip.mp4", Seconds: 12, Width: 1280, Height: 720},
			data: []byte("mp4 video"),
		},
		{
			name: "document",
			send: func(s *telegramtest.Server) models.Update {
				return s.SendDocument(ada, telegramtest.Media{Data: []byte("%PDF-1.7"), Name: "report.pdf", MIME: "application/pdf", Caption: "read this"})
			},
			want: core.Attachment{Kind: core.AttachDocument, MIME: "application/pdf", Size: 8, Name: "report.pdf"},
			data: []byte("%PDF-1.7"), text: "read this",
		},
		{
			name: "sticker",
			send: func(s *telegramtest.Server) models.Update {
				return s.SendSticker(ada, telegramtest.Media{Data: []byte("RIFF WEBP"), Emoji: "😺"})
			},
			want: core.Attachment{Kind: core.AttachSticker, MIME: "image/webp", Size: 9, Emoji: "😺", Width: 512, Height: 512},
			data: []byte("RIFF WEBP"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			msg, att := b.receive(t, func() models.Update { return tc.send(b.srv) })
			require.True(t, msg.Direct)
			require.Equal(t, strconv.FormatInt(ada.ID, 10), msg.ChannelThreadID)
			require.Equal(t, tc.text, msg.Text, "the caption is the text")
			require.True(t, strings.HasPrefix(att.Ref, "fake-file-"), "Ref is the file_id, got %q", att.Ref)
			tc.want.Ref = att.Ref
			require.Equal(t, tc.want, att)

			data, err := b.fetch(att, 1<<20)
			require.NoError(t, err)
			require.Equal(t, tc.data, data)
		})
	}
}

func TestVideoNoteAndAnimationAreVideos(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.InjectRaw(json.RawMessage(`{"update_id": 1, "message": {"message_id": 1, "date": 1700000000,
		"chat": {"id": 100001, "type": "private"},
		"from": {"id": 100001, "is_bot": false, "first_name": "Ada"},
		"video_note": {"file_id": "vn", "file_unique_id": "vnu", "length": 240, "duration": 7, "file_size": 5000}}}`))
	// Telegram sends an animation in both fields, for old clients.
	b.srv.InjectRaw(json.RawMessage(`{"update_id": 2, "message": {"message_id": 2, "date": 1700000000,
		"chat": {"id": 100001, "type": "private"},
		"from": {"id": 100001, "is_bot": false, "first_name": "Ada"},
		"animation": {"file_id": "an", "file_unique_id": "anu", "width": 320, "height": 240, "duration": 3, "file_name": "fun.mp4", "mime_type": "video/mp4", "file_size": 900},
		"document": {"file_id": "an", "file_unique_id": "anu", "file_name": "fun.mp4", "mime_type": "video/mp4", "file_size": 900},
		"caption": "lol"}}`))
	got := b.core.Wait(t, 2, waitFor)
	require.Equal(t, []core.Attachment{{Kind: core.AttachVideo, MIME: "video/mp4", Size: 5000, Ref: "vn", Seconds: 7, Width: 240, Height: 240}},
		got[0].Attachments)
	require.Equal(t, "", got[0].Text)
	require.Equal(t, []core.Attachment{{Kind: core.AttachVideo, MIME: "video/mp4", Size: 900, Name: "fun.mp4", Ref: "an", Seconds: 3, Width: 320, Height: 240}},
		got[1].Attachments)
	require.Equal(t, "lol", got[1].Text)
}

func TestPhotoWithoutCaptionArrives(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var upd models.Update
	msg, att := b.receive(t, func() models.Update {
		upd = b.srv.SendPhoto(ada, telegramtest.Media{Data: []byte("the full photo")})
		return upd
	})
	require.Equal(t, "", msg.Text)
	require.Equal(t, strconv.Itoa(upd.Message.ID), msg.PlatformMessageID)
	largest := upd.Message.Photo[len(upd.Message.Photo)-1]
	require.Equal(t, largest.FileID, att.Ref, "the largest size, not the thumbnail")
	data, err := b.fetch(att, 1<<20)
	require.NoError(t, err)
	require.Equal(t, "the full photo", string(data))
}

// endless answers a download with a body that never ends (with a
// Content-Length of a gigabyte when lie is set) until the client goes:
// a fetch that read it whole would never return.
func endless(lie bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if lie {
			w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		}
		chunk := []byte(strings.Repeat("x", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

func TestOversizedFileIsNotDownloaded(t *testing.T) {
	t.Parallel()
	t.Run("the size the message gave", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, att := b.receive(t, func() models.Update {
			return b.srv.SendDocument(ada, telegramtest.Media{Data: make([]byte, 5000), Name: "big.bin"})
		})
		_, err := b.fetch(att, 4999)
		require.ErrorIs(t, err, core.ErrTooLarge)
		require.Zero(t, b.srv.Calls("getFile"), "no getFile")
		require.Zero(t, b.srv.Downloads(), "no download")
	})
	t.Run("the size getFile gave", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, att := b.receive(t, func() models.Update {
			return b.srv.SendDocument(ada, telegramtest.Media{Data: make([]byte, 5000), Name: "big.bin"})
		})
		att.Size = 0 // as when the message did not say
		_, err := b.fetch(att, 4999)
		require.ErrorIs(t, err, core.ErrTooLarge)
		require.Equal(t, 1, b.srv.Calls("getFile"))
		require.Zero(t, b.srv.Downloads(), "no download")
	})
	for _, tc := range []struct {
		name string
		lie  bool
	}{{"the Content-Length", true}, {"the bytes that arrive", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, att := b.receive(t, func() models.Update {
				return b.srv.SendDocument(ada, telegramtest.Media{Data: []byte("small"), Name: "small.txt"})
			})
			b.srv.ServeFileWith(att.Ref, endless(tc.lie))
			_, err := b.fetch(att, 100)
			require.ErrorIs(t, err, core.ErrTooLarge)
			require.Equal(t, 1, b.srv.Downloads(), "not retried")
		})
	}
}

func TestFetchRetries(t *testing.T) {
	t.Parallel()
	t.Run("a download that fails once", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, att := b.receive(t, func() models.Update {
			return b.srv.SendVoice(ada, telegramtest.Media{Data: []byte("OggS")})
		})
		b.srv.FailNextDownload(telegramtest.ServerError())
		data, err := b.fetch(att, 1<<20)
		require.NoError(t, err)
		require.Equal(t, "OggS", string(data))
		require.Equal(t, 2, b.srv.Downloads())
	})
	t.Run("getFile failing, then rate limited", func(t *testing.T) {
		t.Parallel()
		clock := coretest.NewClock(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
		b := newBundle(t)
		b.adapter.clock = clock
		b.start(t)
		_, att := b.receive(t, func() models.Update {
			return b.srv.SendVoice(ada, telegramtest.Media{Data: []byte("OggS")})
		})
		b.srv.FailNext("getFile", telegramtest.ServerError())
		b.srv.FailNext("getFile", telegramtest.TooManyRequests(2))
		type result struct {
			data []byte
			err  error
		}
		done := make(chan result, 1)
		go func() {
			data, err := b.fetch(att, 1<<20)
			done <- result{data, err}
		}()
		// The backoff and then retry_after run on the adapter's clock.
		clock.WaitForTimer(t, clock.Now().Add(time.Millisecond), waitFor)
		clock.Advance(time.Millisecond)
		clock.WaitForTimer(t, clock.Now().Add(2*time.Second), waitFor)
		require.Zero(t, b.srv.Downloads(), "not before getFile worked")
		clock.Advance(2 * time.Second)
		select {
		case r := <-done:
			require.NoError(t, r.err)
			require.Equal(t, "OggS", string(r.data))
		case <-time.After(waitFor):
			t.Fatal("FetchAttachment did not return after retry_after")
		}
		require.Equal(t, 3, b.srv.Calls("getFile"))
		require.Equal(t, 1, b.srv.Downloads())
	})
	t.Run("a download that fails more often than retried", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, att := b.receive(t, func() models.Update {
			return b.srv.SendVoice(ada, telegramtest.Media{Data: []byte("OggS")})
		})
		for range b.adapter.maxServerRetries + 1 {
			b.srv.FailNextDownload(telegramtest.ServerError())
		}
		_, err := b.fetch(att, 1<<20)
		require.Error(t, err)
		require.False(t, errors.Is(err, core.ErrTooLarge))
		require.Contains(t, err.Error(), "500")
		require.Equal(t, b.adapter.maxServerRetries+1, b.srv.Downloads())
	})
	t.Run("an unknown file", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.fetch(core.Attachment{Kind: core.AttachDocument, Ref: "no-such-file"}, 1<<20)
		require.ErrorContains(t, err, "invalid file_id")
		require.Equal(t, 1, b.srv.Calls("getFile"), "a 400 is not retried")
	})
}

func TestFetchErrorsHoldNoToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		serve     http.HandlerFunc
		configure func(*Adapter)
		want      string
		// logged says the retries logged the failure.
		logged bool
	}{
		{
			// net/http's error quotes the URL, token and all.
			name: "connection dropped",
			serve: func(w http.ResponseWriter, _ *http.Request) {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			},
			want:   "failed after 3 retries",
			logged: true,
		},
		{
			name: "too slow",
			serve: func(_ http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
			},
			configure: func(a *Adapter) { a.fileTimeout = 50 * time.Millisecond },
			want:      "took too long",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var configure []func(*Adapter)
			if tc.configure != nil {
				configure = append(configure, tc.configure)
			}
			b := setup(t, configure...)
			_, att := b.receive(t, func() models.Update {
				return b.srv.SendDocument(ada, telegramtest.Media{Data: []byte("secret plans"), Name: "plans.txt"})
			})
			b.srv.ServeFileWith(att.Ref, tc.serve)
			_, err := b.fetch(att, 1<<20)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "[redacted]", "the URL is in the error, without the token")
			require.NotContains(t, err.Error(), b.srv.Token())
			require.NotContains(t, err.Error(), "TEST-token", "no part of the token's secret")
			require.NotContains(t, att.Ref, b.srv.Token())
			require.NotContains(t, b.logs.String(), b.srv.Token(), "the token leaked into the logs")
			if tc.logged {
				require.Contains(t, b.logs.String(), "file/bot[redacted]/", "the retries logged the URL, without the token")
			}
		})
	}
}

func TestFetchBeforeStart(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	_, err := b.fetch(core.Attachment{Kind: core.AttachImage, Ref: "x"}, 1<<20)
	require.ErrorContains(t, err, "not started")
}

func TestFilesInGroupsAreIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.InjectRaw(json.RawMessage(`{"update_id": 500, "message": {"message_id": 1, "date": 1700000000,
		"chat": {"id": -100500, "type": "group", "title": "Friends"},
		"from": {"id": 100001, "is_bot": false, "first_name": "Ada"},
		"photo": [{"file_id": "p", "file_unique_id": "q", "width": 10, "height": 10}]}}`))
	b.srv.InjectRaw(json.RawMessage(`{"update_id": 501, "message": {"message_id": 2, "date": 1700000000,
		"chat": {"id": -1001234, "type": "supergroup", "title": "Big"},
		"from": {"id": 100001, "is_bot": false, "first_name": "Ada"},
		"document": {"file_id": "d", "file_unique_id": "e", "file_name": "a.txt"}, "caption": "see"}}`))
	b.srv.InjectRaw(json.RawMessage(`{"update_id": 502, "channel_post": {"message_id": 3, "date": 1700000000,
		"chat": {"id": -100888, "type": "channel", "title": "News"},
		"voice": {"file_id": "v", "file_unique_id": "w", "duration": 2}}}`))
	b.requireOnlySentinel(t)
}
