package store_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// lockedBuffer is a log sink the store's goroutines may write at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// At debug level the SQL log shows statements, never a user's words or
// the bot's reply bound to them.
func TestDebugLogHoldsNoMessageText(t *testing.T) {
	t.Parallel()
	drivers := map[string]string{store.DriverSQLite: filepath.Join(t.TempDir(), "debug.db")}
	if os.Getenv(postgresEnv) != "" {
		drivers[store.DriverPostgres] = storetest.PostgresDSN(t)
	}
	for driver, dsn := range drivers {
		t.Run(driver, func(t *testing.T) {
			var out lockedBuffer
			log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
			st, err := store.Open(t.Context(), store.Options{Driver: driver, DSN: dsn, Logger: log})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			require.NoError(t, st.Migrate(t.Context()))
			now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			secret := fmt.Sprintf("my diagnosis is %s-private", driver)
			res, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: "telegram", ChannelThreadID: "42",
				ChannelUserID: "42", DisplayName: "Ann Private", Text: secret, Now: now, PlanRun: true})
			require.NoError(t, err)
			require.NoError(t, st.AppendMessage(t.Context(), &core.Message{ConversationID: res.Conversation.ID,
				Role: core.RoleAssistant, Content: "reply-" + secret, Source: core.SourceReply, CreatedAt: now}))
			_, err = st.SearchMessages(t.Context(), res.Conversation.ID, "diagnosis", 5)
			require.NoError(t, err)

			logged := out.String()
			require.Contains(t, logged, "INSERT INTO", "the statements are logged")
			require.NotContains(t, logged, "diagnosis")
			require.NotContains(t, logged, "Ann Private")
		})
	}
}
