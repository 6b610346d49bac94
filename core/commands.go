package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"
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
}

// CommandReplier is an optional CommandHandler capability: Run with
// metadata for the stored answer. The Dispatcher prefers it to Run.
type CommandReplier interface {
	Reply(ctx context.Context, conv Conversation, text string) (CommandReply, error)
}

// DefaultCommandFailure is the answer to a command that failed.
const DefaultCommandFailure = "Sorry, that didn't work. Please try again in a moment."

// commandTimeout bounds running one command and sending its answer. The
// adapter's own deadline (Slack's ack budget) does not cut the answer
// short once the command is stored.
const commandTimeout = 30 * time.Second

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

// Commands lists the chat commands this dispatcher answers; none when
// commands are off. Adapters read it as Host.Commands.
func (d *Dispatcher) Commands() []CommandInfo {
	if d.cfg.Commands == nil {
		return nil
	}
	return d.cfg.Commands.Commands()
}

// handleCommand stores a chat command without planning a run, answers it
// through the conversation's adapter and stores the answer: both are in
// the transcript the model reads later, neither is a user turn. A run
// already queued for the conversation stays queued; it answers the user's
// earlier messages later.
func (d *Dispatcher) handleCommand(ctx context.Context, log *slog.Logger, msg InboundMessage, text string) error {
	name := CommandName(text)
	now := d.cfg.Clock.Now().UTC()
	res, err := d.cfg.Store.RecordInbound(ctx, InboundRecord{
		Platform:          msg.Platform,
		ChannelThreadID:   msg.ChannelThreadID,
		ChannelUserID:     msg.ChannelUserID,
		DisplayName:       storableText(msg.DisplayName),
		TimeZone:          d.cfg.Location.String(),
		Text:              text,
		PlatformMessageID: msg.PlatformMessageID,
		Metadata:          map[string]any{"command": name},
		Source:            SourceCommand,
		Now:               now,
		SessionGap:        d.limits.Gap,
	})
	if errors.Is(err, ErrDuplicateInbound) {
		// Answered already, by this or another replica.
		log.Debug("a redelivered command was already stored", "platform_message_id", msg.PlatformMessageID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording command: %w", err)
	}
	conv := res.Conversation
	d.history.appended(conv, res.Message)
	log = log.With("conversation", conv.ID, "command", name)

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout)
	defer cancel()
	reply, err := d.runCommand(ctx, conv, text)
	meta := map[string]any{"command": name}
	maps.Copy(meta, reply.Metadata)
	if err != nil {
		log.Error("chat command failed", "err", err)
		reply.Text = DefaultCommandFailure
		meta["command_failed"] = true
	}
	answer := &Message{
		ConversationID: conv.ID,
		Role:           RoleAssistant,
		Content:        reply.Text,
		Source:         SourceCommand,
		// The record the command was in, even when the command ended it
		// (/new): the answer closes that record, the next message opens one.
		SessionRecordID: res.Message.SessionRecordID,
		Metadata:        meta,
		CreatedAt:       now,
	}
	if a, ok := d.adapters[conv.Platform]; ok {
		sent, err := d.send(ctx, a, OutboundMessage{
			ConversationID:  conv.ID,
			ChannelThreadID: conv.ChannelThreadID,
			ChannelUserID:   conv.ChannelUserID,
			Text:            answer.Content,
			Format:          FormatRichText,
			IdempotencyKey:  fmt.Sprintf("command-%d", res.Message.ID),
		})
		if len(sent.PlatformMessageIDs) > 0 {
			answer.PlatformMessageID = sent.PlatformMessageIDs[0]
			if len(sent.PlatformMessageIDs) > 1 {
				meta["platform_message_ids"] = sent.PlatformMessageIDs
			}
		}
		if err != nil {
			log.Warn("sending a command's answer", "err", err)
			meta["undelivered"] = err.Error()
		}
	}
	if err := d.cfg.Store.AppendMessage(ctx, answer); err != nil {
		return fmt.Errorf("storing the answer to /%s: %w", name, err)
	}
	d.history.appended(conv, *answer)
	return nil
}

// runCommand runs the command through the handler, with metadata when it
// can give some.
func (d *Dispatcher) runCommand(ctx context.Context, conv Conversation, text string) (CommandReply, error) {
	if r, ok := d.cfg.Commands.(CommandReplier); ok {
		return r.Reply(ctx, conv, text)
	}
	reply, err := d.cfg.Commands.Run(ctx, conv, text)
	return CommandReply{Text: reply}, err
}

// isCommandMessage reports whether m is a chat command or its answer.
func isCommandMessage(m Message) bool { return m.Source == SourceCommand }

// commandsFirst puts the chat commands answered since the model last
// spoke ahead of the user's messages waiting for it, so that the prompt
// ends with what the user said, not with a command's answer ("hi", then
// "/reminders" within the debounce: the turn answers "hi" and knows the
// listing). Everything else keeps its order. history is not modified.
func commandsFirst(history []Message) []Message {
	tail := len(history)
	for tail > 0 {
		m := history[tail-1]
		if m.Role == RoleAssistant && !isCommandMessage(m) {
			break
		}
		tail--
	}
	waiting := history[tail:]
	moved := false
	seenUser := false
	for _, m := range waiting {
		if isCommandMessage(m) {
			moved = moved || seenUser
		} else {
			seenUser = true
		}
	}
	if !moved {
		return history
	}
	out := make([]Message, 0, len(history))
	out = append(out, history[:tail]...)
	for _, m := range waiting {
		if isCommandMessage(m) {
			out = append(out, m)
		}
	}
	for _, m := range waiting {
		if !isCommandMessage(m) {
			out = append(out, m)
		}
	}
	return out
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
