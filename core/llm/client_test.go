package llm_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

func TestNewValidatesBaseURL(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "localhost:11434/v1", "ftp://example.com/v1", "http://", "::not a url"} {
		_, err := llm.New(llm.Config{BaseURL: bad, Model: "m"})
		require.Error(t, err, "base url %q", bad)
		require.Contains(t, err.Error(), "base url")
	}
}

func TestNewHidesBaseURLPassword(t *testing.T) {
	t.Parallel()
	_, err := llm.New(llm.Config{BaseURL: "ftp://user:hunter2@example.com/v1"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

func TestNewAllowsMissingAPIKey(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("local model here"))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "llama3"})
	require.NoError(t, err)

	res, err := client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "local model here", res.Content)
	require.Empty(t, srv.Requests()[0].Authorization)
}

func TestNewKeepsCallersHTTPClient(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("ok"))
	hc := &http.Client{}
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", HTTPClient: hc})
	require.NoError(t, err)
	_, err = client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Nil(t, hc.Transport, "the caller's client must not be modified")
}

func TestAuthorizationHeaderIsBearerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("hi"))
	_, err := b.client.Run(context.Background(), userSays("hello"))
	require.NoError(t, err)
	require.Equal(t, "Bearer "+apiKey, b.srv.Requests()[0].Authorization)
}

func TestNoModelIsAnError(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.Model = "" })
	_, err := b.client.Run(context.Background(), userSays("hello"))
	require.ErrorContains(t, err, "no model")
	require.Empty(t, b.srv.Requests())
}

func TestRequestModelOverridesDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("short summary"))
	req := userSays("summarise")
	req.Model = "light-model"
	res, err := b.client.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "short summary", res.Content)
	require.Equal(t, "light-model", b.srv.Requests()[0].Chat.Model)
}
