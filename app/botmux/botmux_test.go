package botmux_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/app/botmux"
)

func muxFor(routes ...string) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.HandleFunc(r, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(r)) })
	}
	return mux
}

func get(m *botmux.Mux, method, path string) (int, string) {
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.String()
}

// Each request reaches the bot whose routes serve it: the bot its webhook
// path names, or (the default bot's plain paths, the web chat) the first
// bot that has the route; a removed bot's routes are gone.
func TestRequestsReachTheirBot(t *testing.T) {
	m := botmux.New()
	m.Set("default", muxFor("POST /webhooks/telegram", "GET /web/"))
	m.Set("ada", muxFor("POST /webhooks/ada/telegram"))
	// A bot named like a platform still gets only its own routes.
	m.Set("telegram", muxFor("POST /webhooks/telegram/slack"))

	for path, want := range map[string]string{
		"/webhooks/telegram":       "POST /webhooks/telegram",
		"/webhooks/ada/telegram":   "POST /webhooks/ada/telegram",
		"/webhooks/telegram/slack": "POST /webhooks/telegram/slack",
	} {
		code, body := get(m, http.MethodPost, path)
		require.Equal(t, http.StatusOK, code, path)
		require.Equal(t, want, body, path)
	}
	code, body := get(m, http.MethodGet, "/web/chat")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "GET /web/", body)

	code, _ = get(m, http.MethodPost, "/webhooks/bob/telegram")
	require.Equal(t, http.StatusNotFound, code, "no bot bob")
	m.Remove("ada")
	code, _ = get(m, http.MethodPost, "/webhooks/ada/telegram")
	require.Equal(t, http.StatusNotFound, code, "ada was removed")
	code, _ = get(m, http.MethodPost, "/webhooks/telegram")
	require.Equal(t, http.StatusOK, code, "the others stay")
}
