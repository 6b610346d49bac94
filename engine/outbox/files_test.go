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
)

// miso is the picture the replies of these tests carry.
var miso = []core.OutboundFile{{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: []byte("\x89PNG pixels")}}

// crashedReply stores a reply carrying miso as a first process would and
// has that process die in the send (keeping at most kept bytes of files);
// it returns the store, the conversation, the reply and the first
// process's log.
func crashedReply(t *testing.T, kept int64) (*store.Store, core.Conversation, *core.Message, *coretest.Logs) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(t.TempDir(), "parley.db"), KeptFileBytes: kept})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, st.Migrate(ctx))
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: "test", ChannelThreadID: "ann", ChannelUserID: "ann",
		Text: "a picture of Miso, please", Now: t0, PlanRun: true, RunAfter: t0})
	require.NoError(t, err)
	require.NotNil(t, res.Run)

	dying := coretest.NewAdapter("test")
	dying.FailSends(context.DeadlineExceeded)
	logs := &coretest.Logs{}
	o, err := outbox.New(outbox.Config{Adapters: []core.Adapter{dying}, Store: st, Clock: coretest.NewClock(t0),
		Logger: logs.Logger(), Metrics: sentCounter{}})
	require.NoError(t, err)
	reply := &core.Message{ConversationID: res.Conversation.ID, Role: core.RoleAssistant, Content: "Here is Miso.", Source: core.SourceReply}
	reply.AttachFiles(miso)
	slot, err := o.Deliver(ctx, dying, res.Conversation, res.Run.ID, reply)
	require.Error(t, err)
	if slot != nil {
		slot.Give()
	}
	require.NotZero(t, reply.ID, "stored before the send")
	return st, res.Conversation, reply, logs
}

// sendAgain is the next process sending the conversation's unsent reply:
// what reached the platform.
func sendAgain(t *testing.T, st *store.Store, conv core.Conversation) (coretest.Sent, core.Message) {
	t.Helper()
	ctx := context.Background()
	pending, err := st.PendingDeliveries(ctx, conv.ID, -1)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	next := coretest.NewAdapter("test")
	o, err := outbox.New(outbox.Config{Adapters: []core.Adapter{next}, Store: st, Clock: coretest.NewClock(t0),
		Logger: (&coretest.Logs{}).Logger(), Metrics: sentCounter{}})
	require.NoError(t, err)
	release, err := o.Resend(ctx, next, conv, &pending[0])
	require.NoError(t, err)
	release()
	sent := next.Sent()
	require.Len(t, sent, 1)
	return sent[0], pending[0]
}

// A reply with files is stored with their bytes before it is sent and
// reaches a FileSender whole. Should the process die before the send is
// settled, the next one sends the same bytes from the store.
func TestRepliesFilesAreKeptUntilSentAndSentAgainTheSame(t *testing.T) {
	t.Parallel()
	st, conv, reply, _ := crashedReply(t, 0)
	sent, settled := sendAgain(t, st, conv)
	require.Equal(t, "Here is Miso.", sent.Text)
	require.Equal(t, miso, sent.Files, "the same bytes")

	require.NoError(t, st.SettleDelivery(context.Background(), settled))
	kept, err := st.MessageFiles(context.Background(), reply.ID)
	require.NoError(t, err)
	require.Empty(t, kept, "sent: the bytes go")
}

// A reply whose files the store could not keep (store.max_file_bytes) is
// still sent with them, and the log says they are not kept; sent again
// after a crash, it has its text and a line saying the file could not be
// sent again.
func TestRepliesFilesNotKeptAreNamedWhenSentAgain(t *testing.T) {
	t.Parallel()
	st, conv, _, logs := crashedReply(t, 4)
	require.Contains(t, logs.String(), "a reply's files are not kept until it is sent")
	sent, _ := sendAgain(t, st, conv)
	require.Equal(t, "Here is Miso.\n[image \"miso.png\" (11 bytes) could not be sent again after a restart]", sent.Text)
	require.Empty(t, sent.Files)
}
