package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/httpapi"
)

const token = "api-token-0123456789"

// fakeStore holds conversation 3 (blocked by job 7 unless confirmed) and
// 4 (free); conversation 5 fails as a broken database would.
type fakeStore struct {
	httpapi.Store // the rest of the store: routing_test.go uses a real one
	mu            sync.Mutex
	calls         []string
}

func (f *fakeStore) DeleteConversation(_ context.Context, id int64, confirm bool) (core.Deletion, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("%d confirm=%t", id, confirm))
	f.mu.Unlock()
	switch {
	case id == 3 && !confirm:
		return core.Deletion{Automations: []core.Automation{{ID: 7, Name: "daily check-in", Enabled: true}}},
			fmt.Errorf("deleting conversation 3: %w", core.ErrBlockedByAutomations)
	case id == 3 || id == 4:
		return core.Deletion{Deleted: true, Jobs: 1}, nil
	case id == 5:
		return core.Deletion{}, errors.New("deleting conversation 5: disk I/O error")
	}
	return core.Deletion{}, fmt.Errorf("deleting conversation %d: %w", id, core.ErrNotFound)
}

func (f *fakeStore) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

type apiBundle struct {
	srv   *httpapi.Server
	store *fakeStore
	logs  *coretest.Logs
	// remote is the client's address ("": httptest's 192.0.2.1).
	remote string
}

func setupAPI(t *testing.T, tok string) *apiBundle {
	t.Helper()
	b := &apiBundle{store: &fakeStore{}, logs: &coretest.Logs{}}
	b.srv = httpapi.New("127.0.0.1:0", b.logs.Logger())
	httpapi.NewAPI(httpapi.APIConfig{Token: tok, Store: b.store}, b.logs.Logger()).Mount(b.srv.Mux())
	return b
}

// do sends a request with the Authorization header auth ("" for none).
func (b *apiBundle) do(method, path, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if b.remote != "" {
		req.RemoteAddr = b.remote
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	b.srv.Mux().ServeHTTP(rec, req)
	return rec
}

func TestAPIRequiresTheBearerToken(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, token)
	i := 0
	for name, tc := range map[string]struct{ auth, challenge, msg string }{
		"missing":      {"", "Bearer", "missing bearer token"},
		"wrong":        {"Bearer not-the-token", `Bearer error="invalid_token"`, "invalid bearer token"},
		"prefix":       {"Bearer " + token[:len(token)-1], `Bearer error="invalid_token"`, "invalid bearer token"},
		"other scheme": {"Basic " + token, `Bearer error="invalid_token"`, "must be Bearer"},
	} {
		// An address of its own: wrong tokens from one address back off.
		i++
		b.remote = fmt.Sprintf("192.0.2.%d:1234", i)
		rec := b.do(http.MethodDelete, "/api/v1/conversations/4", tc.auth)
		require.Equal(t, http.StatusUnauthorized, rec.Code, name)
		require.Equal(t, tc.challenge, rec.Header().Get("WWW-Authenticate"), name)
		require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"), name)
		require.Contains(t, rec.Body.String(), `{"error":"`, name)
		require.Contains(t, rec.Body.String(), tc.msg, name)
		// Unknown paths are refused the same way: they reveal nothing.
		require.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/api/v1/nothing", tc.auth).Code, name)
	}
	require.Empty(t, b.store.Calls(), "nothing reached the store")

	rec := b.do(http.MethodDelete, "/api/v1/conversations/4", "bearer "+token)
	require.Equal(t, http.StatusOK, rec.Code, "the scheme is case-insensitive")
	rec = b.do(http.MethodGet, "/api/v1/nothing", "Bearer "+token)
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.JSONEq(t, `{"error":"no such endpoint"}`, rec.Body.String())
	require.NotContains(t, b.logs.String(), token)
}

func TestAPIDeleteConversation(t *testing.T) {
	t.Parallel()
	auth := "Bearer " + token
	for _, tc := range []struct {
		path string
		code int
		body string
		call string
	}{
		{"/api/v1/conversations/abc", 400, `{"error":"conversation id \"abc\" is not a positive integer"}` + "\n", ""},
		{"/api/v1/conversations/0", 400, `{"error":"conversation id \"0\" is not a positive integer"}` + "\n", ""},
		{"/api/v1/conversations/4?confirm=maybe", 400, `{"error":"confirm \"maybe\": want true or false"}` + "\n", ""},
		{"/api/v1/conversations/99", 404, `{"error":"conversation 99 not found"}` + "\n", "99 confirm=false"},
		{"/api/v1/conversations/3", 409,
			`{"deleted":false,"blocked_by_automations":true,"automations":[{"id":7,"name":"daily check-in","enabled":true}]}` + "\n",
			"3 confirm=false"},
		{"/api/v1/conversations/3?confirm=false", 409,
			`{"deleted":false,"blocked_by_automations":true,"automations":[{"id":7,"name":"daily check-in","enabled":true}]}` + "\n",
			"3 confirm=false"},
		{"/api/v1/conversations/3?confirm=true", 200, `{"deleted":true,"id":3}` + "\n", "3 confirm=true"},
		{"/api/v1/conversations/3?confirm=1", 200, `{"deleted":true,"id":3}` + "\n", "3 confirm=true"},
		{"/api/v1/conversations/4", 200, `{"deleted":true,"id":4}` + "\n", "4 confirm=false"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			b := setupAPI(t, token)
			rec := b.do(http.MethodDelete, tc.path, auth)
			require.Equal(t, tc.code, rec.Code)
			require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"))
			require.Equal(t, tc.body, rec.Body.String())
			if tc.call == "" {
				require.Empty(t, b.store.Calls())
			} else {
				require.Equal(t, []string{tc.call}, b.store.Calls())
			}
		})
	}
}

func TestAPIStoreFailureIsLoggedNotShown(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, token)
	rec := b.do(http.MethodDelete, "/api/v1/conversations/5", "Bearer "+token)
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.JSONEq(t, `{"error":"internal error: the conversation could not be deleted"}`, rec.Body.String())
	require.Contains(t, b.logs.String(), "disk I/O error")
	require.Contains(t, b.logs.String(), "conversation_id=5")
}

func TestAPIDisabledWithoutAToken(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, "")
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		rec := b.do(http.MethodDelete, "/api/v1/conversations/4", auth)
		require.Equal(t, http.StatusNotFound, rec.Code, "auth %q", auth)
	}
	require.Empty(t, b.store.Calls())
	require.Contains(t, b.logs.String(), "level=WARN")
	require.Contains(t, b.logs.String(), "http.api_token is empty: the API is disabled")
	// The rest of the server is unaffected.
	require.Equal(t, http.StatusOK, b.do(http.MethodGet, "/healthz", "").Code)
}
