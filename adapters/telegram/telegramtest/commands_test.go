package telegramtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

func TestSetMyCommandsThroughTheClient(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	ok, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{
		Commands: []models.BotCommand{{Command: "help", Description: "List the commands"}, {Command: "cancel_2", Description: "Cancel"}},
		Scope:    &models.BotCommandScopeAllPrivateChats{},
	})
	require.NoError(t, err)
	require.True(t, ok)
	want := []telegramtest.Command{{Command: "help", Description: "List the commands"}, {Command: "cancel_2", Description: "Cancel"}}
	require.Equal(t, want, tb.srv.MyCommands("all_private_chats"))
	require.Nil(t, tb.srv.MyCommands("default"), "registered for its scope only")

	got, err := b.GetMyCommands(ctx, &bot.GetMyCommandsParams{Scope: &models.BotCommandScopeAllPrivateChats{}})
	require.NoError(t, err)
	require.Equal(t, []models.BotCommand{{Command: "help", Description: "List the commands"}, {Command: "cancel_2", Description: "Cancel"}}, got)

	ok, err = b.DeleteMyCommands(ctx, &bot.DeleteMyCommandsParams{Scope: &models.BotCommandScopeAllPrivateChats{}})
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, tb.srv.MyCommands("all_private_chats"))
}

// Invalid commands are refused with Telegram's own errors, and nothing is
// registered.
func TestSetMyCommandsValidates(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	many := make([]map[string]string, 101)
	for i := range many {
		many[i] = map[string]string{"command": "c", "description": "d"}
	}
	for name, tc := range map[string]struct {
		commands any
		scope    string
		want     string
	}{
		"capital letter":      {[]map[string]string{{"command": "Help", "description": "x"}}, "", "Bad Request: BOT_COMMAND_INVALID"},
		"slash":               {[]map[string]string{{"command": "/help", "description": "x"}}, "", "Bad Request: BOT_COMMAND_INVALID"},
		"too long name":       {[]map[string]string{{"command": strings.Repeat("a", 33), "description": "x"}}, "", "Bad Request: BOT_COMMAND_INVALID"},
		"empty name":          {[]map[string]string{{"command": "", "description": "x"}}, "", "Bad Request: BOT_COMMAND_INVALID"},
		"empty description":   {[]map[string]string{{"command": "help", "description": ""}}, "", "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID"},
		"too long desc":       {[]map[string]string{{"command": "help", "description": strings.Repeat("é", 257)}}, "", "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID"},
		"too many":            {many, "", "Bad Request: BOT_COMMANDS_TOO_MUCH"},
		"not a list":          {map[string]string{"command": "help"}, "", "Bad Request: can't parse commands JSON array"},
		"unknown scope type":  {[]map[string]string{{"command": "help", "description": "x"}}, `{"type":"everyone"}`, "Bad Request: can't parse BotCommandScope JSON object"},
		"scope is not object": {[]map[string]string{{"command": "help", "description": "x"}}, `private`, "Bad Request: can't parse BotCommandScope JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(tc.commands)
			require.NoError(t, err)
			form := url.Values{"commands": {string(raw)}}
			if tc.scope != "" {
				form.Set("scope", tc.scope)
			}
			status, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "setMyCommands", form)
			require.Equal(t, http.StatusBadRequest, status, string(body))
			var r apiResponse
			require.NoError(t, json.Unmarshal(body, &r))
			require.False(t, r.OK)
			require.Equal(t, 400, r.ErrorCode)
			require.Equal(t, tc.want, r.Description)
		})
	}
	require.Nil(t, tb.srv.MyCommands("default"))

	// The limits themselves are allowed.
	ok := []map[string]string{{"command": strings.Repeat("a", 32), "description": strings.Repeat("é", 256)}}
	raw, err := json.Marshal(ok)
	require.NoError(t, err)
	status, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "setMyCommands", url.Values{"commands": {string(raw)}})
	require.Equal(t, http.StatusOK, status, string(body))
	require.Len(t, tb.srv.MyCommands("default"), 1)
}
