package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// ircAdapter is a platform Parley does not ship. It registers itself the
// way a custom binary's own adapter package does (core.RegisterAdapter
// from init), gives no title of its own, and nothing above the adapters
// names it: the routing API, the prompt, the console and the CLI must take
// it as they take the built-in ones.
type ircAdapter struct {
	*coretest.Adapter `yaml:"-"`
	// Network is a config key; the test that enables the adapter sets it
	// to its own name, to find the instance the bot started.
	Network string `yaml:"network"`
}

// startedIRC maps a Network to the ircAdapter started with it.
var startedIRC sync.Map

func init() {
	core.RegisterAdapter(core.AdapterInfo{Name: "irc", New: func() core.Adapter {
		return &ircAdapter{Adapter: coretest.NewAdapter("irc")}
	}})
}

func (a *ircAdapter) Start(ctx context.Context, h core.Host) error {
	if err := a.Adapter.Start(ctx, h); err != nil {
		return err
	}
	startedIRC.Store(a.Network, a)
	return nil
}

func TestANewPlatformWorksWithNoChangeAboveTheAdapters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.writeConfig(t, fmt.Sprintf(`adapters:
  web: {enabled: false}
  irc: {enabled: true, network: %q}
runs:
  debounce: 0s
`, t.Name()))
	r := b.start(t, cfg)
	v, ok := startedIRC.Load(t.Name())
	require.True(t, ok, "parley run started the irc adapter")
	irc := v.(*ircAdapter)
	ctx := context.Background()

	// A DM in, the reply out; the model hears the platform named by its
	// name, capitalised, as the adapter gives no title.
	b.model.Enqueue(llmtest.Text("Hello Ada!"))
	require.NoError(t, irc.Deliver(ctx, "ada", "hi"))
	require.Equal(t, "Hello Ada!", irc.WaitSent(t, 1, waitFor)[0].Text)
	require.Contains(t, b.model.Requests()[0].Messages()[0].Content, "- You are talking with User ada on Irc.\n")

	// The routing API takes channel_type irc and sends through the adapter.
	api := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+r.addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.env["PARLEY_API_TOKEN"])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	code, out := api(http.MethodPost, "/api/v1/messages", `{"channel_type":"irc","channel_thread_id":"ada","text":"Your build passed"}`)
	require.Equal(t, http.StatusAccepted, code, out)
	sent := irc.WaitSent(t, 2, waitFor)
	require.Equal(t, "Your build passed", sent[1].Text)
	require.Equal(t, "ada", sent[1].ChannelThreadID)
	id := out["id"]
	require.Eventually(t, func() bool {
		_, out := api(http.MethodGet, fmt.Sprintf("/api/v1/messages/%v", id), "")
		return out["status"] == "sent"
	}, waitFor, 10*time.Millisecond)

	// A platform no enabled adapter serves, built in or not, is refused
	// with the ones that would do.
	for _, channel := range []string{"telegram", "matrix"} {
		code, out = api(http.MethodPost, "/api/v1/messages", `{"channel_type":"`+channel+`","channel_thread_id":"ada","text":"hi"}`)
		require.Equal(t, http.StatusBadRequest, code, out)
		require.Equal(t, fmt.Sprintf("channel_type %q is not the platform of an enabled adapter: want irc", channel), out["error"])
	}

	// The console lists the conversation under its platform.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	resp, err := browser.PostForm("http://"+r.addr+"/console/login", url.Values{"token": {b.env["PARLEY_API_TOKEN"]}})
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "logged in and sent on to the conversations")
	require.Contains(t, string(page), `<span class="badge">irc</span>`)
	require.Contains(t, string(page), "User ada")

	// And so does the CLI, with the job the API made.
	r.stop(t)
	code, stdout, stderr := b.cli(cfg, "conversations", "list")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^1\s+irc\s+ada\s+ada\s+User ada\s`, stdout)
	code, stdout, stderr = b.cli(cfg, "jobs", "list")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^\d+\s+1\s+message\s+sent\s.*Your build passed`, stdout)
}
