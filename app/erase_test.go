package app

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
)

// /erase through parley run on Telegram: the user confirms with the
// button, is told it is done, and none of their words remain in the
// SQLite database or its WAL, while another user's do; the audit keeps
// that it happened. Then "/erase confirm" typed does it too.
func TestEraseThroughParleyRun(t *testing.T) {
	t.Parallel()
	b, tg, r := startWithEve(t, "my word is quokka-eve-77")
	tg.SendPrivate(ada, "remember pangolin-ada-42 for me")
	tg.WaitSent(t, ada.ID, 1, waitFor)

	tg.SendPrivate(ada, "/erase")
	ask := tg.WaitSent(t, ada.ID, 2, waitFor)[1]
	require.Contains(t, ask.Plain, "This deletes everything I keep about you")
	buttons := tg.Buttons(ada.ID, ask.MessageID)
	require.Len(t, buttons, 2)
	require.Equal(t, "Erase everything", buttons[0][0].Text)
	require.Equal(t, "Keep it", buttons[1][0].Text)
	_, err := tg.Tap(ada, ask.MessageID, buttons[0][0].Data)
	require.NoError(t, err)
	done := tg.WaitSent(t, ada.ID, 3, waitFor)[2]
	require.Contains(t, done.Plain, "everything I kept about you is deleted")

	// The database as a file: the marker of Ada's nowhere, Eve's there.
	require.Eventually(t, func() bool {
		var n int
		st := b.openStoreFile(t)
		return st.DB().Raw(`SELECT count(*) FROM erasures`).Scan(&n).Error == nil && n == 1
	}, waitFor, 20*time.Millisecond)
	r.stop(t)
	var all []byte
	for _, suffix := range []string{"", "-wal"} {
		raw, err := os.ReadFile(b.dbPath + suffix)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		all = append(all, raw...)
	}
	require.False(t, bytes.Contains(all, []byte("pangolin-ada-42")), "none of the erased user's words remain in the files")
	require.True(t, bytes.Contains(all, []byte("quokka-eve-77")), "another user's words stay")

	// After a restart, the user starts from nothing; "/erase confirm"
	// typed erases too.
	r2 := b.start(t, b.writeConfig(t, telegramConfig(tg, "")))
	tg.SendPrivate(ada, "hello again")
	require.Equal(t, "Noted: hello again", tg.WaitSent(t, ada.ID, 4, waitFor)[3].Plain)
	tg.SendPrivate(ada, "/erase confirm")
	require.Contains(t, tg.WaitSent(t, ada.ID, 5, waitFor)[4].Plain, "everything I kept about you is deleted")
	st := b.openStoreFile(t)
	var convs, erasures int
	require.NoError(t, st.DB().Raw(`SELECT count(*) FROM conversations WHERE channel_thread_id = '4242'`).Scan(&convs).Error)
	require.NoError(t, st.DB().Raw(`SELECT count(*) FROM erasures`).Scan(&erasures).Error)
	require.Zero(t, convs)
	require.Equal(t, 2, erasures)

	// Through the API, Eve's: erased whatever it holds.
	eveConv := b.conversationOn(t, telegram.Platform, "5005").ID
	status, got := callAPI(t, b, r2.addr, http.MethodDelete, fmt.Sprintf("/api/v1/conversations/%d?erase=true", eveConv), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, true, got["erased"])
	require.Greater(t, got["rows"], float64(2))
	status, _ = callAPI(t, b, r2.addr, http.MethodDelete, fmt.Sprintf("/api/v1/conversations/%d?erase=true", eveConv), nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = callAPI(t, b, r2.addr, http.MethodDelete, fmt.Sprintf("/api/v1/conversations/%d?erase=maybe", eveConv), nil)
	require.Equal(t, http.StatusBadRequest, status)
}
