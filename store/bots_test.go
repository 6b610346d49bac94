package store_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// TestBotClaimsUseTheirIndexes: a bot's run claim walks
// runs_bot_queued_due and its job claim jobs_bot_status_due, so one bot's
// claim never walks another bot's backlog.
func TestBotClaimsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	opens := map[string]func(testing.TB) *store.Store{"sqlite": storetest.OpenSQLite}
	if os.Getenv(postgresEnv) != "" {
		opens["postgres"] = storetest.OpenPostgres
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			require.NoError(t, st.Migrate(t.Context()))
			runs, jobs, err := store.ClaimPlans(t.Context(), st.ForBot("ada"), time.Now())
			require.NoError(t, err)
			t.Logf("run claim:\n%s\njob claim:\n%s", runs, jobs)
			require.Contains(t, runs, "runs_bot_queued_due", runs)
			require.Contains(t, jobs, "jobs_bot_status_due", jobs)
		})
	}
}
