package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// /export through parley run on Telegram: the user gets two documents,
// JSON and Markdown, with their messages (times in their zone), and
// nothing of another user's.
func TestExportThroughParleyRun(t *testing.T) {
	t.Parallel()
	b, tg, r := startWithEve(t, "my secret is marzipan-eve")
	tg.SendPrivate(ada, "/timezone Europe/Paris")
	tg.WaitSent(t, ada.ID, 1, waitFor)
	tg.SendPrivate(ada, "I collect teapots-ada")
	tg.WaitSent(t, ada.ID, 2, waitFor)

	tg.SendPrivate(ada, "/export")
	files := tg.WaitFiles(t, ada.ID, 2, waitFor)
	require.Equal(t, "sendDocument", files[0].Method)
	require.True(t, strings.HasSuffix(files[0].Name, ".json"), files[0].Name)
	require.True(t, strings.HasSuffix(files[1].Name, ".md"), files[1].Name)
	require.NotContains(t, files[0].Name, "4242", "no user id in a file name that ends up in downloads")
	var data struct {
		Platform string `json:"platform"`
		UserID   string `json:"user_id"`
		TimeZone string `json:"time_zone"`
		Messages []struct {
			Role string `json:"role"`
			Text string `json:"text"`
			Time string `json:"time"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(files[0].Data, &data), string(files[0].Data))
	require.Equal(t, "telegram", data.Platform)
	require.Equal(t, "4242", data.UserID)
	require.Equal(t, "Europe/Paris", data.TimeZone)
	var texts []string
	for _, m := range data.Messages {
		texts = append(texts, m.Text)
	}
	require.Contains(t, texts, "I collect teapots-ada")
	require.Contains(t, texts, "Noted: I collect teapots-ada")
	for _, f := range files {
		require.NotContains(t, string(f.Data), "marzipan-eve", "another user's words are never in it")
	}
	md := string(files[1].Data)
	require.Contains(t, md, "I collect teapots-ada")
	require.Regexp(t, `\*\*You\*\* · \w{3} \d{1,2} \w{3} \d{4} \d{2}:\d{2}`, md)
	sent := tg.WaitSent(t, ada.ID, 3, waitFor)
	require.Contains(t, sent[len(sent)-1].Plain+files[0].CaptionPlain, "everything I keep about you")

	// The same through the API, as a download.
	conv := b.conversationOn(t, telegram.Platform, "4242").ID
	status, got := callAPI(t, b, r.addr, http.MethodGet, fmt.Sprintf("/api/v1/conversations/%d/export", conv), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "4242", got["user_id"])
	status, _ = callAPI(t, b, r.addr, http.MethodGet, "/api/v1/conversations/999/export", nil)
	require.Equal(t, http.StatusNotFound, status)
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/api/v1/conversations/%d/export?format=md", r.addr, conv), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.env["PARLEY_API_TOKEN"])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Disposition"), `attachment; filename=parley-export-telegram-`)
	require.Contains(t, string(body), "I collect teapots-ada")
}

// eve is the other user of the user-data tests, whose words must stay
// out of Ada's export and outlive Ada's erasure.
var eve = telegramtest.User{ID: 5005, FirstName: "Eve"}

// startWithEve runs parley on Telegram with a model that notes what it is
// told, once Eve has written it said.
func startWithEve(t *testing.T, said string) (*testBundle, *telegramtest.Server, *running) {
	t.Helper()
	b := setup(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("Noted: " + r.LastUserMessage()) })
	tg := telegramtest.NewServer(t)
	r := b.start(t, b.writeConfig(t, telegramConfig(tg, "")))
	tg.SendPrivate(eve, said)
	tg.WaitSent(t, eve.ID, 1, waitFor)
	return b, tg, r
}
