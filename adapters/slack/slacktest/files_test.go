package slacktest_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// get downloads url with token ("" for none) and returns the status,
// Content-Type, Content-Length and body.
func get(t *testing.T, url, token string) (int, string, int64, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	res, err := hc.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Content-Type"), res.ContentLength, string(body)
}

func TestShareFile(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	rc := newReceiver(t, tb.srv.SigningSecret(), always(http.StatusOK))
	tb.srv.UseEventsAPI(rc.url)

	shared := tb.srv.ShareFile(tb.alice, slacktest.File{Name: "clip.webm", MIME: "audio/webm", Data: []byte("voice"), VoiceClip: true, Text: "listen"})
	require.Equal(t, tb.srv.DMChannelOf(tb.alice.ID), shared.Channel)
	require.Equal(t, tb.srv.URL()+"/files-pri/"+tb.srv.TeamID()+"-"+shared.FileID+"/download/clip.webm", shared.URL)

	h := receive(t, rc.hits)
	msg, _ := messageOf(t, h.event)
	require.Equal(t, "file_share", msg.SubType)
	require.Equal(t, "listen", msg.Text)
	require.Equal(t, shared.TS, msg.TimeStamp)
	require.Len(t, msg.Message.Files, 1)
	f := msg.Message.Files[0]
	require.Equal(t, shared.FileID, f.ID)
	require.Equal(t, "audio/webm", f.Mimetype)
	require.Equal(t, "webm", f.Filetype)
	require.Equal(t, 5, f.Size)
	require.Equal(t, shared.URL, f.URLPrivateDownload)
	require.Contains(t, string(h.body), `"subtype":"slack_audio"`)

	status, ctype, length, body := get(t, shared.URL, tb.srv.BotToken())
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "audio/webm", ctype)
	require.EqualValues(t, 5, length)
	require.Equal(t, "voice", body)

	for _, token := range []string{"", "xoxb-wrong", tb.srv.AppToken()} {
		status, ctype, _, body = get(t, shared.URL, token)
		require.Equal(t, http.StatusOK, status, "Slack answers 200 with its login page")
		require.Contains(t, ctype, "text/html")
		require.Contains(t, body, "Sign in")
	}

	tb.srv.SetFilesScope(false)
	_, ctype, _, _ = get(t, shared.URL, tb.srv.BotToken())
	require.Contains(t, ctype, "text/html", "without files:read")
	tb.srv.SetFilesScope(true)

	tb.srv.FailNextDownloads(2)
	for range 2 {
		status, _, _, _ = get(t, shared.URL, tb.srv.BotToken())
		require.Equal(t, http.StatusInternalServerError, status)
	}
	status, _, _, _ = get(t, shared.URL, tb.srv.BotToken())
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 8, tb.srv.Calls(slacktest.FileDownloads))
}

func TestShareFileUnknownSize(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	shared := tb.srv.ShareFile(tb.alice, slacktest.File{Name: "big.bin", Data: []byte("0123456789"), UnknownSize: true})
	status, ctype, length, body := get(t, shared.URL, tb.srv.BotToken())
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "application/octet-stream", ctype)
	require.EqualValues(t, -1, length, "streamed without a Content-Length")
	require.Equal(t, "0123456789", body)
}
