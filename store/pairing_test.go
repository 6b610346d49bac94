package store_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// Pairing codes: one a user an hour, approved or denied once, kept per
// bot, and no more than access.MaxPendingCodes waiting on a platform.
func TestPairing(t *testing.T) {
	t.Parallel()
	opens := map[string]func(testing.TB) *store.Store{"sqlite": storetest.OpenSQLite}
	if os.Getenv(postgresEnv) != "" {
		opens["postgres"] = storetest.OpenPostgres
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			ctx := t.Context()
			require.NoError(t, st.Migrate(ctx))
			ada, bob := st.ForBot("ada"), st.ForBot("bob")
			t0 := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)

			p, issued, err := ada.RequestPairing(ctx, "telegram", "42", "42", "Zoe", t0)
			require.NoError(t, err)
			require.True(t, issued)
			require.Len(t, p.Code, 8)
			require.False(t, strings.ContainsAny(p.Code, "0O1I"), p.Code)
			again, issued, err := ada.RequestPairing(ctx, "telegram", "42", "42", "Zoe", t0.Add(30*time.Minute))
			require.NoError(t, err)
			require.False(t, issued, "one code an hour")
			require.Equal(t, p.Code, again.Code)
			other, issued, err := bob.RequestPairing(ctx, "telegram", "42", "42", "Zoe", t0)
			require.NoError(t, err)
			require.True(t, issued, "each bot pairs its own users")
			require.NotEqual(t, p.Code, other.Code)

			paired, err := ada.Paired(ctx, "telegram", "42")
			require.NoError(t, err)
			require.False(t, paired)
			_, err = bob.DecidePairing(ctx, p.Code, true, "cli", t0.Add(time.Minute))
			require.ErrorIs(t, err, core.ErrNotFound, "a bot decides only its own codes")
			got, err := ada.DecidePairing(ctx, strings.ToLower(p.Code[:4])+"-"+p.Code[4:], true, "telegram:1", t0.Add(time.Minute))
			require.NoError(t, err, "the code as a user may type it")
			require.Equal(t, access.Approved, got.Status)
			require.Equal(t, "telegram:1", got.DecidedBy)
			paired, err = ada.Paired(ctx, "telegram", "42")
			require.NoError(t, err)
			require.True(t, paired)
			paired, err = bob.Paired(ctx, "telegram", "42")
			require.NoError(t, err)
			require.False(t, paired, "approved for ada only")
			_, err = ada.DecidePairing(ctx, p.Code, false, "cli", t0.Add(2*time.Minute))
			require.ErrorIs(t, err, core.ErrNotFound, "decided once")

			// Expired: refused; after the hour a new code.
			_, err = st.AllBots().DecidePairing(ctx, other.Code, true, "cli", t0.Add(61*time.Minute))
			require.ErrorIs(t, err, core.ErrNotFound)
			require.ErrorContains(t, err, "codes last an hour")
			renewed, issued, err := bob.RequestPairing(ctx, "telegram", "42", "42", "Zoe", t0.Add(61*time.Minute))
			require.NoError(t, err)
			require.True(t, issued)
			require.NotEqual(t, other.Code, renewed.Code)

			// A flood: codes up to the cap, then none.
			for i := range access.MaxPendingCodes - 1 {
				_, issued, err := bob.RequestPairing(ctx, "telegram", "s"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "t", "", t0.Add(62*time.Minute))
				require.NoError(t, err)
				require.True(t, issued)
			}
			_, _, err = bob.RequestPairing(ctx, "telegram", "one-too-many", "t", "", t0.Add(62*time.Minute))
			require.ErrorIs(t, err, access.ErrFull)
			_, issued, err = bob.RequestPairing(ctx, "discord", "elsewhere", "t", "", t0.Add(62*time.Minute))
			require.NoError(t, err)
			require.True(t, issued, "the cap is per platform")

			waiting, err := bob.Pairings(ctx, t0.Add(62*time.Minute), false)
			require.NoError(t, err)
			require.Len(t, waiting, access.MaxPendingCodes+1)
			all, err := ada.Pairings(ctx, t0.Add(62*time.Minute), true)
			require.NoError(t, err)
			require.Len(t, all, 1)
			require.Equal(t, "Zoe", all[0].DisplayName)

			// An erasure takes who they were let in as too.
			res, err := ada.RecordInbound(ctx, core.InboundRecord{Platform: "telegram", ChannelThreadID: "42", ChannelUserID: "42", Text: "hi", Now: t0})
			require.NoError(t, err)
			_, err = ada.EraseConversation(ctx, res.Conversation.ID, t0.Add(63*time.Minute))
			require.NoError(t, err)
			paired, err = ada.Paired(ctx, "telegram", "42")
			require.NoError(t, err)
			require.False(t, paired)
			all, err = ada.Pairings(ctx, t0.Add(63*time.Minute), true)
			require.NoError(t, err)
			require.Empty(t, all, "their name is gone with it")
		})
	}
}
