package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// A reply's files are kept with it from when it is stored as sending: a
// process that takes over its unsent replies gets the same bytes. Once it
// is sent (or failed: nothing sends it again) they go, and its metadata
// still describes them. A message stored after its send (a notice) keeps
// none.
func testMessageFilesKeptUntilSent(t *testing.T, open Opener) {
	b := setup(t, open)
	in := b.inbound(t, "ann", "a picture of Miso, please", b.t0, false)
	conv := in.Conversation.ID
	pic := []byte("\x89PNG\r\n\x1a\n\x00\xffpixels")
	files := []core.OutboundFile{
		{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: pic},
		{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: []byte("OggS\x00voice")},
	}
	reply := &core.Message{ConversationID: conv, Role: core.RoleAssistant, Content: "Here is Miso.", Source: core.SourceReply,
		Delivery: core.DeliverySending, CreatedAt: b.at(time.Second)}
	reply.AttachFiles(files)
	require.NoError(t, b.st.AppendMessage(b.ctx, reply))

	pending, err := b.st.PendingDeliveries(b.ctx, conv, 0)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, files, pending[0].Files, "the same bytes for a send after a crash")

	kept, err := b.st.MessageFiles(b.ctx, reply.ID)
	require.NoError(t, err)
	require.Equal(t, files, kept)
	reply.Delivery = core.DeliverySent
	require.NoError(t, b.st.SettleDelivery(b.ctx, *reply))
	kept, err = b.st.MessageFiles(b.ctx, reply.ID)
	require.NoError(t, err)
	require.Empty(t, kept, "sent: the bytes go")

	failed := &core.Message{ConversationID: conv, Role: core.RoleAssistant, Content: "And again.", Source: core.SourceReply,
		Delivery: core.DeliverySending, CreatedAt: b.at(time.Second)}
	failed.AttachFiles(files)
	require.NoError(t, b.st.AppendMessage(b.ctx, failed))
	failed.Delivery = core.DeliveryFailed
	require.NoError(t, b.st.SettleDelivery(b.ctx, *failed))
	kept, err = b.st.MessageFiles(b.ctx, failed.ID)
	require.NoError(t, err)
	require.Empty(t, kept, "failed: the bytes go too")
	msgs, err := b.st.RecentMessages(b.ctx, conv, 10)
	require.NoError(t, err)
	described := msgs[len(msgs)-2].Metadata[core.FilesKey]
	require.Len(t, described, 2, "the metadata still describes them")
	require.Equal(t, "miso.png", described.([]any)[0].(map[string]any)["name"])

	notice := &core.Message{ConversationID: conv, Role: core.RoleAssistant, Content: "Your export.", Source: core.SourceCommand,
		CreatedAt: b.at(2 * time.Second)}
	notice.AttachFiles(files[:1])
	require.NoError(t, b.st.AppendMessage(b.ctx, notice))
	kept, err = b.st.MessageFiles(b.ctx, notice.ID)
	require.NoError(t, err)
	require.Empty(t, kept, "a message stored after its send keeps nothing")
}
