package upload

import (
	"bytes"
	"log/slog"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestPrepareGroupsFilesAsDiscordTakesThem(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s := Sender{Log: slog.New(slog.NewTextHandler(&log, nil))}
	var files []core.OutboundFile
	for i := range 12 {
		files = append(files, core.OutboundFile{Kind: core.AttachDocument, Name: strconv.Itoa(i) + ".txt", Data: []byte("x")})
	}
	files = append(files[:11:11], core.OutboundFile{Kind: core.AttachVoice, Data: oggOpus(1, []byte{1})}, files[11])

	parts, err := s.prepare(files)
	require.NoError(t, err)
	require.Len(t, parts, 4, "ten files, one, the voice note alone, one")
	require.Len(t, parts[0].files, 10)
	require.Len(t, parts[1].files, 1)
	require.NotNil(t, parts[2].voice)
	require.Equal(t, "voice-message.ogg", parts[2].files[0].Name, "a name when it has none")
	require.Equal(t, "audio/ogg", parts[2].files[0].MIME)
	require.Equal(t, "11.txt", parts[3].files[0].Name)
	require.Equal(t, "application/octet-stream", parts[3].files[0].MIME)
	require.Empty(t, log.String())

	_, err = s.prepare(nil)
	require.True(t, core.IsPermanent(err), "no files is not a send")
	_, err = s.prepare([]core.OutboundFile{{Kind: core.AttachImage, Name: "x.png", Data: make([]byte, Limit+1)}})
	var pe *core.PermanentError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, pe.Reason, `"x.png"`)
	require.Contains(t, pe.Reason, "could not be scaled", "a picture that is not one")
}
