package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/store/storetest"
)

// Telegram gives updates to one getUpdates consumer: a second replica on
// the same PostgreSQL refuses to poll, says why, and polls once the
// first is gone.
func TestOnlyOneReplicaPollsTelegram(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dsn := storetest.PostgresDSN(t)
	fake := telegramtest.NewServer(t)
	path := b.writeConfigFor(t, "postgres", dsn, fmt.Sprintf(`adapters:
  web: {enabled: false}
  telegram:
    token: "%s"
    api_url: "%s"
`, fake.Token(), fake.URL()))
	cfg, err := config.Load(path, b.lookup)
	require.NoError(t, err)
	replica := func() (*app, *coretest.Logs, error) {
		logs := &coretest.Logs{}
		a, err := buildApp(context.Background(), cfg, logs.Logger(), appOptions{
			wantAdapter: func(_ string, enabled bool) bool { return enabled },
		})
		require.NoError(t, err)
		return a, logs, a.start(context.Background())
	}
	first, _, err := replica()
	require.NoError(t, err)
	second, logs, err := replica()
	require.ErrorContains(t, err, "another replica already holds telegram-polling:")
	require.ErrorContains(t, err, "mode: webhook")
	require.NotContains(t, err.Error(), fake.Token(), "the token is not in the lock's name")
	require.NotContains(t, logs.String(), fake.Token())
	require.NoError(t, second.stop())

	require.NoError(t, first.stop())
	third, _, err := replica()
	require.NoError(t, err, "the lock went with the first replica")
	require.NoError(t, third.stop())
}
