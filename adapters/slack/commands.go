package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/slack/mrkdwn"
	"github.com/parleybot/parley/core"
)

// CommandsPath is where Slack posts slash commands in events mode: the
// Request URL of each of the app's slash commands.
const CommandsPath = "/webhooks/slack/commands"

// What Slack shows the user who typed a command, and no one else, when
// the core does not answer it in the DM.
const (
	slashNotHere = "I answer commands in our direct messages: open my Messages tab and send it there."
	slashNotNow  = "Sorry, I couldn't take that just now. Please try again in a moment."
)

// dmLookup bounds finding the bot's DM with a user (conversations.open),
// so that a slow Slack leaves the rest of the ack budget to the core.
const dmLookup = time.Second

// slashAnswer is the answer Slack shows the user alone.
type slashAnswer struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// handleSlash hands a slash command typed in the user's DM with the bot
// to the core as the text "/command args", like a message: the core
// answers it in the DM (a command it does not know is text for the
// model). Slack sends no message event for a slash command, so this is
// the only way "/new" typed in Slack reaches the core. It returns what to
// answer Slack at once, shown to the user alone: "" when the core has the
// command; a note when it was typed outside the bot's DM or could not be
// taken.
func (in *inbound) handleSlash(ctx context.Context, cmd slack.SlashCommand) string {
	if cmd.Command == "" || cmd.UserID == "" || cmd.ChannelID == "" {
		in.log.Warn("ignoring a slack slash command without command, user or channel")
		return ""
	}
	dm, err := in.isBotDM(ctx, cmd)
	if err != nil {
		in.log.Warn("finding the bot's DM for a slack slash command failed", "command", cmd.Command, "user", cmd.UserID, "err", in.scrub(err))
		return slashNotNow
	}
	if !dm {
		in.log.Debug("a slack slash command outside the bot's DM", "command", cmd.Command, "channel", cmd.ChannelID)
		return slashNotHere
	}
	key := "slash:" + cmd.TriggerID
	if cmd.TriggerID == "" {
		// Unique anyway: without a trigger id there is nothing to dedupe by.
		key = "slash:" + cmd.ChannelID + ":" + in.clock.Now().Format(time.RFC3339Nano)
	}
	text := strings.TrimSpace(cmd.Command + " " + mrkdwn.ToText(cmd.Text))
	ok := in.deliver(ctx, key, 0, cmd.ChannelID, func(ctx context.Context, now time.Time) core.InboundMessage {
		return core.InboundMessage{
			Platform:        Platform,
			ChannelThreadID: cmd.ChannelID,
			ChannelUserID:   cmd.UserID,
			DisplayName:     in.displayName(ctx, cmd.UserID),
			Text:            text,
			// The trigger id is the command's own: a redelivered envelope
			// is stored, and answered, once.
			PlatformMessageID: cmd.TriggerID,
			SentAt:            now.UTC(),
			Direct:            true,
		}
	})
	if !ok {
		return slashNotNow
	}
	return ""
}

// isBotDM reports whether a slash command was typed in the user's DM
// with the bot. Slack calls every direct message "directmessage",
// another person's too, so the bot's DM with the user is looked up
// (conversations.open, then cached).
func (u *users) isBotDM(ctx context.Context, cmd slack.SlashCommand) (bool, error) {
	if cmd.ChannelName != "directmessage" && !strings.HasPrefix(cmd.ChannelID, "D") {
		return false, nil
	}
	now := u.clock.Now()
	if dm, ok := u.dms.get(cmd.UserID, now); ok {
		return dm == cmd.ChannelID, nil
	}
	ctx, cancel := context.WithTimeout(ctx, dmLookup)
	defer cancel()
	dm, err := u.OpenDM(ctx, cmd.UserID)
	if err != nil {
		return false, err
	}
	u.dms.put(cmd.UserID, dm, now)
	return dm == cmd.ChannelID, nil
}

// serveCommand takes a slash command POSTed in events mode: the signature
// is checked as for events (401 otherwise), the command handed to the
// core, and Slack answered within its 3 seconds: 200 with no body once
// the core has it, or 200 with a note the user alone sees.
func (in *inbound) serveCommand(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "command too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the command failed", http.StatusBadRequest)
		return
	}
	if err := in.verify(r.Header, body); err != nil {
		in.log.Warn("rejecting a slack slash command with a bad signature", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	cmd, err := slack.SlashCommandParse(r)
	if err != nil {
		// Authentic but unreadable: there is nothing to answer.
		in.log.Warn("skipping a slack slash command that cannot be read", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	// The request's context ends when Slack stops waiting; the handling is
	// bounded by the ack budget and Stop instead.
	note := in.handleSlash(context.WithoutCancel(r.Context()), cmd)
	if note == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(slashAnswer{ResponseType: "ephemeral", Text: note})
}

// onSlashCommand handles a Socket Mode slash_commands envelope and acks
// it, with the note for the user when there is one.
func (in *inbound) onSlashCommand(ctx context.Context, ack func(payload any), data any) {
	cmd, ok := data.(slack.SlashCommand)
	if !ok {
		ack(nil)
		return
	}
	if note := in.handleSlash(ctx, cmd); note != "" {
		ack(slashAnswer{ResponseType: "ephemeral", Text: note})
		return
	}
	ack(nil)
}
