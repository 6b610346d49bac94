package adaptertest

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// File is a file a user sends in a DM, for Rig.SendFile: the fake stores
// Data where the adapter fetches it from, and describes it the way the
// platform does.
type File struct {
	// Kind is what the user sends: an image (a photo), a voice note, an
	// audio file, a video, a document, a sticker.
	Kind core.AttachmentKind
	// Name and MIME describe it; a platform that does not send a name for
	// the kind (a Telegram photo or voice note) leaves it out.
	Name, MIME string
	Data       []byte
	// Caption is the text sent with it ("" for none).
	Caption string
	// Emoji is a sticker's emoji.
	Emoji string
}

// needFiles skips a case for a rig or adapter without files.
func needFiles(t *testing.T, rig *Rig) core.AttachmentFetcher {
	t.Helper()
	f, ok := rig.Adapter.(core.AttachmentFetcher)
	if !ok || rig.SendFile == nil {
		t.Skip("adaptertest: the adapter is not a core.AttachmentFetcher or the rig has no SendFile")
	}
	return f
}

// fileKinds are the kinds the suite sends; a rig lists the ones its
// platform has in Rig.FileKinds (nil: all of them).
var fileKinds = []File{
	{Kind: core.AttachImage, Name: "cat.png", MIME: "image/png", Data: pngBytes()},
	{Kind: core.AttachVoice, Name: "voice.ogg", MIME: "audio/ogg", Data: []byte("OggS\x00fake opus voice note")},
	{Kind: core.AttachDocument, Name: "notes.txt", MIME: "text/plain", Data: []byte("Shopping list:\n- flour\n- salt\n"), Caption: "my list"},
	{Kind: core.AttachSticker, Name: "sticker.webp", MIME: "image/webp", Data: []byte("RIFF\x00\x00\x00\x00WEBPVP8 fake"), Emoji: "😺"},
}

// testFiles: every kind of file the platform has arrives as one DM with
// one attachment of that kind, its caption as the text, and fetching it
// gives back the bytes the user sent.
func testFiles(t *testing.T, rig *Rig) {
	fetcher := needFiles(t, rig)
	h := begin(t, rig)
	alice := users(rig)[0]
	kinds := rig.FileKinds
	if kinds == nil {
		kinds = []core.AttachmentKind{core.AttachImage, core.AttachVoice, core.AttachDocument, core.AttachSticker}
	}
	for i, kind := range kinds {
		f := fileOf(t, kind)
		thread := rig.SendFile(t, alice, f)
		msgs := h.rec.Wait(t, i+1, waitFor)
		got := msgs[i]
		require.Equal(t, thread, got.ChannelThreadID, "%s: ChannelThreadID", kind)
		require.Equal(t, alice.ID, got.ChannelUserID, "%s: ChannelUserID", kind)
		require.True(t, got.Direct, "%s: Direct", kind)
		require.Equal(t, f.Caption, got.Text, "%s: the caption is the text", kind)
		require.Len(t, got.Attachments, 1, "%s: one attachment", kind)
		a := got.Attachments[0]
		require.Equal(t, kind, a.Kind, "Kind")
		require.NotEmpty(t, a.Ref, "%s: Ref", kind)
		if a.Size != 0 {
			require.EqualValues(t, len(f.Data), a.Size, "%s: Size", kind)
		}
		if kind == core.AttachSticker {
			require.Equal(t, f.Emoji, a.Emoji, "a sticker's emoji")
			continue
		}
		data, err := fetcher.FetchAttachment(context.Background(), a, 1<<20)
		require.NoError(t, err, "%s: FetchAttachment", kind)
		require.True(t, bytes.Equal(f.Data, data), "%s: the bytes fetched are the bytes sent", kind)
		_, err = fetcher.FetchAttachment(context.Background(), a, int64(len(f.Data)-1))
		require.ErrorIs(t, err, core.ErrTooLarge, "%s: a file over max is not fetched", kind)
	}
}

// testFileFetchFails: a fetch the platform fails (after the adapter's
// retries) is an error, never a panic or a hang, and a fetch after it
// works.
func testFileFetchFails(t *testing.T, rig *Rig) {
	fetcher := needFiles(t, rig)
	if rig.FailNextFetch == nil {
		t.Skip("adaptertest: the rig has no FailNextFetch")
	}
	h := begin(t, rig)
	f := fileOf(t, core.AttachDocument)
	rig.SendFile(t, users(rig)[0], f)
	a := h.rec.Wait(t, 1, waitFor)[0].Attachments[0]
	rig.FailNextFetch(t)
	_, err := fetcher.FetchAttachment(context.Background(), a, 1<<20)
	require.Error(t, err, "the platform failed the download")
	require.False(t, errors.Is(err, core.ErrTooLarge))
	data, err := fetcher.FetchAttachment(context.Background(), a, 1<<20)
	require.NoError(t, err, "the next fetch works")
	require.Equal(t, f.Data, data)
}

// fileOf returns the suite's file of kind.
func fileOf(t *testing.T, kind core.AttachmentKind) File {
	t.Helper()
	for _, f := range fileKinds {
		if f.Kind == kind {
			return f
		}
	}
	t.Fatalf("adaptertest: no file of kind %s", kind)
	return File{}
}

// pngBytes is a small real PNG (2×2, red), so a rig's fake may decode it.
func pngBytes() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	draw.Draw(img, img.Bounds(), &image.Uniform{C: color.RGBA{R: 255, A: 255}}, image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // encoding to memory does not fail
	}
	return b.Bytes()
}
