package adaptertest

import (
	"context"
	"fmt"
	"mime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// SentFile is a file the bot uploaded to the fake platform, for
// Rig.FilesSent.
type SentFile struct {
	// Kind is how the platform shows it: AttachImage for a picture shown
	// as one, AttachVoice for a voice note, AttachAudio for audio with a
	// player, AttachDocument for a file to download.
	Kind core.AttachmentKind
	// Name and MIME are as the platform received them; MIME "" when the
	// platform keeps none (the terminal).
	Name, MIME string
	Data       []byte
	// Caption is the text shown with it, as a user reads it (markup
	// removed); "" for none. A message of several files shows its text
	// once: it is the first file's caption.
	Caption string
	// CaptionShown is the caption as the platform renders its markup
	// (adapters/markup/markuptest); nil when the rig cannot tell.
	CaptionShown *markuptest.Rendered
	// Seconds is a voice note's length as the platform shows it, for
	// Rig.VoiceLength.
	Seconds float64
	// PlatformMessageID is the platform's id of the message showing it
	// (with Rig.FileIDs, the file's own id; "" when Rig.NoMessageIDs).
	PlatformMessageID string
}

// needFileSender returns rig's adapter as a core.FileSender, skipping the
// case for an adapter that is not one. A FileSender whose rig has no
// FilesSent fails: its files would go unchecked.
func needFileSender(t *testing.T, rig *Rig) core.FileSender {
	t.Helper()
	fs, ok := rig.Adapter.(core.FileSender)
	if !ok {
		t.Skip("adaptertest: the adapter is not a core.FileSender")
	}
	require.NotNil(t, rig.FilesSent, "adaptertest: the adapter is a core.FileSender: its Rig needs FilesSent")
	return fs
}

// The files SendFiles sends: the voice note is real Ogg Opus (a platform
// may read its length), 20 ms a character of voiceSaid (ASCII).
const (
	voiceSaid    = "Your files are ready, and so is this voice note."
	voiceSeconds = float64(len(voiceSaid)) * 0.020
	filesCaption = "Here are your files."
)

func filesToSend() []core.OutboundFile {
	return []core.OutboundFile{
		{Kind: core.AttachImage, Name: "chart.png", MIME: "image/png", Data: pngBytes()},
		{Kind: core.AttachDocument, Name: "notes.txt", MIME: "text/plain", Data: []byte("Shopping list:\n- flour\n")},
		{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: llmtest.OggOpus(voiceSaid)},
	}
}

// testSendFiles: a picture, a document and a voice note sent together
// arrive in order, each as the platform shows its kind, with its name,
// type and bytes (a small picture is not scaled); the text is the first
// one's caption and is shown nowhere else; the result has one id per
// message made, in order.
func testSendFiles(t *testing.T, rig *Rig) {
	fs := needFileSender(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	rich := rig.Adapter.Capabilities().RichText
	format, text := core.FormatText, filesCaption
	if rich {
		format, text = core.FormatRichText, "Here are your **files**."
	}
	files := filesToSend()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	h.sends++
	res, err := fs.SendFiles(ctx, core.OutboundMessage{ChannelThreadID: thread, ConversationID: 1,
		IdempotencyKey: fmt.Sprintf("adaptertest-files-%d", h.sends), Text: text, Format: format, Files: files})
	require.NoError(t, err, "adaptertest: SendFiles")
	sent := h.settled(t, thread)

	got := rig.FilesSent(t, thread)
	require.Len(t, got, len(files), "adaptertest: one upload per file")
	for i, f := range got {
		checkSentFile(t, rig, i, files[i], f)
	}
	require.Equal(t, filesCaption, got[0].Caption, "the text is the first file's caption")
	if shown := got[0].CaptionShown; rich && shown != nil {
		require.Equal(t, filesCaption, shown.Text, "the caption shows without its markup")
		require.True(t, shown.Has(markuptest.Bold, "files"), "the caption keeps its formatting: %+v", shown)
	}
	checkCaptionOnce(t, rig, sent, got)
	checkFileIDs(t, rig, res, got)
}

// checkSentFile checks file i as the platform shows it against what was
// sent.
func checkSentFile(t *testing.T, rig *Rig, i int, sent core.OutboundFile, got SentFile) {
	t.Helper()
	kind := sent.Kind
	if kind == core.AttachVoice && rig.VoiceAs != "" {
		kind = rig.VoiceAs
	}
	require.Equal(t, kind, got.Kind, "file %d (%s) shows as a %s", i, sent.Name, kind)
	require.Equal(t, sent.Name, got.Name, "file %d keeps its name", i)
	require.Equal(t, sent.Data, got.Data, "file %d arrives with its bytes", i)
	if got.MIME != "" {
		typ, _, err := mime.ParseMediaType(got.MIME)
		require.NoError(t, err, "file %d's type %q", i, got.MIME)
		require.Equal(t, sent.MIME, typ, "file %d keeps its type", i)
	}
	if i > 0 {
		require.Empty(t, got.Caption, "the text goes once, with the first file (file %d has it too)", i)
	}
	if sent.Kind == core.AttachVoice && rig.VoiceLength {
		require.InDelta(t, voiceSeconds, got.Seconds, 0.05, "the voice note shows its length")
	}
}

// checkCaptionOnce requires that no text message repeats the caption: at
// most one message delivered says it, and that one shows the files.
func checkCaptionOnce(t *testing.T, rig *Rig, sent []Sent, got []SentFile) {
	t.Helper()
	fileMessages := map[string]bool{}
	for _, f := range got {
		fileMessages[f.PlatformMessageID] = true
	}
	var saying []Sent
	for _, s := range sent {
		if strings.Contains(s.Text, "Here are your") {
			saying = append(saying, s)
		}
	}
	require.LessOrEqual(t, len(saying), 1, "the text is shown once: %+v", saying)
	if len(saying) == 0 {
		return
	}
	if rig.NoMessageIDs {
		// No ids to match: the message saying it must show the files.
		require.Contains(t, saying[0].Text, got[0].Name, "the text is the files' caption, not a message of its own")
		return
	}
	require.True(t, fileMessages[saying[0].PlatformMessageID], "the text is the files' caption, not a message of its own: %+v", saying[0])
}

// checkFileIDs requires the result to hold one id per message the files
// made (Rig.FileIDs: per file), in order, and nothing else.
func checkFileIDs(t *testing.T, rig *Rig, res core.SendResult, got []SentFile) {
	t.Helper()
	seen := map[string]bool{}
	for i, id := range res.PlatformMessageIDs {
		require.NotEmpty(t, id, "adaptertest: SendResult id %d is empty", i)
		require.False(t, seen[id], "adaptertest: SendResult id %q repeats", id)
		seen[id] = true
	}
	if rig.NoMessageIDs {
		require.NotEmpty(t, res.PlatformMessageIDs, "adaptertest: SendResult needs the id of the message the files made")
		return
	}
	var want []string
	for _, f := range got {
		if rig.FileIDs || len(want) == 0 || want[len(want)-1] != f.PlatformMessageID {
			want = append(want, f.PlatformMessageID)
		}
	}
	require.Equal(t, want, res.PlatformMessageIDs, "adaptertest: SendResult holds one id per message the files made, in order")
}
