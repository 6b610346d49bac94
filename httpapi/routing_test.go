package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/httpapi"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// openerAdapter is a Telegram-like adapter that can open conversations
// with "newbie" and not with anyone else.
type openerAdapter struct{ *coretest.Adapter }

func (openerAdapter) OpenConversation(_ context.Context, req core.OpenRequest) (core.OpenedConversation, error) {
	if req.ChannelUserID != "newbie" {
		return core.OpenedConversation{}, fmt.Errorf("user %q has not started the bot: %w", req.ChannelUserID, core.ErrUnreachable)
	}
	return core.OpenedConversation{ChannelThreadID: "dm-newbie", ChannelUserID: "newbie", DisplayName: "New Bie"}, nil
}

type routing struct {
	st     *store.Store
	mux    *http.ServeMux
	now    time.Time
	wakes  atomic.Int64
	convID int64
}

// setupRouting serves the API with a web and a Telegram-like adapter.
func setupRouting(t *testing.T) *routing {
	t.Helper()
	return setupRoutingWith(t, coretest.NewAdapter(web), openerAdapter{coretest.NewAdapter(telegram)})
}

// setupRoutingWith serves the API with these adapters enabled, and a web
// conversation on thread w1.
func setupRoutingWith(t *testing.T, adapters ...core.Adapter) *routing {
	t.Helper()
	return setupRoutingOn(t, storetest.OpenSQLite(t), adapters...)
}

// setupRoutingOn is setupRoutingWith on st, unmigrated.
func setupRoutingOn(t *testing.T, st *store.Store, adapters ...core.Adapter) *routing {
	t.Helper()
	require.NoError(t, st.Migrate(context.Background()))
	r := &routing{st: st, now: t0}
	res, err := st.RecordInbound(context.Background(), core.InboundRecord{Platform: web, ChannelThreadID: "w1", Text: "hi", Now: t0})
	require.NoError(t, err)
	r.convID = res.Conversation.ID
	srv := httpapi.New("127.0.0.1:0", nil)
	httpapi.NewAPI(httpapi.APIConfig{Token: token, Store: st, Now: func() time.Time { return r.now }, MaxPending: 3,
		TimeZone: "Europe/Berlin", JobsChanged: func() { r.wakes.Add(1) },
		Adapters: adapters,
	}, nil).Mount(srv.Mux())
	r.mux = srv.Mux()
	return r
}

func (r *routing) do(method, path, body string, headers ...string) (int, map[string]any) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

