package outbox_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// A reply with files is stored with their bytes before it is sent and
// reaches a FileSender whole. Should the process die before the send is
// settled, the next one sends the same bytes from the store.
func TestRepliesFilesAreKeptUntilSentAndSentAgainTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.OpenSQLite(t)
	require.NoError(t, st.Migrate(ctx))
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: "test", ChannelThreadID: "ann", ChannelUserID: "ann",
		Text: "a picture of Miso, please", Now: t0, PlanRun: true, RunAfter: t0})
	require.NoError(t, err)
	conv := res.Conversation
	require.NotNil(t, res.Run)
	files := []core.OutboundFile{{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: []byte("\x89PNG pixels")}}

	// The first process: stored as sending, then it dies in the send.
	dying := coretest.NewAdapter("test")
	dying.FailSends(context.DeadlineExceeded)
	o, err := outbox.New(outbox.Config{Adapters: []core.Adapter{dying}, Store: st, Clock: coretest.NewClock(t0),
		Logger: (&coretest.Logs{}).Logger(), Metrics: sentCounter{}})
	require.NoError(t, err)
	reply := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Content: "Here is Miso.", Source: core.SourceReply}
	reply.AttachFiles(files)
	slot, err := o.Deliver(ctx, dying, conv, res.Run.ID, reply)
	require.Error(t, err)
	if slot != nil {
		slot.Give()
	}
	require.NotZero(t, reply.ID, "stored before the send")

	// The next process finds it unsent, with its files, and sends them.
	pending, err := st.PendingDeliveries(ctx, conv.ID, -1)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	next := coretest.NewAdapter("test")
	o2, err := outbox.New(outbox.Config{Adapters: []core.Adapter{next}, Store: st, Clock: coretest.NewClock(t0),
		Logger: (&coretest.Logs{}).Logger(), Metrics: sentCounter{}})
	require.NoError(t, err)
	release, err := o2.Resend(ctx, next, conv, &pending[0])
	require.NoError(t, err)
	release()
	sent := next.Sent()
	require.Len(t, sent, 1)
	require.Equal(t, "Here is Miso.", sent[0].Text)
	require.Equal(t, files, sent[0].Files, "the same bytes")

	require.NoError(t, st.SettleDelivery(ctx, pending[0]))
	kept, err := st.MessageFiles(ctx, reply.ID)
	require.NoError(t, err)
	require.Empty(t, kept, "sent: the bytes go")
}

// A reply whose files the store could not keep (store.max_file_bytes) is
// still sent with them, and the log says they are not kept; sent again
// after a crash, it has its text and a line saying the file could not be
// sent again.
func TestRepliesFilesNotKeptAreNamedWhenSentAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(t.TempDir(), "parley.db"), KeptFileBytes: 4})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, st.Migrate(ctx))
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: "test", ChannelThreadID: "ann", ChannelUserID: "ann",
		Text: "a picture of Miso, please", Now: t0, PlanRun: true, RunAfter: t0})
	require.NoError(t, err)
	conv := res.Conversation
	files := []core.OutboundFile{{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: []byte("\x89PNG pixels")}}

	dying := coretest.NewAdapter("test")
	dying.FailSends(context.DeadlineExceeded)
	logs := &coretest.Logs{}
	o, err := outbox.New(outbox.Config{Adapters: []core.Adapter{dying}, Store: st, Clock: coretest.NewClock(t0),
		Logger: logs.Logger(), Metrics: sentCounter{}})
	require.NoError(t, err)
	reply := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Content: "Here is Miso.", Source: core.SourceReply}
	reply.AttachFiles(files)
	slot, err := o.Deliver(ctx, dying, conv, res.Run.ID, reply)
	require.Error(t, err)
	if slot != nil {
		slot.Give()
	}
	require.Contains(t, logs.String(), "a reply's files are not kept until it is sent")

	pending, err := st.PendingDeliveries(ctx, conv.ID, -1)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	next := coretest.NewAdapter("test")
	o2, err := outbox.New(outbox.Config{Adapters: []core.Adapter{next}, Store: st, Clock: coretest.NewClock(t0),
		Logger: (&coretest.Logs{}).Logger(), Metrics: sentCounter{}})
	require.NoError(t, err)
	release, err := o2.Resend(ctx, next, conv, &pending[0])
	require.NoError(t, err)
	release()
	sent := next.Sent()
	require.Len(t, sent, 1)
	require.Equal(t, "Here is Miso.\n[image \"miso.png\" (11 bytes) could not be sent again after a restart]", sent[0].Text)
	require.Empty(t, sent[0].Files)
}
