//lint:file-ignore SA1019 the tests check max_tokens is sent as local servers expect

package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// sentField names the token bound field a request carried: "max_tokens",
// "max_completion_tokens", "both" or "".
func sentField(t *testing.T, r llmtest.Request) string {
	t.Helper()
	switch {
	case r.Chat.MaxTokens > 0 && r.Chat.MaxCompletionTokens > 0:
		return "both"
	case r.Chat.MaxTokens > 0:
		return "max_tokens"
	case r.Chat.MaxCompletionTokens > 0:
		return "max_completion_tokens"
	default:
		return ""
	}
}

// toServer sends every request to srv whatever host it names, so a client
// configured for https://api.openai.com/v1 can be tested locally.
type toServer struct{ target *url.URL }

func (s toServer) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.URL.Scheme, r.URL.Host, r.Host = s.target.Scheme, s.target.Host, ""
	return http.DefaultTransport.RoundTrip(r)
}

// openAIHost makes the client believe it talks to api.openai.com.
func openAIHost(srv *llmtest.Server) func(*llm.Config) {
	return func(c *llm.Config) {
		target, _ := url.Parse(srv.URL())
		c.BaseURL = "https://api.openai.com/v1"
		c.HTTPClient = &http.Client{Transport: toServer{target: target}}
	}
}

func TestMaxTokensIsSentAsMaxTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxTokens = 2048 })
	add := &addTool{}
	b.srv.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "add", `{"a":1,"b":2}`)),
		llmtest.Text("3"),
		llmtest.Text("summary"),
	)
	req := userSays("1+2")
	req.Tools = []llm.Tool{add.tool()}
	_, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	_, err = b.client.Complete(context.Background(), userSays("summarise"))
	require.NoError(t, err)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 3)
	for i, r := range reqs {
		require.Contains(t, string(r.Body), `"max_tokens":2048`, "request %d", i)
		require.NotContains(t, string(r.Body), "max_completion_tokens", "request %d", i)
	}
}

func TestMaxTokensZeroSendsNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("hi"))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	body := string(b.srv.Requests()[0].Body)
	require.NotContains(t, body, "max_tokens")
	require.NotContains(t, body, "max_completion_tokens")
}

func TestMaxTokensNegativeIsRejected(t *testing.T) {
	t.Parallel()
	_, err := llm.New(llm.Config{BaseURL: "http://localhost:11434/v1", MaxTokens: -1})
	require.ErrorContains(t, err, "max tokens")
}

func TestRequestMaxTokensOverridesConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxTokens = 2048 })
	b.srv.Enqueue(llmtest.Text("one two three four"), llmtest.Text("one two three four"))
	req := userSays("hi")
	req.MaxTokens = 3
	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "one two three", res.Content, "the server honours the bound")
	require.Equal(t, "length", res.FinishReason)
	require.Equal(t, 3, res.Usage.CompletionTokens)

	res, err = b.client.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "length", res.FinishReason)
	for _, r := range b.srv.Requests() {
		require.Equal(t, 3, r.MaxTokens())
	}
}

func TestMaxTokensReasoningModelsUseMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxTokens = 500 })
	models := []string{"o1-mini", "o3", "o4-mini", "gpt-5", "gpt-5-nano", "gpt-6-sol", "gpt-6-astra", "llama3.1", "gpt-4o", "deepseek-r1"}
	for _, m := range models {
		b.srv.Enqueue(llmtest.Text("ok"))
		req := userSays("hi")
		req.Model = m
		_, err := b.client.Complete(context.Background(), req)
		require.NoError(t, err, m)
	}
	var got []string
	for _, r := range b.srv.Requests() {
		got = append(got, r.Chat.Model+" "+sentField(t, r))
	}
	require.Equal(t, []string{
		"o1-mini max_completion_tokens",
		"o3 max_completion_tokens",
		"o4-mini max_completion_tokens",
		"gpt-5 max_completion_tokens",
		"gpt-5-nano max_completion_tokens",
		"gpt-6-sol max_completion_tokens",
		"gpt-6-astra max_completion_tokens",
		"llama3.1 max_tokens",
		"gpt-4o max_tokens",
		"deepseek-r1 max_tokens",
	}, got)
}

func TestMaxTokensOpenAIHostUsesMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	cfg := llm.Config{APIKey: apiKey, Model: "gpt-4o-mini", MaxTokens: 2048}
	openAIHost(srv)(&cfg)
	client, err := llm.New(cfg)
	require.NoError(t, err)
	srv.Enqueue(llmtest.Text("ok"))
	_, err = client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	r := srv.Requests()[0]
	require.Contains(t, string(r.Body), `"max_completion_tokens":2048`)
	require.NotContains(t, string(r.Body), `"max_tokens"`)
}