func TestRouteMessageErrors(t *testing.T) {
	t.Parallel()
	r := setupRouting(t)
	long := strings.Repeat("é", 1025)
	conv := fmt.Sprint(r.convID)
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"both anchors", `{"conversation_id":` + conv + `,"channel_type":"web","channel_thread_id":"w1","text":"hi"}`, 400, "not both"},
		{"no anchor", `{"text":"hi"}`, 400, "no anchor"},
		{"thread without type", `{"channel_thread_id":"w1","text":"hi"}`, 400, "channel_type is required"},
		{"type alone", `{"channel_type":"web","text":"hi"}`, 400, "give channel_thread_id or channel_user_id"},
		{"unknown platform", `{"channel_type":"icq","channel_thread_id":"1","text":"hi"}`, 400,
			`channel_type "icq" is not the platform of an enabled adapter: want telegram or web`},
		{"text too long", `{"conversation_id":` + conv + `,"text":"` + long + `"}`, 400, "text has 1025 characters: it must have 1 to 1024"},
		{"empty text", `{"conversation_id":` + conv + `,"text":"  "}`, 400, "text has 0 characters"},
		{"bad origin", `{"conversation_id":` + conv + `,"text":"hi","origin":"user"}`, 400, `origin "user": want api, connector or system`},
		{"bad type", `{"conversation_id":` + conv + `,"text":"hi","type":"video"}`, 400, `type "video"`},
		{"image without url", `{"conversation_id":` + conv + `,"type":"image"}`, 400, "an image needs an absolute http(s) URL"},
		{"image with a file url", `{"conversation_id":` + conv + `,"type":"image","image_url":"file:///etc/passwd"}`, 400, "absolute http(s) URL"},
		{"url on text", `{"conversation_id":` + conv + `,"text":"hi","image_url":"https://x.test/a.png"}`, 400, "image_url is for messages of type image"},
		{"send_at not a time", `{"conversation_id":` + conv + `,"text":"hi","send_at":"tomorrow"}`, 400, "not an RFC 3339 time"},
		{"send_at in the past", `{"conversation_id":` + conv + `,"text":"hi","send_at":"2026-11-23T08:00:00Z"}`, 400, "is in the past"},
		{"send_at too far", `{"conversation_id":` + conv + `,"text":"hi","send_at":"2028-01-01T00:00:00Z"}`, 400, "more than a year ahead"},
		{"unknown field", `{"conversation_id":` + conv + `,"text":"hi","priority":1}`, 400, `unknown field "priority"`},
		{"not json", `hi there`, 400, "not the JSON expected"},
		{"two values", `{"conversation_id":` + conv + `,"text":"hi"} {}`, 400, "more than one JSON value"},
		{"a stray brace", `{"conversation_id":` + conv + `,"text":"hi"}}`, 400, "more than one JSON value"},
		{"trailing garbage", `{"conversation_id":` + conv + `,"text":"hi"}]x`, 400, "more than one JSON value"},
		{"unknown conversation", `{"conversation_id":999,"text":"hi"}`, 404, "conversation 999 not found"},
		{"web thread never seen", `{"channel_type":"web","channel_thread_id":"w2","text":"hi"}`, 422, "web conversations start when the user writes"},
		{"platform not enabled", `{"channel_type":"slack","channel_user_id":"U1","text":"hi"}`, 400,
			`channel_type "slack" is not the platform of an enabled adapter: want telegram or web`},
		{"user never started the bot", `{"channel_type":"telegram","channel_user_id":"stranger","text":"hi"}`, 422, `user "stranger" has not started the bot`},
		{"body too large", `{"conversation_id":` + conv + `,"text":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`, 413, "over 1048576 bytes"},
	} {
		code, out := r.do(http.MethodPost, "/api/v1/messages", tc.body)
		require.Equal(t, tc.code, code, "%s: %v", tc.name, out)
		require.Contains(t, out["error"], tc.want, tc.name)
	}
	code, _ := r.do(http.MethodPost, "/api/v1/messages", `{"conversation_id":`+conv+`,"text":"hi"}`, "Idempotency-Key", strings.Repeat("k", 256))
	require.Equal(t, 400, code)
	jobs, err := r.st.Jobs(context.Background(), 0, "", 100)
	require.NoError(t, err)
	require.Empty(t, jobs, "no refused request made a job")
	require.Zero(t, r.wakes.Load())
}

