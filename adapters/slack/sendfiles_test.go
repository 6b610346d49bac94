package slack

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
)

var (
	picture = core.OutboundFile{Kind: core.AttachImage, Name: "cat.png", MIME: "image/png", Data: []byte("\x89PNG fake picture")}
	voice   = core.OutboundFile{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: []byte("OggS fake opus")}
)

// sendFiles sends msg through the adapter's SendFiles.
func (b *testBundle) sendFiles(msg core.OutboundMessage) (core.SendResult, error) {
	ctx, cancel := contextWithTimeout()
	defer cancel()
	return b.adapter.SendFiles(ctx, msg)
}

// fileIDs are the ids of an upload's files.
func fileIDs(up slacktest.Upload) []string {
	ids := make([]string, len(up.Files))
	for i, f := range up.Files {
		ids[i] = f.ID
	}
	return ids
}

func TestSendFilesSharesThemAsOneMessageWithTheCaption(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Format: core.FormatRichText,
		Text: "**Here** you go: <cat> & a voice note", Files: []core.OutboundFile{picture, voice}})
	require.NoError(t, err)

	ups := b.srv.WaitUploads(t, ch, 1, waitFor)
	require.Len(t, ups, 1)
	require.Len(t, ups[0].Files, 2)
	for i, want := range []core.OutboundFile{picture, voice} {
		got := ups[0].Files[i]
		require.Equal(t, want.Name, got.Name)
		require.Equal(t, want.Name, got.Title)
		require.Equal(t, want.Data, got.Data)
	}
	require.Equal(t, "Here you go: <cat> & a voice note", ups[0].Files[0].AltText, "a picture's alt text is its caption")
	require.Empty(t, ups[0].Files[1].AltText)
	shown := markuptest.Slack(ups[0].Comment, true)
	require.Equal(t, "Here you go: <cat> & a voice note", shown.Text)
	require.Equal(t, []string{"Here"}, shown.Styled(markuptest.Bold))
	require.Equal(t, fileIDs(ups[0]), res.PlatformMessageIDs, "the file ids: Slack answers no ts")
	require.Empty(t, b.srv.Sent(ch), "the caption is the files' comment, not a message of its own")

	// Slack echoes the upload into the DM as the bot's file_share.
	id := b.srv.LastEventID()
	requireOnlySentinelAfter(t, b, 1, "the echo of the bot's upload")
	b.srv.WaitAcked(t, id, waitFor)
}

func TestSendFilesPlainCaptionIsEscapedAndAUserIDFindsTheDM(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ada.ID, Text: "a < b & c",
		Files: []core.OutboundFile{{Kind: core.AttachDocument, MIME: "application/json", Data: []byte(`{"a":1}`)}}})
	require.NoError(t, err)

	ups := b.srv.WaitUploads(t, ch, 1, waitFor)
	require.Equal(t, "a &lt; b &amp; c", ups[0].Comment)
	require.Equal(t, "file", ups[0].Files[0].Name, "a file without a name still has one")
}

func TestSendFilesCaptionTooLongOrWithChoicesFollowsAsText(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	long := strings.Repeat("word ", 1000) // 5,000 characters: over a comment

	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Text: long, Files: []core.OutboundFile{picture}})
	require.NoError(t, err)
	ups := b.srv.WaitUploads(t, ch, 1, waitFor)
	require.Empty(t, ups[0].Comment)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2)
	require.Equal(t, len(strings.Fields(long)), len(strings.Fields(sent[0].Text+" "+sent[1].Text)), "the whole caption, split")
	require.Equal(t, append(fileIDs(ups[0]), sent[0].TS, sent[1].TS), res.PlatformMessageIDs)

	_, err = b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Text: "Keep it?", Choices: choicesOf("Yes", "No"),
		Files: []core.OutboundFile{voice}})
	require.NoError(t, err)
	ups = b.srv.WaitUploads(t, ch, 2, waitFor)
	require.Empty(t, ups[1].Comment, "a comment holds no buttons")
	sent = b.srv.WaitSent(t, ch, 3, waitFor)
	require.Equal(t, "Keep it?", sent[2].Text)
	require.NotEmpty(t, sent[2].Blocks, "the buttons came with the caption")
}

func TestSendFilesEmptyFileIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Text: "two",
		Files: []core.OutboundFile{picture, {Kind: core.AttachDocument, Name: "empty.txt"}}})
	require.True(t, core.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, `file 2 of 2 ("empty.txt") is empty`)
	require.Zero(t, b.srv.Calls("files.getUploadURLExternal"), "nothing was sent")
	require.Empty(t, b.srv.Uploads(ch))
}

func TestSendFilesRetriesEveryStep(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.FailNextStatus("files.getUploadURLExternal", http.StatusServiceUnavailable)
	b.srv.FailNextStatus(slacktest.FileUploads, http.StatusBadGateway)
	b.srv.RateLimitNext(slacktest.FileUploads, time.Second)
	b.srv.FailNextStatus("files.completeUploadExternal", http.StatusServiceUnavailable)

	start := time.Now()
	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Text: "through", Files: []core.OutboundFile{picture}})
	require.NoError(t, err)

	ups := b.srv.WaitUploads(t, ch, 1, waitFor)
	require.Len(t, ups, 1, "shared once")
	require.Equal(t, picture.Data, ups[0].Files[0].Data)
	require.Equal(t, fileIDs(ups[0]), res.PlatformMessageIDs)
	require.GreaterOrEqual(t, time.Since(start), time.Second, "Retry-After was honoured")
	require.Equal(t, 2, b.srv.Calls("files.getUploadURLExternal"))
	require.Equal(t, 3, b.srv.Calls(slacktest.FileUploads), "the same upload_url took the bytes")
	require.Equal(t, 2, b.srv.Calls("files.completeUploadExternal"))
}

func TestSendFilesRefusalsArePermanent(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	b.srv.FailNext("files.completeUploadExternal", "not_in_channel")
	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Files: []core.OutboundFile{picture}})
	require.True(t, core.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "the bot is not in this conversation")
	require.Empty(t, res.PlatformMessageIDs)

	b.srv.FailNextStatus(slacktest.FileUploads, http.StatusForbidden)
	_, err = b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Files: []core.OutboundFile{picture}})
	require.True(t, core.IsPermanent(err), "%v", err)
	require.Equal(t, 1, b.srv.Calls("files.completeUploadExternal"), "an upload refused is not shared")
	require.Empty(t, b.srv.Uploads(ch))

	b.srv.FailNext("files.getUploadURLExternal", "invalid_auth")
	_, err = b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Files: []core.OutboundFile{picture}})
	require.ErrorContains(t, err, "invalid_auth")
	require.False(t, core.IsPermanent(err))
}

func TestSendFilesRateLimitPastTheDeadlineIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket, func(a *Adapter) { a.sendTimeout = 500 * time.Millisecond })
	ch := b.greet(t, ada)
	b.srv.RateLimitNext(slacktest.FileUploads, 5*time.Second)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, Files: []core.OutboundFile{picture}})
	require.ErrorContains(t, err, "past the deadline")
	require.False(t, core.IsPermanent(err), "the message is kept for later")
	require.Zero(t, b.srv.Calls("files.completeUploadExternal"))
	require.Empty(t, b.srv.Uploads(ch))
}
