package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// fileOut is a file of a pushed message as the page reads it.
type fileOut struct {
	Kind, Name, MIME, URL string
	Size                  int
}

// Files sent reach the page under their message, each at a URL that
// serves its bytes to that client alone: a picture or audio as itself,
// anything else (an SVG could run script) as a download.
func TestSendFilesReachThePageAndAreServedToTheirClientOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")
	png := []byte("\x89PNG\r\n\x1a\n fake")
	res, err := b.adapter.SendFiles(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: "Here is Miso.",
		Files: []core.OutboundFile{
			{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: png},
			{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: []byte("OggS fake")},
			{Kind: core.AttachImage, Name: "evil.svg", MIME: "image/svg+xml", Data: []byte("<svg onload=alert(1)>")},
		}})
	require.NoError(t, err)
	require.Len(t, res.PlatformMessageIDs, 1)
	ev := s.next(t)
	var m struct {
		ID, Text string
		Files    []fileOut
	}
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &m))
	require.Equal(t, res.PlatformMessageIDs[0], m.ID)
	require.Equal(t, "Here is Miso.", m.Text)
	require.Len(t, m.Files, 3)
	require.Equal(t, fileOut{Kind: "image", Name: "miso.png", MIME: "image/png", URL: m.Files[0].URL, Size: len(png)}, m.Files[0])

	status, h, body := b.get(t, m.Files[0].URL)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, string(png), body)
	require.Equal(t, "image/png", h.Get("Content-Type"))
	require.Equal(t, `inline; filename=miso.png`, h.Get("Content-Disposition"))
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))

	status, h, _ = b.get(t, m.Files[2].URL)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "application/octet-stream", h.Get("Content-Type"), "an SVG is no picture to show inline")
	require.Equal(t, `attachment; filename=evil.svg`, h.Get("Content-Disposition"))

	other := m.Files[0].URL[:len(m.Files[0].URL)-len("client-0001")] + "client-0002"
	status, _, _ = b.get(t, other)
	require.Equal(t, http.StatusNotFound, status, "another client's page gets nothing")
	status, _, _ = b.get(t, "/web/files/0123456789abcdef?client_id=client-0001")
	require.Equal(t, http.StatusNotFound, status)

	// A message of files alone.
	_, err = b.adapter.SendFiles(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001",
		Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "notes.txt", MIME: "text/plain", Data: []byte("notes")}}})
	require.NoError(t, err)
	_, err = b.adapter.SendFiles(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001",
		Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "empty.txt"}}})
	require.True(t, core.IsPermanent(err), "an empty file: %v", err)
}