func TestMaxTokensSwitchesFieldAfterUnsupported(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithMaxTokensField("max_completion_tokens"))
	sleeps := &sleepRecorder{}
	logs := &syncBuffer{}
	client, err := llm.New(llm.Config{
		BaseURL: srv.URL(), APIKey: apiKey, Model: "azure-deployment", MaxTokens: 2048,
		Sleep: sleeps.sleep, Logger: newLogger(logs),
	})
	require.NoError(t, err)
	srv.Enqueue(llmtest.Text("first"), llmtest.Text("second"))

	res, err := client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "first", res.Content)
	res, err = client.Complete(context.Background(), userSays("again"))
	require.NoError(t, err)
	require.Equal(t, "second", res.Content)

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	require.Contains(t, string(reqs[0].Body), `"max_tokens":2048`)
	require.Contains(t, string(reqs[1].Body), `"max_completion_tokens":2048`, "retried at once with the other field")
	require.NotContains(t, string(reqs[1].Body), `"max_tokens"`)
	require.Contains(t, string(reqs[2].Body), `"max_completion_tokens":2048`, "and remembered")
	require.Empty(t, sleeps.all(), "the retry does not wait")
	require.Equal(t, llm.HealthOK, client.Health().State)
	require.Contains(t, logs.String(), "refused=max_tokens")
}

func TestMaxTokensSwitchesBackFromMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithMaxTokensField("max_tokens"))
	cfg := llm.Config{APIKey: apiKey, Model: "gpt-4o", MaxTokens: 100, Logger: newLogger(&syncBuffer{})}
	openAIHost(srv)(&cfg)
	client, err := llm.New(cfg)
	require.NoError(t, err)
	srv.Enqueue(llmtest.Text("ok"), llmtest.Text("ok"))
	for range 2 {
		_, err = client.Run(context.Background(), userSays("hi"))
		require.NoError(t, err)
	}
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, sentField(t, r))
	}
	require.Equal(t, []string{"max_completion_tokens", "max_tokens", "max_tokens"}, got)
}

func TestMaxTokensSwitchRetriesOnlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxTokens = 100 })
	refuse := func(field, instead string) llmtest.Response {
		return llmtest.Raw(http.StatusBadRequest, fmt.Sprintf(
			`{"error":{"message":"Unsupported parameter: '%s' is not supported with this model. Use '%s' instead.","type":"invalid_request_error","param":"%s","code":"unsupported_parameter"}}`,
			field, instead, field))
	}
	b.srv.Enqueue(refuse("max_tokens", "max_completion_tokens"), refuse("max_completion_tokens", "max_tokens"))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.Equal(t, http.StatusBadRequest, llmErr.StatusCode)
	require.Contains(t, err.Error(), "'max_completion_tokens' is not supported")
	require.Len(t, b.srv.Requests(), 2)
	require.Equal(t, llm.HealthServerError, b.client.Health().State)
}

func TestMaxTokensValueErrorsDoNotSwitch(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxTokens = 100000 })
	b.srv.Enqueue(
		llmtest.Raw(http.StatusBadRequest, `{"error":{"message":"max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.","type":"invalid_request_error","param":"max_tokens","code":null}}`),
		// The reverse message names max_completion_tokens first: it is not
		// a refusal of max_tokens.
		llmtest.Raw(http.StatusBadRequest, `{"error":{"message":"Unsupported parameter: 'max_completion_tokens' is not supported with this model. Use 'max_tokens' instead.","type":"invalid_request_error"}}`),
		llmtest.Text("ok"),
	)
	for range 2 {
		_, err := b.client.Run(context.Background(), userSays("hi"))
		require.Error(t, err)
	}
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	var got []string
	for _, r := range b.srv.Requests() {
		got = append(got, sentField(t, r))
	}
	require.Equal(t, []string{"max_tokens", "max_tokens", "max_tokens"}, got)
}

func TestMaxTokensSwitchIsSafeConcurrently(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithMaxTokensField("max_completion_tokens"), llmtest.WithResponder(llmtest.Echo))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", MaxTokens: 50, Logger: newLogger(&syncBuffer{})})
	require.NoError(t, err)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.Run(context.Background(), userSays(fmt.Sprint("hi ", i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	_, err = client.Run(context.Background(), userSays("after"))
	require.NoError(t, err)
	reqs := srv.Requests()
	require.Equal(t, "max_completion_tokens", sentField(t, reqs[len(reqs)-1]))
}

// One server, two models that take different fields (a reasoning model
// beside a local one behind one gateway, llm.model beside
// llm.light_model): a refusal for one switches that model only.
func TestMaxTokensFieldIsRememberedPerModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithModels("reasoner", "local"),
		llmtest.WithModelMaxTokensField("reasoner", "max_completion_tokens"),
		llmtest.WithModelMaxTokensField("local", "max_tokens"))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: apiKey, Model: "local", MaxTokens: 300,
		Logger: newLogger(&syncBuffer{})})
	require.NoError(t, err)
	srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })
	ask := func(model string) {
		t.Helper()
		req := userSays("hi")
		req.Model = model
		_, err := client.Complete(context.Background(), req)
		require.NoError(t, err, model)
	}
	ask("reasoner") // refused once, then max_completion_tokens
	ask("local")
	ask("reasoner")
	ask("local")
	var sent []string
	for _, r := range srv.Requests() {
		field := "max_tokens"
		if strings.Contains(string(r.Body), `"max_completion_tokens":300`) {
			field = "max_completion_tokens"
		}
		sent = append(sent, r.Chat.Model+":"+field)
	}
	require.Equal(t, []string{"reasoner:max_tokens", "reasoner:max_completion_tokens", "local:max_tokens",
		"reasoner:max_completion_tokens", "local:max_tokens"}, sent, "the local model never pays for the reasoner's refusal")
}