func TestRouteMessageMakesAJobOnceAndOpensConversations(t *testing.T) {
	t.Parallel()
	r := setupRouting(t)
	ctx := context.Background()
	code, out := r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(`{"conversation_id":%d,"text":"**Deploy** done","type":"rich_text"}`, r.convID),
		"Idempotency-Key", "deploy-1")
	require.Equal(t, http.StatusAccepted, code, out)
	require.Equal(t, map[string]any{"id": out["id"], "status": "pending", "conversation_id": float64(r.convID), "type": "rich_text",
		"origin": "api", "send_at": "2026-11-23T09:00:00Z", "attempts": float64(0)}, out)
	require.EqualValues(t, 1, r.wakes.Load(), "the scheduler was woken: it is due now")
	id := int64(out["id"].(float64))
	j, err := r.st.Job(ctx, id)
	require.NoError(t, err)
	require.Equal(t, core.JobMessage, j.Kind)
	require.Equal(t, core.FormatRichText, j.Format)
	require.Equal(t, "**Deploy** done", j.Text)
	require.True(t, j.DueAt.Equal(t0))

	code, again := r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(` {"type":"rich_text", "text":"**Deploy** done", "conversation_id":%d}`, r.convID),
		"Idempotency-Key", "deploy-1")
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, out["id"], again["id"], "the same key within 24 h is the same message")

	// A user the bot never talked with, reached through the adapter.
	code, out = r.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"telegram","channel_user_id":"newbie","type":"image",
		"image_url":"https://img.test/cat.png","text":"Look!","send_at":"2026-11-23T10:00:00+01:00"}`)
	require.Equal(t, http.StatusAccepted, code, out)
	conv, err := r.st.ConversationByThread(ctx, telegram, "dm-newbie")
	require.NoError(t, err)
	require.Equal(t, "New Bie", conv.DisplayName)
	require.Equal(t, "Europe/Berlin", conv.TimeZone, "the bot's zone")
	require.EqualValues(t, conv.ID, out["conversation_id"])
	require.Equal(t, "image", out["type"])
	require.Equal(t, "2026-11-23T09:00:00Z", out["send_at"], "10:00+01:00")

	// The cap on waiting messages.
	for range 2 {
		code, _ = r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(`{"conversation_id":%d,"text":"x"}`, r.convID))
		require.Equal(t, http.StatusAccepted, code)
	}
	code, out = r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(`{"conversation_id":%d,"text":"x"}`, r.convID))
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Contains(t, out["error"], "already has 3 messages waiting")
}

func TestBrowseAndCancelOverTheAPI(t *testing.T) {
	t.Parallel()
	r := setupRouting(t)
	code, out := r.do(http.MethodPost, "/api/v1/messages", fmt.Sprintf(`{"conversation_id":%d,"text":"later","send_at":"2026-11-24T09:00:00Z"}`, r.convID))
	require.Equal(t, http.StatusAccepted, code)
	id := out["id"]

	code, out = r.do(http.MethodGet, "/api/v1/conversations", "")
	require.Equal(t, http.StatusOK, code)
	convs := out["conversations"].([]any)
	require.Len(t, convs, 1)
	require.Equal(t, "w1", convs[0].(map[string]any)["channel_thread_id"])

	code, out = r.do(http.MethodGet, fmt.Sprintf("/api/v1/conversations/%d/messages", r.convID), "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "hi", out["messages"].([]any)[0].(map[string]any)["content"])
	for path, want := range map[string]int{
		"/api/v1/conversations/99/messages":                      404,
		"/api/v1/conversations/x/messages":                       400,
		"/api/v1/conversations?limit=0":                          400,
		"/api/v1/jobs?status=done":                               400,
		"/api/v1/jobs?conversation_id=-1":                        400,
		"/api/v1/messages/99":                                    404,
		fmt.Sprintf("/api/v1/jobs?conversation_id=%d", r.convID): 200,
	} {
		code, _ := r.do(http.MethodGet, path, "")
		require.Equal(t, want, code, path)
	}
	code, out = r.do(http.MethodGet, "/api/v1/jobs?status=pending", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, out["jobs"], 1)

	code, out = r.do(http.MethodDelete, fmt.Sprintf("/api/v1/jobs/%v", id), "")
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, "cancelled", out["status"])
	code, out = r.do(http.MethodGet, fmt.Sprintf("/api/v1/messages/%v", id), "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "cancelled", out["status"])
	code, out = r.do(http.MethodDelete, fmt.Sprintf("/api/v1/jobs/%v", id), "")
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, out["error"], "is cancelled")
	code, _ = r.do(http.MethodDelete, "/api/v1/jobs/12345", "")
	require.Equal(t, http.StatusNotFound, code)
}

// A channel_type is whatever platform an enabled adapter serves: the API
// knows no list of its own, so a platform Parley does not ship works as
// the built-in ones do, and one no enabled adapter serves is refused with
// the ones that would do.
func TestChannelTypeIsThePlatformOfAnEnabledAdapter(t *testing.T) {
	t.Parallel()
	const irc core.Platform = "irc"
	r := setupRoutingWith(t, openerAdapter{coretest.NewAdapter(irc)})
	ctx := context.Background()
	code, out := r.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"irc","channel_user_id":"newbie","text":"hello"}`)
	require.Equal(t, http.StatusAccepted, code, out)
	conv, err := r.st.ConversationByThread(ctx, irc, "dm-newbie")
	require.NoError(t, err, "opened through the irc adapter")
	require.EqualValues(t, conv.ID, out["conversation_id"])
	code, again := r.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"irc","channel_thread_id":"dm-newbie","text":"again"}`)
	require.Equal(t, http.StatusAccepted, code, again)
	require.Equal(t, out["conversation_id"], again["conversation_id"], "the thread names the same conversation")

	// web has a conversation (w1), but no enabled adapter to send to it.
	for _, body := range []string{
		`{"channel_type":"web","channel_thread_id":"w1","text":"hi"}`,
		`{"channel_type":"telegram","channel_user_id":"42","text":"hi"}`,
	} {
		code, out = r.do(http.MethodPost, "/api/v1/messages", body)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, out["error"], "is not the platform of an enabled adapter: want irc", body)
	}
	jobs, err := r.st.Jobs(ctx, 0, "", 100)
	require.NoError(t, err)
	require.Len(t, jobs, 2, "the two irc messages, nothing else")

	none := setupRoutingWith(t)
	code, out = none.do(http.MethodPost, "/api/v1/messages", `{"channel_type":"web","channel_thread_id":"w1","text":"hi"}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `channel_type "web": no adapter is enabled`, out["error"])
}
