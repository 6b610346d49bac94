package telegramtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// wait bounds every wait in these tests.
const wait = 5 * time.Second

type testBundle struct {
	srv    *telegramtest.Server
	alice  telegramtest.User
	client *http.Client // for raw calls
}

func setup(t *testing.T, opts ...telegramtest.Option) *testBundle {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	return &testBundle{
		srv:    telegramtest.NewServer(t, opts...),
		alice:  telegramtest.User{ID: 1001, FirstName: "Alice", Username: "alice"},
		client: client,
	}
}

// newBot makes a real go-telegram/bot client for the fake; updates reach
// the returned channel.
func (tb *testBundle) newBot(t *testing.T) (*bot.Bot, chan *models.Update) {
	t.Helper()
	updates := make(chan *models.Update, 16)
	b, err := bot.New(tb.srv.Token(),
		bot.WithServerURL(tb.srv.URL()),
		bot.WithErrorsHandler(func(error) {}),
		// go-telegram/bot runs handlers in goroutines unless told not to,
		// which would reorder updates the fake delivered in order.
		bot.WithNotAsyncHandlers(),
		bot.WithDefaultHandler(func(_ context.Context, _ *bot.Bot, u *models.Update) { updates <- u }),
	)
	require.NoError(t, err)
	return b, updates
}

// start runs b's long polling until the test ends.
func start(t *testing.T, b *bot.Bot) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Start(ctx)
	}()
	// Registered after NewServer, so it runs before the server closes.
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
}

// apiResponse is the Bot API envelope as a raw client sees it.
type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// rawCall posts a urlencoded call and returns the status and the body.
func (tb *testBundle) rawCall(ctx context.Context, t *testing.T, token, method string, form url.Values) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tb.srv.URL()+"/bot"+token+"/"+method, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := tb.client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// getUpdates polls with a raw call and decodes the answer.
func (tb *testBundle) getUpdates(t *testing.T, form url.Values) apiResponse {
	t.Helper()
	_, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "getUpdates", form)
	var r apiResponse
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	return r
}

// receive takes one update from the bot's handler, failing after wait.
func receive(t *testing.T, updates <-chan *models.Update) *models.Update {
	t.Helper()
	select {
	case u := <-updates:
		return u
	case <-time.After(wait):
		t.Fatal("no update reached the bot's handler")
		return nil
	}
}
