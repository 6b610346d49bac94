// Package commands answers the chat commands without the model: /start,
// /help, /new, /reminders, /cancel N, /forget and /timezone ZONE. The
// core's Dispatcher stores each command and its answer in the
// conversation (source "command"), so the model knows what happened, but
// a command starts no turn.
package commands

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
)

// Store is what the commands read and change; store implements it.
type Store interface {
	ConversationJobs(ctx context.Context, conversationID int64, kind core.JobKind, statuses ...core.JobStatus) ([]core.Job, error)
	CancelJob(ctx context.Context, conversationID, id int64, toolCallID string) (core.Job, error)
	MoveRecurringJob(ctx context.Context, id int64, next time.Time) (bool, error)
	SetTimeZone(ctx context.Context, conversationID int64, zone string) error
	EndSessionRecord(ctx context.Context, conversationID int64, at time.Time) (*int64, error)
	RecentMessages(ctx context.Context, conversationID int64, limit int) ([]core.Message, error)
}

// Config wires a Handler. Store is required.
type Config struct {
	Store Store
	// Facts are the facts a plugin keeps about the user (the memory
	// plugin), which /forget lists and erases (nil: none are kept).
	Facts core.FactKeeper
	// BotName is the name /start introduces (default "Parley").
	BotName string
	// Location is the zone of users who have not set theirs (default UTC).
	Location *time.Location
	// Clock tells the time (default the system clock).
	Clock  core.Clock
	Logger *slog.Logger
	// JobsChanged, when set, wakes the scheduler after a job was cancelled
	// or moved.
	JobsChanged func()
	// Gate names the bot's owners; with some and Pairings, owners get
	// /approve, /deny and /pairing, and Approved announces a user let in.
	Gate     *access.Gate
	Pairings PairingDesk
	Approved func(ctx context.Context, p access.Request)
	// Export, when set, is everything kept about the user of conv, as
	// files (/export).
	Export func(ctx context.Context, conv core.Conversation) ([]core.OutboundFile, error)
	// Erase, when set, deletes everything kept about the user of conv
	// (/erase), returning how many rows went.
	Erase func(ctx context.Context, conv core.Conversation) (int64, error)
}

// Handler answers the chat commands. It implements core.CommandHandler
// and core.CommandReplier.
type Handler struct {
	cfg    Config
	list   []command
	byName map[string]command
}

// Interface guards.
var (
	_ core.CommandHandler = (*Handler)(nil)
	_ core.CommandReplier = (*Handler)(nil)
)

// command is one chat command: its name, what /help and Telegram's menu
// say of it, how /help writes its use, and what answers it.
type command struct {
	name, description, usage string
	run                      func(ctx context.Context, conv core.Conversation, args string) (core.CommandReply, error)
	// owners: only the bot's owners see it in /help and may run it.
	owners bool
}

