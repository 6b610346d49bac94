package store_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// TestRetentionWalksMessagesCreated checks that DeleteMessagesBefore finds
// the oldest messages by messages_created, in its order (no sort of every
// old message), a bot's checked by its conversation's key, in a store of
// 20,000 messages whose statistics the planner has: when a tenth of them
// is old, and when most are (retention just turned on).
func TestRetentionWalksMessagesCreated(t *testing.T) {
	t.Parallel()
	opens := map[string]func(t *testing.T) *store.Store{"sqlite": openSQLite}
	if os.Getenv(postgresEnv) != "" {
		opens["postgres"] = func(t *testing.T) *store.Store { return storetest.OpenPostgres(t) }
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			require.NoError(t, st.Migrate(t.Context()))
			require.NoError(t, storetest.SeedLarge(t.Context(), st, 20_000, 0))
			now := time.Now()
			for _, before := range []time.Time{now.Add(-storetest.SeedSpan * 9 / 10), now.Add(-storetest.SeedSpan / 10)} {
				for _, view := range []*store.Store{st, st.AllBots()} {
					plan, err := store.RetentionPlan(t.Context(), view, before)
					require.NoError(t, err)
					require.Regexp(t, `(?i)(SEARCH m USING INDEX|Index Scan using) messages_created`, plan, plan)
					require.NotContains(t, plan, "TEMP B-TREE", plan)
					require.NotContains(t, plan, "Sort", plan)
					if view.Bot() != "" {
						require.Regexp(t, `SEARCH c USING .*\bid=\?|Index Scan using conversations_(pkey|bot) on conversations c`, plan, plan)
					}
					if view.Driver() == store.DriverPostgres {
						require.Regexp(t, `Index Scan using messages_pkey on messages\s`, plan, "the delete finds the rows by key")
					}
				}
			}
		})
	}
}
