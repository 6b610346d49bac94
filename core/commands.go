package core

import (
	"context"
	"strings"
	"unicode"
)

// CommandHandler answers chat commands without the model.
type CommandHandler interface {
	// IsCommand reports whether text is one of its commands: "/help",
	// "/cancel 2", "/start@SomeBot" (Telegram appends the bot's name in
	// groups). Any other /word is not a command: it is text for the model.
	IsCommand(text string) bool
	// Run answers the command text in conv. The reply is Markdown.
	Run(ctx context.Context, conv Conversation, text string) (reply string, err error)
	// Commands lists the commands, for /help and Telegram's setMyCommands.
	Commands() []CommandInfo
}

// CommandInfo describes one chat command.
type CommandInfo struct {
	// Name is the command without its slash ("help").
	Name        string
	Description string
}

// CommandReply is a command's answer with what to keep on the stored
// answer: /reminders keeps the ids of the jobs it listed, so that a later
// "/cancel 2" cancels the second one the user was shown.
type CommandReply struct {
	Text     string
	Metadata map[string]any
	// Choices are buttons (a reminder's cancel, a confirmation) where the
	// platform has them, Data the handler's own (CommandData), a tap back
	// to CommandTapper; elsewhere the text says what to type instead.
	Choices []Choice
	// OneAnswer: the buttons take one answer (a confirmation), then
	// close; otherwise each works on its own (a listing's cancels).
	OneAnswer bool
	// Files go with the answer (/export's), as a reply's do.
	Files []OutboundFile
}

// CommandDataPrefix starts the Data of a command's buttons, and no other.
const CommandDataPrefix = "c"

// IsCommandData reports whether a button's data is a command's.
func IsCommandData(data string) bool { return strings.HasPrefix(data, CommandDataPrefix) }

// CommandTapper is an optional CommandHandler capability: answer a tap on
// a button a command's answer showed. The core has checked that the
// button is on that answer, in conv; the handler checks what the data
// names (a job of conv's). It runs without the model.
type CommandTapper interface {
	TapCommand(ctx context.Context, conv Conversation, data string) (CommandTap, error)
}

// CommandTap is a command button's answer: Reply is sent into the
// conversation and stored as a command's answer ("" sends none), Notice
// acknowledges the tap ("Cancelled.").
type CommandTap struct {
	Reply  CommandReply
	Notice string
}

// CommandReplier is an optional CommandHandler capability: Run with
// metadata for the stored answer. The intake engine prefers it to Run.
type CommandReplier interface {
	Reply(ctx context.Context, conv Conversation, text string) (CommandReply, error)
}

// DefaultCommandFailure is the answer to a command that failed.
const DefaultCommandFailure = "Sorry, that didn't work. Please try again in a moment."

// CommandName is the name of the command text starts with, lowercased and
// without its slash or a "@botname" suffix ("/Cancel@bot 2" → "cancel");
// "" when text does not start with "/word".
func CommandName(text string) string {
	first := strings.TrimLeftFunc(text, unicode.IsSpace)
	if i := strings.IndexFunc(first, unicode.IsSpace); i >= 0 {
		first = first[:i]
	}
	return commandName(first)
}

// commandName is the command's name in its first word ("/Help@bot" →
// "help"); "" when the word is not "/name" with a name of letters, digits
// and underscores.
func commandName(word string) string {
	name, ok := strings.CutPrefix(word, "/")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "@")
	if name == "" {
		return ""
	}
	for _, r := range name {
		if !(r == '_' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return ""
		}
	}
	return strings.ToLower(name)
}
