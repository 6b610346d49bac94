package discord

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/backoff"
)

// onMessageCreate hands a DM to the core. It runs on the gateway's reading
// goroutine (SyncEvents), one event at a time. A panic, whatever its cause,
// is logged and the event skipped, so a strange event never stops the bot.
func (g *gateway) onMessageCreate(_ *discordgo.Session, ev *discordgo.MessageCreate) {
	h, ctx, ok := g.enter()
	if !ok {
		return
	}
	defer g.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("panic while handling a discord message", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	msg, ok := g.normalise(ev)
	if !ok {
		return
	}
	// The gateway never delivers an event twice, so a core that cannot take
	// the message (its database briefly locked or down) gets a few more
	// tries, in order, before the message is given up loudly. Behind
	// `parley run`'s inbound spool that only happens when the spool cannot
	// keep it either: full, which says so (core.ErrInboundLost, then no try
	// is waited for), or its disk full while the store cannot write.
	for attempt := 1; ; attempt++ {
		err := h.HandleInbound(ctx, msg)
		if err == nil || ctx.Err() != nil {
			return
		}
		if attempt == inboundAttempts || errors.Is(err, core.ErrInboundLost) {
			g.log.Error("handing a discord message to the core failed; the message is dropped",
				"message_id", msg.PlatformMessageID, "channel_id", msg.ChannelThreadID, "attempts", attempt, "err", err)
			return
		}
		wait := inboundBackoff().Delay(attempt - 1)
		g.log.Warn("handing a discord message to the core failed; retrying",
			"message_id", msg.PlatformMessageID, "attempt", attempt, "retry_in", wait, "err", err)
		if !g.sleep(ctx, wait) {
			return
		}
	}
}

// inboundAttempts bounds the tries to hand one DM to the core (about 3 s).
const inboundAttempts = 5

// inboundBackoff spaces those tries: 100ms, doubling.
func inboundBackoff() backoff.Policy { return backoff.Policy{Initial: 100 * time.Millisecond} }

// enter registers an event being handled, unless the adapter is stopping.
func (st *state) enter() (core.Host, context.Context, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stopped || st.handler == nil {
		return nil, nil, false
	}
	st.wg.Add(1)
	return st.handler, st.runCtx, true
}

// normalise turns a DM with text, files or stickers into a
// core.InboundMessage; for anything
// else it logs why and reports false.
func (g *gateway) normalise(ev *discordgo.MessageCreate) (core.InboundMessage, bool) {
	if ev == nil || ev.Message == nil {
		g.log.Warn("skipping a malformed discord message event: no message")
		return core.InboundMessage{}, false
	}
	m := ev.Message
	log := g.log.With("message_id", m.ID, "channel_id", m.ChannelID)
	g.healthMu.Lock()
	botID := g.botID
	g.healthMu.Unlock()
	switch {
	case m.GuildID != "":
		log.Debug("ignoring a discord message in a server", "guild_id", m.GuildID)
		return core.InboundMessage{}, false
	case !isSnowflake(m.ID) || !isSnowflake(m.ChannelID):
		log.Warn("skipping a malformed discord message: no message or channel id")
		return core.InboundMessage{}, false
	case m.Author == nil || !isSnowflake(m.Author.ID):
		log.Warn("skipping a malformed discord message: no author")
		return core.InboundMessage{}, false
	case m.Author.ID == botID || m.Author.Bot:
		log.Debug("ignoring a discord message from a bot", "author_id", m.Author.ID)
		return core.InboundMessage{}, false
	case m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply:
		log.Debug("ignoring a discord system message", "type", int(m.Type))
		return core.InboundMessage{}, false
	}
	// A photo, a voice message or a sticker may come without text: it is
	// still the user talking to the bot.
	files := g.attachmentsOf(m)
	if strings.TrimSpace(m.Content) == "" && len(files) == 0 {
		log.Debug("ignoring a discord message without text or files")
		return core.InboundMessage{}, false
	}
	sentAt := m.Timestamp
	if sentAt.IsZero() {
		// A snowflake holds its creation time.
		if t, err := discordgo.SnowflakeTimestamp(m.ID); err == nil {
			sentAt = t
		} else {
			sentAt = g.clock.Now()
		}
	}
	name := m.Author.GlobalName
	if strings.TrimSpace(name) == "" {
		name = m.Author.Username
	}
	return core.InboundMessage{
		Platform:          Platform,
		ChannelThreadID:   m.ChannelID,
		ChannelUserID:     m.Author.ID,
		DisplayName:       name,
		Text:              m.Content,
		PlatformMessageID: m.ID,
		SentAt:            sentAt.UTC(),
		Direct:            true,
		Attachments:       files,
	}, true
}

// isSnowflake reports whether id looks like a Discord id: 1-20 digits. Ids
// go into request paths, so nothing else may pass.
func isSnowflake(id string) bool {
	if id == "" || len(id) > 20 {
		return false
	}
	for _, r := range id {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
