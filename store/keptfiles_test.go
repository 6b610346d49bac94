package store_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// store.max_file_bytes: the files of replies in flight are kept up to
// the cap; a reply whose files would pass it is stored unkept, marked
// core.FilesNotKeptKey (and its metadata still describes them); once a
// reply is sent its bytes make room again. A negative cap keeps none.
func TestKeptFilesStayUnderTheCap(t *testing.T) {
	t.Parallel()
	drivers := map[string]func(t *testing.T) (string, string){
		"SQLite": func(t *testing.T) (string, string) {
			return store.DriverSQLite, filepath.Join(t.TempDir(), "parley.db")
		},
		"Postgres": func(t *testing.T) (string, string) {
			return store.DriverPostgres, storetest.PostgresDSN(t)
		},
	}
	for name, where := range drivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			driver, dsn := where(t)
			st := openCapped(t, driver, dsn, 100)
			conv := newConversation(t, st)
			first := appendWithFile(t, st, conv, 60)
			second := appendWithFile(t, st, conv, 60)
			require.Nil(t, first.Metadata[core.FilesNotKeptKey])
			require.Len(t, keptOf(t, st, first), 1)
			require.Equal(t, true, second.Metadata[core.FilesNotKeptKey], "60 more would pass 100")
			require.Empty(t, keptOf(t, st, second))
			pending, err := st.PendingDeliveries(t.Context(), conv, 0)
			require.NoError(t, err)
			require.Len(t, pending, 2)
			require.Equal(t, true, pending[1].Metadata[core.FilesNotKeptKey], "marked in the database")
			require.Len(t, core.FilesOf(pending[1]), 1, "and still described")
			require.Empty(t, pending[1].Files)

			first.Delivery = core.DeliverySent
			require.NoError(t, st.SettleDelivery(t.Context(), *first))
			third := appendWithFile(t, st, conv, 60)
			require.Len(t, keptOf(t, st, third), 1, "the sent reply made room")

			none := openCapped(t, driver, dsn, -1)
			fourth := appendWithFile(t, none, conv, 1)
			require.Equal(t, true, fourth.Metadata[core.FilesNotKeptKey], "a negative cap keeps none")
		})
	}
}

func openCapped(t *testing.T, driver, dsn string, capBytes int64) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), store.Options{Driver: driver, DSN: dsn, KeptFileBytes: capBytes})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, st.Migrate(t.Context()))
	return st
}

func newConversation(t *testing.T, st *store.Store) int64 {
	t.Helper()
	res, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: "telegram", ChannelThreadID: "42", ChannelUserID: "42",
		Text: "send me a picture", Now: time.Now().UTC()})
	require.NoError(t, err)
	return res.Conversation.ID
}

// appendWithFile stores a reply waiting to be sent with one file of size
// bytes.
func appendWithFile(t *testing.T, st *store.Store, conv int64, size int) *core.Message {
	t.Helper()
	m := &core.Message{ConversationID: conv, Role: core.RoleAssistant, Content: "Here.", Source: core.SourceReply,
		Delivery: core.DeliverySending, CreatedAt: time.Now().UTC()}
	m.AttachFiles([]core.OutboundFile{{Kind: core.AttachImage, Name: "p.png", MIME: "image/png", Data: make([]byte, size)}})
	require.NoError(t, st.AppendMessage(t.Context(), m))
	return m
}

func keptOf(t *testing.T, st *store.Store, m *core.Message) []core.OutboundFile {
	t.Helper()
	files, err := st.MessageFiles(t.Context(), m.ID)
	require.NoError(t, err)
	return files
}
