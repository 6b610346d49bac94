package discordtest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
)

// get downloads rawURL without credentials, on a connection it closes
// (so no idle connection outlives the test for goleak to find).
func get(t *testing.T, rawURL string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

func TestSendFilesDispatchesAttachmentsAndServesThem(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)
	ch, id := tb.srv.SendFiles(tb.alice, "two files",
		discordtest.File{Filename: "a.txt", ContentType: "text/plain", Data: []byte("hello")},
		discordtest.File{Filename: "b c.bin", Data: []byte{1, 2, 3}})
	m := receive(t, c.creates)
	require.Equal(t, id, m.ID)
	require.Equal(t, ch, m.ChannelID)
	require.Equal(t, "two files", m.Content)
	require.Len(t, m.Attachments, 2)
	a := m.Attachments[0]
	require.Equal(t, "a.txt", a.Filename)
	require.Equal(t, "text/plain", a.ContentType)
	require.Equal(t, 5, a.Size)
	require.True(t, strings.HasPrefix(a.URL, tb.srv.URL()+"/attachments/"+ch+"/"+a.ID+"/a.txt?ex="), a.URL)
	require.Contains(t, a.URL, "&hm=")

	status, typ, body := get(t, a.URL)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "text/plain", typ)
	require.Equal(t, "hello", string(body))
	status, _, body = get(t, m.Attachments[1].URL)
	require.Equal(t, http.StatusOK, status, "a name with a space is served")
	require.Equal(t, []byte{1, 2, 3}, body)

	status, _, _ = get(t, tb.srv.URL()+"/attachments/"+ch+"/1/missing.txt")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, 3, tb.srv.Calls("cdn"))
	downloads := tb.srv.Downloads()
	require.Len(t, downloads, 3)
	require.Equal(t, "/attachments/"+ch+"/"+a.ID+"/a.txt", downloads[0].Path)
	require.Empty(t, downloads[0].Authorization)
}

func TestSendVoiceMessageAndSticker(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)
	tb.srv.SendVoiceMessage(tb.alice, discordtest.File{Data: []byte("OggS"), DurationSecs: 2.5})
	m := receive(t, c.creates)
	require.Empty(t, m.Content)
	require.NotZero(t, m.Flags&discordgo.MessageFlagsIsVoiceMessage)
	require.Len(t, m.Attachments, 1)
	require.Equal(t, "voice-message.ogg", m.Attachments[0].Filename)
	require.Equal(t, "audio/ogg", m.Attachments[0].ContentType)
	require.InDelta(t, 2.5, m.Attachments[0].DurationSecs, 0.001)

	tb.srv.SendSticker(tb.alice, "", discordtest.Sticker{ID: "700000000000000001", Name: "Wave", FormatType: discordtest.StickerGIF, Data: []byte("GIF89a")})
	m = receive(t, c.creates)
	require.Len(t, m.StickerItems, 1)
	require.Equal(t, "Wave", m.StickerItems[0].Name)
	require.Equal(t, discordgo.StickerFormatTypeGIF, m.StickerItems[0].FormatType)
	status, typ, body := get(t, tb.srv.URL()+"/stickers/700000000000000001.gif")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "image/gif", typ)
	require.Equal(t, "GIF89a", string(body))
}

func TestFailNextDownloads(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)
	tb.srv.SendFiles(tb.alice, "", discordtest.File{Filename: "a.txt", Data: []byte("x")})
	u := receive(t, c.creates).Attachments[0].URL
	tb.srv.FailNextDownloads(2)
	for range 2 {
		status, _, _ := get(t, u)
		require.Equal(t, http.StatusInternalServerError, status)
	}
	status, _, body := get(t, u)
	require.Equal(t, http.StatusOK, status, "served again after the faults")
	require.Equal(t, "x", string(body))
}