// New returns a Handler with cfg's defaults filled in.
func New(cfg Config) *Handler {
	if cfg.BotName == "" {
		cfg.BotName = "Parley"
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Clock == nil {
		cfg.Clock = core.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.JobsChanged == nil {
		cfg.JobsChanged = func() {}
	}
	if cfg.Facts == nil {
		cfg.Facts = noFacts{}
	}
	if cfg.Approved == nil {
		cfg.Approved = func(context.Context, access.Request) {}
	}
	h := &Handler{cfg: cfg}
	h.list = []command{
		{name: "start", description: "Say hello", usage: "/start", run: h.start},
		{name: "help", description: "List the commands", usage: "/help", run: h.help},
		{name: "new", description: "Start a fresh conversation (I keep what I remember)", usage: "/new", run: h.newSession},
		{name: "reminders", description: "Show your reminders and recurring messages", usage: "/reminders", run: h.reminders},
		{name: "cancel", description: "Cancel reminder N of /reminders", usage: "/cancel N", run: h.cancel},
		{name: "forget", description: "See what I remember; /forget all erases it", usage: "/forget", run: h.forget},
		{name: "timezone", description: "Show or set your time zone", usage: "/timezone ZONE", run: h.timezone},
	}
	if cfg.Export != nil {
		h.list = append(h.list, command{name: "export", description: "Get a copy of everything I keep about you", usage: "/export", run: userData{h}.export})
	}
	if cfg.Erase != nil {
		h.list = append(h.list, command{name: "erase", description: "Delete everything I keep about you, for good", usage: "/erase", run: userData{h}.erase})
	}
	h.list = append(h.list, h.ownerCommands()...)
	h.byName = make(map[string]command, len(h.list))
	for _, c := range h.list {
		h.byName[c.name] = c
	}
	return h
}

// Commands lists the commands in /help's order, for a platform's menu,
// which every user sees: the owners' are not in it.
func (h *Handler) Commands() []core.CommandInfo {
	out := make([]core.CommandInfo, 0, len(h.list))
	for _, c := range h.list {
		if !c.owners {
			out = append(out, core.CommandInfo{Name: c.name, Description: c.description})
		}
	}
	return out
}

// IsCommand reports whether text starts with one of the commands, in any
// case, with or without a "@botname" suffix.
func (h *Handler) IsCommand(text string) bool {
	_, ok := h.byName[core.CommandName(text)]
	return ok
}

// Run answers the command text in conv, in Markdown.
func (h *Handler) Run(ctx context.Context, conv core.Conversation, text string) (string, error) {
	r, err := h.Reply(ctx, conv, text)
	return r.Text, err
}

// Reply answers the command text in conv, with the metadata to keep on the
// stored answer.
func (h *Handler) Reply(ctx context.Context, conv core.Conversation, text string) (core.CommandReply, error) {
	name := core.CommandName(text)
	c, ok := h.byName[name]
	if !ok {
		return core.CommandReply{}, fmt.Errorf("not a command: %q", text)
	}
	if c.owners && !h.isOwner(conv) {
		return reply("Only the bot's owner can do that.")
	}
	r, err := c.run(ctx, conv, arguments(text))
	if err != nil {
		return core.CommandReply{}, fmt.Errorf("/%s: %w", name, err)
	}
	return r, nil
}

// arguments is what follows the command's first word, spaces trimmed.
func arguments(text string) string {
	text = strings.TrimLeftFunc(text, unicode.IsSpace)
	i := strings.IndexFunc(text, unicode.IsSpace)
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(text[i:])
}

func reply(format string, args ...any) (core.CommandReply, error) {
	return core.CommandReply{Text: fmt.Sprintf(format, args...)}, nil
}

func (h *Handler) start(_ context.Context, conv core.Conversation, _ string) (core.CommandReply, error) {
	hello := "Hi!"
	if name := strings.TrimSpace(conv.DisplayName); name != "" {
		hello = "Hi " + escape(name, 60) + "!"
	}
	return reply("%s I'm **%s**. Write to me whenever you like; send /help to see what else I can do.",
		hello, escape(h.cfg.BotName, 60))
}

func (h *Handler) help(_ context.Context, conv core.Conversation, _ string) (core.CommandReply, error) {
	var b strings.Builder
	b.WriteString("Here's what I understand:\n\n")
	owner := h.isOwner(conv)
	for _, c := range h.list {
		if !c.owners {
			fmt.Fprintf(&b, "- %s: %s\n", c.usage, lowerFirst(c.description))
		}
	}
	b.WriteString("\nAnything else you write is just for me to answer.")
	if owner && len(h.ownerCommands()) > 0 {
		b.WriteString("\n\nFor you, as my owner:\n\n")
		for _, c := range h.list {
			if c.owners {
				fmt.Fprintf(&b, "- %s: %s\n", c.usage, lowerFirst(c.description))
			}
		}
	}
	return reply("%s", b.String())
}

func (h *Handler) newSession(ctx context.Context, conv core.Conversation, _ string) (core.CommandReply, error) {
	if _, err := h.cfg.Store.EndSessionRecord(ctx, conv.ID, h.cfg.Clock.Now().UTC()); err != nil {
		return core.CommandReply{}, err
	}
	return reply("Fresh start! Your next message begins a new conversation. " +
		"I still remember what I know about you (see /forget).")
}

// location is the user's zone: the conversation's, else the bot's.
func (h *Handler) location(conv core.Conversation) *time.Location {
	if conv.TimeZone != "" {
		if l, err := time.LoadLocation(conv.TimeZone); err == nil {
			return l
		}
	}
	return h.cfg.Location
}

// when writes t in loc the way the answers show times.
func when(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("Mon 2 Jan 2006, 15:04")
}

// escape makes text safe to show inside Markdown: one line, at most max
// runes, with every character Markdown could read as markup escaped.
func escape(text string, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) > max {
		text = string([]rune(text)[:max-1]) + "…"
	}
	var b strings.Builder
	for _, r := range text {
		if strings.ContainsRune("\\`*_[]<>~|&#!", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// inline is text on one line, cut to max runes, its inline Markdown
// kept: a scheduled message's text is shown as it will be sent, and it is
// sent formatted. It follows other text on its line, so no block (heading,
// list, quote) can start in it.
func inline(text string, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) > max {
		text = string([]rune(text)[:max-1]) + "…"
	}
	return text
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}
