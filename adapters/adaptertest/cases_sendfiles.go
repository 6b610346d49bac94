package adaptertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// SentFile is a file the bot uploaded to the fake platform, for
// Rig.FilesSent.
type SentFile struct {
	// Kind is how the platform shows it: AttachImage for a picture shown
	// as one, AttachVoice for a voice note, AttachDocument for a file.
	Kind core.AttachmentKind
	// Name and MIME are as the platform received them.
	Name, MIME string
	Data       []byte
	// Caption is the text shown with it, as a user reads it (markup
	// removed); "" for none.
	Caption string
	// PlatformMessageID is the platform's id of the message showing it
	// ("" when Rig.NoMessageIDs).
	PlatformMessageID string
}

// needFileSender skips a case for an adapter or rig that cannot send
// files.
func needFileSender(t *testing.T, rig *Rig) core.FileSender {
	t.Helper()
	fs, ok := rig.Adapter.(core.FileSender)
	if !ok || rig.FilesSent == nil {
		t.Skip("adaptertest: the adapter is not a core.FileSender or the rig has no FilesSent")
	}
	return fs
}

// testSendFiles: a picture, a document and a voice note sent together
// arrive in order, each as its kind with the bytes sent (a picture may be
// re-encoded but stays a picture), the text the first one's caption; the
// result has an id per message made.
func testSendFiles(t *testing.T, rig *Rig) {
	fs := needFileSender(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	format := core.FormatText
	text := "Here are your files."
	if rig.Adapter.Capabilities().RichText {
		format, text = core.FormatRichText, "Here are your **files**."
	}
	files := []core.OutboundFile{
		{Kind: core.AttachImage, Name: "chart.png", MIME: "image/png", Data: pngBytes()},
		{Kind: core.AttachDocument, Name: "notes.txt", MIME: "text/plain", Data: []byte("Shopping list:\n- flour\n")},
		{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: []byte("OggS\x00fake opus voice note")},
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := fs.SendFiles(ctx, core.OutboundMessage{ChannelThreadID: thread, ConversationID: 1,
		IdempotencyKey: fmt.Sprintf("adaptertest-files-%d", h.sends), Text: text, Format: format, Files: files})
	require.NoError(t, err, "adaptertest: SendFiles")
	h.settled(t, thread)

	got := rig.FilesSent(t, thread)
	require.Len(t, got, len(files), "adaptertest: one upload per file")
	for i, f := range got {
		require.Equal(t, files[i].Kind, f.Kind, "file %d shows as its kind", i)
		if f.Kind == core.AttachImage {
			_, _, err := image.Decode(bytes.NewReader(f.Data))
			require.NoError(t, err, "the picture arrives as a picture")
		} else {
			require.Equal(t, files[i].Name, f.Name)
			require.Equal(t, files[i].Data, f.Data, "file %d arrives with its bytes", i)
		}
		if i > 0 {
			require.Empty(t, f.Caption, "the text goes once, with the first file")
		}
		if !rig.NoMessageIDs {
			require.Contains(t, res.PlatformMessageIDs, f.PlatformMessageID, "the result has the id of file %d", i)
		}
	}
	require.Equal(t, "Here are your files.", got[0].Caption)
}
