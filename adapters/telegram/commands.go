package telegram

import (
	"context"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// registerCommands puts the chat commands h answers in the command menu
// of private chats (setMyCommands), or clears that menu when h answers
// none (commands.enabled: false), so it never offers what is not there.
// The default scope, which an owner may fill with @BotFather, is left
// alone. A failure is logged, never fatal: typed, the commands work
// without the menu.
func (a *Adapter) registerCommands(ctx context.Context, b *bot.Bot, h core.Host) {
	scope := &models.BotCommandScopeAllPrivateChats{}
	cmds := h.Commands()
	if len(cmds) == 0 {
		if _, err := b.DeleteMyCommands(ctx, &bot.DeleteMyCommandsParams{Scope: scope}); err != nil {
			a.log.Warn("clearing the command menu with deleteMyCommands failed", "err", a.scrub(err))
		}
		return
	}
	list := make([]models.BotCommand, len(cmds))
	for i, c := range cmds {
		list[i] = models.BotCommand{Command: c.Name, Description: c.Description}
	}
	if _, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: list, Scope: scope}); err != nil {
		a.log.Warn("registering the chat commands with setMyCommands failed; they still work when typed", "err", a.scrub(err))
		return
	}
	a.log.Debug("chat commands registered", "count", len(list))
}
