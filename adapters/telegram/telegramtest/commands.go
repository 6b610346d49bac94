package telegramtest

import (
	"context"
	"encoding/json"
	"regexp"
	"unicode/utf8"
)

// Command is one bot command as setMyCommands registered it.
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// maxCommands is how many commands one setMyCommands may register.
const maxCommands = 100

// commandName is what Telegram accepts as a command: 1-32 lowercase
// English letters, digits and underscores.
var commandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// scopeTypes are the BotCommandScope types the Bot API knows.
var scopeTypes = map[string]bool{
	"default": true, "all_private_chats": true, "all_group_chats": true, "all_chat_administrators": true,
	"chat": true, "chat_administrators": true, "chat_member": true,
}

// commandMenu keeps the command menus setMyCommands registers.
type commandMenu struct{ *state }

// MyCommands returns the commands registered for scope ("default",
// "all_private_chats", …) by setMyCommands, in order; nil when there are
// none (never set, or deleted by deleteMyCommands).
func (s *commandMenu) MyCommands(scope string) []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Command(nil), s.myCommands[scope]...)
}

// commandScope reads the scope parameter's type ("default" when absent).
func commandScope(p params) (string, *Fault) {
	raw, ok := p["scope"]
	if !ok || raw == "" {
		return "default", nil
	}
	var sc struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(raw), &sc); err != nil || !scopeTypes[sc.Type] {
		f := badRequest("can't parse BotCommandScope JSON object")
		return "", &f
	}
	return sc.Type, nil
}

// setMyCommands validates the commands as Telegram does (a name of 1-32
// lowercase letters, digits or underscores; a description of 1-256
// characters; at most 100 commands) and registers them for the scope.
func (s *commandMenu) setMyCommands(_ context.Context, p params) (any, *Fault) {
	scope, f := commandScope(p)
	if f != nil {
		return nil, f
	}
	var cmds []Command
	if raw := p["commands"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &cmds); err != nil {
			f := badRequest("can't parse commands JSON array")
			return nil, &f
		}
	}
	if len(cmds) > maxCommands {
		f := badRequest("BOT_COMMANDS_TOO_MUCH")
		return nil, &f
	}
	for _, c := range cmds {
		if !commandName.MatchString(c.Command) {
			f := badRequest("BOT_COMMAND_INVALID")
			return nil, &f
		}
		if n := utf8.RuneCountInString(c.Description); n < 1 || n > 256 {
			f := badRequest("BOT_COMMAND_DESCRIPTION_INVALID")
			return nil, &f
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(cmds) == 0 {
		delete(s.myCommands, scope)
	} else {
		s.myCommands[scope] = cmds
	}
	s.notify()
	return true, nil
}

// deleteMyCommands removes the scope's commands.
func (s *commandMenu) deleteMyCommands(_ context.Context, p params) (any, *Fault) {
	scope, f := commandScope(p)
	if f != nil {
		return nil, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.myCommands, scope)
	s.notify()
	return true, nil
}

// getMyCommands returns the scope's commands ([] when none).
func (s *commandMenu) getMyCommands(_ context.Context, p params) (any, *Fault) {
	scope, f := commandScope(p)
	if f != nil {
		return nil, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Command{}, s.myCommands[scope]...), nil
}
