package telegram

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

// lister is a core that answers chat commands, as the Dispatcher does.
type lister struct {
	*adaptertest.Recorder
	cmds []core.CommandInfo
}

func (l lister) Commands() []core.CommandInfo { return l.cmds }

var menu = []core.CommandInfo{{Name: "help", Description: "List the commands"}, {Name: "cancel", Description: "Cancel reminder N of /reminders"}}

func TestStartRegistersTheChatCommands(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.startWith(t, lister{Recorder: b.core, cmds: menu})
	// Registered before Start returned.
	require.Equal(t, []telegramtest.Command{{Command: "help", Description: "List the commands"},
		{Command: "cancel", Description: "Cancel reminder N of /reminders"}}, b.srv.MyCommands("all_private_chats"))
	require.Nil(t, b.srv.MyCommands("default"), "the owner's @BotFather menu is left alone")

	b.srv.SendPrivate(ada, "/help")
	got := b.core.Wait(t, 1, waitFor)
	require.Equal(t, "/help", got[0].Text, "a command arrives as text for the core")
}

func TestARefusedCommandMenuIsNotFatal(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.srv.FailNext("setMyCommands", telegramtest.Fault{Code: http.StatusBadRequest, Description: "Bad Request: BOT_COMMAND_INVALID"})
	b.startWith(t, lister{Recorder: b.core, cmds: menu})
	require.Contains(t, b.logs.String(), "registering the chat commands with setMyCommands failed")
	require.Contains(t, b.logs.String(), "BOT_COMMAND_INVALID")
	require.Nil(t, b.srv.MyCommands("all_private_chats"))
	b.greet(t, ada) // the bot runs on
}

// With commands off (the host lists none) the menu a previous run
// registered is cleared.
func TestNoCommandsClearTheMenu(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.startWith(t, lister{Recorder: b.core, cmds: menu})
	require.Len(t, b.srv.MyCommands("all_private_chats"), 2)

	second := func(h core.Host) {
		a := New()
		a.Token, a.APIURL = config.Secret(b.srv.Token()), b.srv.URL()
		a.Mode, a.WebhookSecret = ModeWebhook, "s3cret" // no second poller
		require.NoError(t, a.Provision(context.Background(), core.Env{Logger: b.logs.Logger()}))
		require.NoError(t, a.Validate())
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, a.Start(ctx, h))
		require.NoError(t, a.Stop(ctx))
	}
	second(lister{Recorder: adaptertest.NewRecorder()})
	require.Nil(t, b.srv.MyCommands("all_private_chats"))
	require.Equal(t, 1, b.srv.Calls("deleteMyCommands"))
}
