//go:build linux

package soak

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/store"
)

// inDoubtOf reads the replies a frozen process may have sent without
// recording it: those stored as sending by its own runs, and those of a
// dead run it is sending again (the turn it is running in their
// conversation resends them first). Replies still waiting for a doubt
// slot are among them; they make the set larger, never smaller.
func inDoubtOf(t testing.TB, st *store.Store, ownerPrefix string) map[string]bool {
	t.Helper()
	rows, err := st.DB().Raw(`SELECT m.content FROM messages m WHERE m.delivery = 'sending' AND (
			EXISTS (SELECT 1 FROM runs x WHERE x.id = m.run_id AND x.owner LIKE ?)
			OR EXISTS (SELECT 1 FROM runs y WHERE y.conversation_id = m.conversation_id AND y.status = 'running' AND y.owner LIKE ?))`,
		ownerPrefix+"%", ownerPrefix+"%").Rows()
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var c string
		require.NoError(t, rows.Scan(&c))
		out[c] = true
	}
	require.NoError(t, rows.Err())
	return out
}

// countRepeats is how many copies beyond the first reached a chat.
func countRepeats(copies map[string]int) int {
	n := 0
	for _, c := range copies {
		n += max(0, c-1)
	}
	return n
}

// chargeRepeats tells whether every repeat of a reply can be charged to
// a kill that had it in doubt, no kill charged more than perKill (a
// process holds at most scheduler.max_sends_in_doubt sends unrecorded at
// once, and each causes at most one repeat) and no kill charged twice for
// one reply. It returns the replies whose repeats could not be charged.
// A reply sent again by a process that is then killed too is in doubt at
// both kills, so charging is a matching (Kuhn's augmenting paths), not a
// count per kill.
func chargeRepeats(copies map[string]int, kills []map[string]bool, perKill int) []string {
	type unit struct{ reply string }
	var units []unit
	var replies []string
	for reply := range copies {
		replies = append(replies, reply)
	}
	sort.Strings(replies)
	for _, reply := range replies {
		for range copies[reply] - 1 {
			units = append(units, unit{reply})
		}
	}
	// slot s is kill s/perKill; owner[s] is the unit charged to it.
	owner := make([]int, len(kills)*perKill)
	for i := range owner {
		owner[i] = -1
	}
	// fits reports whether unit u may take slot s: its reply was in doubt
	// at that kill and no other slot of the kill holds the same reply.
	fits := func(u, s int) bool {
		k := s / perKill
		if !kills[k][units[u].reply] {
			return false
		}
		for j := k * perKill; j < (k+1)*perKill; j++ {
			if j != s && owner[j] >= 0 && units[owner[j]].reply == units[u].reply {
				return false
			}
		}
		return true
	}
	var try func(u int, seen []bool) bool
	try = func(u int, seen []bool) bool {
		for s := range owner {
			if seen[s] || !fits(u, s) {
				continue
			}
			seen[s] = true
			if owner[s] < 0 || try(owner[s], seen) {
				owner[s] = u
				return true
			}
		}
		return false
	}
	var uncharged []string
	for u := range units {
		if !try(u, make([]bool, len(owner))) {
			uncharged = append(uncharged, units[u].reply)
		}
	}
	return uncharged
}

func TestChargeRepeats(t *testing.T) {
	k := func(replies ...string) map[string]bool {
		m := map[string]bool{}
		for _, r := range replies {
			m[r] = true
		}
		return m
	}
	// Kill 1 had a-f in doubt; kill 2 caught b and c sent again: b and c
	// were repeated twice, a and d once. 6 repeats, 4 per kill fit.
	require.Empty(t, chargeRepeats(map[string]int{"a": 2, "b": 3, "c": 3, "d": 2, "e": 1},
		[]map[string]bool{k("a", "b", "c", "d", "e", "f"), k("b", "c")}, 4))
	// Five repeats that only one kill explains do not fit in 4.
	require.Len(t, chargeRepeats(map[string]int{"a": 2, "b": 2, "c": 2, "d": 2, "e": 2},
		[]map[string]bool{k("a", "b", "c", "d", "e")}, 4), 1)
	// One kill cannot repeat one reply twice.
	require.Equal(t, []string{"a"}, chargeRepeats(map[string]int{"a": 3}, []map[string]bool{k("a")}, 4))
	// A repeat no kill had in doubt is never charged.
	require.Equal(t, []string{"z"}, chargeRepeats(map[string]int{"z": 2}, []map[string]bool{k("a")}, 4))
}
