package discord

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/core"
)

// onMessageUpdate hands a user's edit of a DM to the core
// (core.ChangeHandler): the stored text follows. Discord also sends an
// update when an embed of the message resolves, with the content as it
// was; the core ignores a change that is no change. Updates outside DMs,
// of the bot's own messages, or without content are ignored.
func (g *gateway) onMessageUpdate(_ *discordgo.Session, ev *discordgo.MessageUpdate) {
	if ev == nil || ev.Message == nil {
		return
	}
	m := ev.Message
	if m.GuildID != "" || m.Author == nil || m.Author.Bot || m.Content == "" || !isSnowflake(m.ID) || !isSnowflake(m.ChannelID) {
		return
	}
	at := g.clock.Now()
	if m.EditedTimestamp != nil {
		at = *m.EditedTimestamp
	}
	g.change(core.MessageChange{Platform: Platform, ChannelThreadID: m.ChannelID, ChannelUserID: m.Author.ID,
		PlatformMessageID: m.ID, Text: m.Content, At: at})
}

// onMessageDelete hands a user's deletion of a DM to the core: the
// message leaves the window. Discord says only which message went; the
// core ignores one that is not a user's message it knows (the bot's own
// included).
func (g *gateway) onMessageDelete(_ *discordgo.Session, ev *discordgo.MessageDelete) {
	if ev == nil || ev.Message == nil || ev.GuildID != "" || !isSnowflake(ev.ID) || !isSnowflake(ev.ChannelID) {
		return
	}
	g.change(core.MessageChange{Platform: Platform, ChannelThreadID: ev.ChannelID, PlatformMessageID: ev.ID,
		Deleted: true, At: g.clock.Now()})
}

// change hands c to the core, on the gateway's reading goroutine like the
// messages it changes, so that an edit never overtakes its message.
func (g *gateway) change(c core.MessageChange) {
	h, ctx, ok := g.enter()
	if !ok {
		return
	}
	defer g.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("panic while handling a discord message change", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if err := h.HandleChange(ctx, c); err != nil {
		g.log.Warn("the core could not take a discord message change; the stored text stays as it was",
			"message_id", c.PlatformMessageID, "channel_id", c.ChannelThreadID, "deleted", c.Deleted, "err", err)
	}
}

// onReactionAdd and onReactionRemove hand a user's reaction to one of
// the bot's messages in a DM to the core, which keeps it with the message
// for the next turn (it starts none). The bot's own reactions are not the
// user's.
func (g *gateway) onReactionAdd(_ *discordgo.Session, ev *discordgo.MessageReactionAdd) {
	if ev != nil {
		g.reaction(ev.MessageReaction, false)
	}
}

func (g *gateway) onReactionRemove(_ *discordgo.Session, ev *discordgo.MessageReactionRemove) {
	if ev != nil {
		g.reaction(ev.MessageReaction, true)
	}
}

func (g *gateway) reaction(r *discordgo.MessageReaction, removed bool) {
	if r == nil || r.GuildID != "" || !isSnowflake(r.MessageID) || !isSnowflake(r.ChannelID) || !isSnowflake(r.UserID) || r.Emoji.Name == "" {
		return
	}
	g.healthMu.Lock()
	botID := g.botID
	g.healthMu.Unlock()
	if r.UserID == botID {
		return
	}
	h, ctx, ok := g.enter()
	if !ok {
		return
	}
	defer g.wg.Done()
	err := h.HandleReaction(ctx, core.Reaction{Platform: Platform, ChannelThreadID: r.ChannelID, ChannelUserID: r.UserID,
		MessageID: r.MessageID, Emoji: r.Emoji.Name, Removed: removed, At: g.clock.Now()})
	if err != nil {
		g.log.Warn("the core could not take a discord reaction", "message_id", r.MessageID, "err", err)
	}
}

// React adds the bot's reaction emoji (a Unicode emoji, or name:id of a
// custom one) to message messageID of the DM channelThreadID
// (core.Reactor), with a send's retries.
func (sm *streamer) React(ctx context.Context, channelThreadID, messageID, emoji string) error {
	return sm.ownReaction(ctx, channelThreadID, messageID, emoji, "reacting", func(s *discordgo.Session, opts ...discordgo.RequestOption) error {
		return s.MessageReactionAdd(channelThreadID, messageID, emoji, opts...)
	})
}

// Unreact takes the bot's reaction emoji off message messageID
// (core.Unreactor; DELETE .../@me). One not there is no error: Discord
// answers 204 all the same, and a message gone has none left.
func (sm *streamer) Unreact(ctx context.Context, channelThreadID, messageID, emoji string) error {
	err := sm.ownReaction(ctx, channelThreadID, messageID, emoji, "taking back a reaction", func(s *discordgo.Session, opts ...discordgo.RequestOption) error {
		return s.MessageReactionRemove(channelThreadID, messageID, emoji, "@me", opts...)
	})
	if unknownMessage(err) {
		return nil
	}
	return err
}

// ownReaction makes call, a request on the bot's reaction to a message,
// with a send's retries; what names it in errors.
func (sm *streamer) ownReaction(ctx context.Context, channelThreadID, messageID, emoji, what string,
	call func(*discordgo.Session, ...discordgo.RequestOption) error) error {
	what += " on discord"
	s, err := (&sender{sm.state}).sendable(ctx, core.OutboundMessage{ChannelThreadID: channelThreadID}, what)
	if err != nil {
		return err
	}
	if !isSnowflake(messageID) || strings.TrimSpace(emoji) == "" {
		return &core.PermanentError{Reason: fmt.Sprintf("%s: no emoji %q or discord message %q", what, emoji, messageID)}
	}
	ctx, cancel := context.WithTimeout(ctx, sm.sendTimeout)
	defer cancel()
	bucket := discordgo.EndpointMessageReactions(channelThreadID, messageID, "")
	_, err = retrying(ctx, sm.state, s, bucket, "", what, []any{"channel_id", channelThreadID, "message_id", messageID},
		func(ctx context.Context) (struct{}, error) {
			return struct{}{}, call(s, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
		})
	if err != nil {
		return fmt.Errorf("%s with %s: %w", what, emoji, err)
	}
	return nil
}
