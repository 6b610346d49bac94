package slacktest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

func TestSlashCommandOverSocketMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	receive(t, c.hellos)
	ch, trigger := tb.srv.SendSlashCommand(tb.alice, "/cancel", "2")
	require.Equal(t, tb.srv.DMChannelOf(tb.alice.ID), ch)

	e := receive(t, c.slashes)
	require.Equal(t, "slash_commands", e.Request.Type)
	require.True(t, e.Request.AcceptsResponsePayload)
	cmd, ok := e.Data.(slack.SlashCommand)
	require.True(t, ok, "data is %T", e.Data)
	require.Equal(t, "/cancel", cmd.Command)
	require.Equal(t, "2", cmd.Text)
	require.Equal(t, ch, cmd.ChannelID)
	require.Equal(t, slacktest.ChannelNameDM, cmd.ChannelName)
	require.Equal(t, tb.alice.ID, cmd.UserID)
	require.Equal(t, "alice", cmd.UserName)
	require.Equal(t, trigger, cmd.TriggerID)
	require.Equal(t, tb.srv.TeamID(), cmd.TeamID)
	require.Equal(t, tb.srv.AppID(), cmd.APIAppID)
	require.NotEmpty(t, cmd.ResponseURL)

	require.False(t, tb.srv.Acked(trigger))
	require.NoError(t, c.smc.Ack(*e.Request, map[string]string{"text": "on it"}))
	res := tb.srv.WaitSlashResponse(t, trigger, wait)
	require.Equal(t, "on it", res.Text())
	require.Zero(t, res.Status)
	require.True(t, tb.srv.Acked(trigger))
	require.Equal(t, 1, tb.srv.Deliveries(trigger))
}

// With a commands URL, a command is a signed form POST, sent once, and
// the answer is recorded.
func TestSlashCommandOverHTTP(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	got := make(chan slack.SlashCommand, 4)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Checked here, answered with an error: require must not run
		// outside the test goroutine.
		sv, err := slack.NewSecretsVerifier(r.Header, tb.srv.SigningSecret())
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "bad", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		cmd, err := slack.SlashCommandParse(r)
		if err != nil {
			http.Error(w, "unreadable", http.StatusBadRequest)
			return
		}
		got <- cmd
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"response_type": "ephemeral", "text": "not here"})
	}))
	t.Cleanup(app.Close)
	tb.srv.UseSlashCommandsURL(app.URL + "/slack/commands")

	trigger := tb.srv.SendSlashCommandIn("C0GENERAL01", "general", tb.alice, "/help", "")
	cmd := receive(t, got)
	require.Equal(t, "/help", cmd.Command)
	require.Equal(t, "", cmd.Text)
	require.Equal(t, "C0GENERAL01", cmd.ChannelID)
	require.Equal(t, "general", cmd.ChannelName)
	require.Equal(t, trigger, cmd.TriggerID)
	res := tb.srv.WaitSlashResponse(t, trigger, wait)
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "not here", res.Text())
	require.True(t, tb.srv.Acked(trigger))
	require.Equal(t, 1, tb.srv.Deliveries(trigger))
}
