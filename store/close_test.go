package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// Closing twice (a deferred Close after an explicit one, a shutdown path
// that runs twice) is harmless: the second call returns the first's
// result, on either driver, and so does closing another bot's view of
// the same database.
func TestCloseTwice(t *testing.T) {
	opens := map[string]func(t testing.TB) *store.Store{
		"sqlite": func(t testing.TB) *store.Store {
			st, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(t.TempDir(), "twice.db")})
			require.NoError(t, err)
			return st
		},
		"postgres": storetest.OpenPostgres,
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			require.NoError(t, st.Close())
			require.NotPanics(t, func() { require.NoError(t, st.Close()) })
			require.NotPanics(t, func() { require.NoError(t, st.ForBot("other").Close()) })
		})
	}
}
