package llm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

func TestModelsListsTheServersModelsSorted(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithModels("gpt-4o-mini", "gpt-4o", "whisper-1"), llmtest.WithAPIKey(apiKey))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: apiKey})
	require.NoError(t, err)
	ids, err := client.Models(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"gpt-4o", "gpt-4o-mini", "whisper-1"}, ids)
	require.Equal(t, llm.HealthUnknown, client.Health().State, "listing is not a chat call")
}

func TestModelsRefusedKeyIsA401WithoutTheKey(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithAPIKey("sk-the-right-one-0000"))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: apiKey, AuthHint: "check llm.api_key"})
	require.NoError(t, err)
	_, err = client.Models(context.Background())
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusUnauthorized, e.StatusCode)
	require.Contains(t, e.Message, "check llm.api_key")
	require.NotContains(t, e.Message, apiKey)
	require.False(t, llm.NoModelList(err))
}

func TestModelsOnAServerWithoutTheList(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no such route", status)
		}))
		t.Cleanup(srv.Close)
		client, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", MaxRetries: llm.NoRetries})
		require.NoError(t, err)
		_, err = client.Models(context.Background())
		require.Error(t, err)
		require.True(t, llm.NoModelList(err), "status %d: %v", status, err)
	}
}

func TestModelsUnreachableServer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close()
	client, err := llm.New(llm.Config{BaseURL: base, MaxRetries: llm.NoRetries})
	require.NoError(t, err)
	_, err = client.Models(context.Background())
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Zero(t, e.StatusCode, "no answer: %v", err)
	require.False(t, llm.NoModelList(err))
}
