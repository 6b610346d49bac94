package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/internal/diskfault/diskfaulttest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// NUL in a routed message's text is stored as U+FFFD, as inbound text
// is, on every store: PostgreSQL's text refuses NUL (SQLSTATE 22021,
// which answered 500). In an address it is a 400.
func TestRoutedTextWithNULIsStoredCleaned(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{
		"sqlite":   storetest.OpenSQLite,
		"postgres": storetest.OpenPostgres,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := setupRoutingOn(t, open(t), coretest.NewAdapter(web), openerAdapter{coretest.NewAdapter(telegram)})
			code, out := r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(`{"conversation_id":%d,"text":"a\u0000b"}`, r.convID),
				"Idempotency-Key", "nul-1")
			require.Equal(t, http.StatusAccepted, code, out)
			j, err := r.st.Job(context.Background(), int64(out["id"].(float64)))
			require.NoError(t, err)
			require.Equal(t, "a\uFFFDb", j.Text)

			code, again := r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(`{"conversation_id":%d,"text":"a\u0000b"}`, r.convID),
				"Idempotency-Key", "nul-1")
			require.Equal(t, http.StatusAccepted, code, again)
			require.Equal(t, out["id"], again["id"], "the same request, cleaned the same way")

			code, out = r.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"telegram","channel_user_id":"new\u0000bie","text":"hi"}`)
			require.Equal(t, http.StatusBadRequest, code)
			require.Equal(t, "channel_user_id must be valid UTF-8 without NUL characters", out["error"])
			code, _ = r.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"web","channel_thread_id":"w\u00001","text":"hi"}`)
			require.Equal(t, http.StatusBadRequest, code)
			code, out = r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(`{"conversation_id":%d,"text":"hi"}`, r.convID),
				"Idempotency-Key", "k\xff")
			require.Equal(t, http.StatusBadRequest, code)
			require.Equal(t, "Idempotency-Key must be UTF-8 text", out["error"])
		})
	}
}

// An Idempotency-Key names one request: the same one again answers 202
// with the first message; another one with the key is refused with 422,
// not silently dropped.
func TestIdempotencyKeyReusedForAnotherRequest(t *testing.T) {
	t.Parallel()
	r := setupRouting(t)
	first := fmt.Sprintf(`{"conversation_id":%d,"text":"Deploy done","send_at":"2026-11-23T12:00:00Z"}`, r.convID)
	code, out := r.do(http.MethodPost, "/api/v1/messages", first, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusAccepted, code, out)
	id := out["id"]

	// The same request, written otherwise, and later (send_at is still
	// ahead): the first message.
	r.now = t0.Add(time.Hour)
	code, again := r.do(http.MethodPost, "/api/v1/messages",
		fmt.Sprintf(`{"send_at":"2026-11-23T13:00:00+01:00", "origin":"api", "type":"text", "text":" Deploy done ", "conversation_id":%d}`, r.convID),
		"Idempotency-Key", "k1")
	require.Equal(t, http.StatusAccepted, code, again)
	require.Equal(t, id, again["id"])

	for _, tc := range []struct{ body, what string }{
		{fmt.Sprintf(`{"conversation_id":%d,"text":"Deploy failed","send_at":"2026-11-23T12:00:00Z"}`, r.convID), "text"},
		{fmt.Sprintf(`{"conversation_id":%d,"text":"Deploy done","type":"rich_text","send_at":"2026-11-23T12:00:00Z"}`, r.convID), "type or image_url"},
		{fmt.Sprintf(`{"conversation_id":%d,"text":"Deploy done","origin":"system","send_at":"2026-11-23T12:00:00Z"}`, r.convID), "origin"},
		{fmt.Sprintf(`{"conversation_id":%d,"text":"Deploy done","send_at":"2026-11-23T12:30:00Z"}`, r.convID), "send_at"},
		{fmt.Sprintf(`{"conversation_id":%d,"text":"Deploy done"}`, r.convID), "send_at"},
		{`{"conversation_id":999,"text":"Deploy done","send_at":"2026-11-23T12:00:00Z"}`, "recipient"},
		{`{"channel_type":"telegram","channel_user_id":"newbie","text":"Deploy done","send_at":"2026-11-23T12:00:00Z"}`, "recipient"},
	} {
		code, out := r.do(http.MethodPost, "/api/v1/messages", tc.body, "Idempotency-Key", "k1")
		require.Equal(t, http.StatusUnprocessableEntity, code, tc.body)
		require.Equal(t, fmt.Sprintf(`Idempotency-Key "k1" already names message %v, and this request differs from it in %s: `+
			"send a new key for a new message (a key names one request for 24 hours)", id, tc.what), out["error"], tc.body)
	}
	// An invalid body is a 400 as ever.
	code, _ = r.do(http.MethodPost, "/api/v1/messages", `{"conversation_id":1,"text":""}`, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusBadRequest, code)
	jobs, err := r.st.Jobs(context.Background(), 0, "", 100)
	require.NoError(t, err)
	require.Len(t, jobs, 1, "no refused request made a job, nor opened a conversation")
	_, err = r.st.ConversationByThread(context.Background(), telegram, "dm-newbie")
	require.Error(t, err)

	// A key on a channel address: the same address again is the same
	// request; another user is not.
	body := `{"channel_type":"telegram","channel_user_id":"newbie","text":"Welcome"}`
	code, out = r.do(http.MethodPost, "/api/v1/messages", body, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusAccepted, code, out)
	code, again = r.do(http.MethodPost, "/api/v1/messages",
		`{"channel_type":"telegram","channel_thread_id":"dm-newbie","text":"Welcome"}`, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusAccepted, code, again)
	require.Equal(t, out["id"], again["id"])
	code, _ = r.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"telegram","channel_user_id":"other","text":"Welcome"}`,
		"Idempotency-Key", "k2")
	require.Equal(t, http.StatusUnprocessableEntity, code)
	code, _ = r.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"web","channel_user_id":"newbie","text":"Welcome"}`,
		"Idempotency-Key", "k2")
	require.Equal(t, http.StatusUnprocessableEntity, code)
}

// The database's disk fills up: a message routed then is refused with
// 503 and Retry-After, which a client retries, not a bare 500.
func TestRoutedMessageOnAFullDiskIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	disk := diskfaulttest.New(t, "32m")
	st, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite,
		DSN: filepath.Join(disk.Dir, "parley.db"), Disk: disk.Fault})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	r := setupRoutingOn(t, st, coretest.NewAdapter(web))
	convs := make([]int64, 500)
	for i := range convs {
		res, err := st.RecordInbound(context.Background(), core.InboundRecord{Platform: web, ChannelThreadID: fmt.Sprint("full-", i),
			Text: "hi", Now: t0})
		require.NoError(t, err)
		convs[i] = res.Conversation.ID
	}
	disk.Fill(t)
	text := strings.Repeat("ready ", 170)
	for _, id := range convs {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/messages",
			strings.NewReader(fmt.Sprintf(`{"conversation_id":%d,"text":%q}`, id, text)))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		r.mux.ServeHTTP(rec, req)
		if rec.Code == http.StatusAccepted {
			continue
		}
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		require.Equal(t, "5", rec.Header().Get("Retry-After"))
		require.JSONEq(t, `{"error":"the store cannot take writes now: routing a message failed; try again in 5 s"}`,
			rec.Body.String())
		return
	}
	t.Fatal("500 messages routed on a full disk")
}
