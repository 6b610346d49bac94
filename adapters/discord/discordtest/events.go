package discordtest

// eventFeed makes users send and edit messages, and the bot's own
// messages echo, as gateway events.
type eventFeed struct {
	*state
	*delivery
}

// SendDM plays from writing content to the bot in a direct message: it
// opens the user's DM channel if needed and dispatches MESSAGE_CREATE
// without guild_id. It returns the channel and the new message's id.
func (s *eventFeed) SendDM(from User, content string) (channelID, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.dmChannelLocked(from.ID)
	return ch.id, s.createInboundLocked(ch, from.wire(), nil, content)
}

// SendGuild plays from writing content in a guild text channel (known
// from then on) and dispatches MESSAGE_CREATE with guild_id and member.
// It returns the new message's id.
func (s *eventFeed) SendGuild(guildID, channelID string, from User, content string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.guildChannelLocked(guildID, channelID)
	member := &wireMember{Roles: []string{}, JoinedAt: discordTime(s.now())}
	return s.createInboundLocked(ch, from.wire(), member, content)
}

// SendOwn dispatches a MESSAGE_CREATE authored by the bot itself in
// channelID, as Discord does for the bot's messages (sent from this or
// another process). A channel the fake does not know is made a guild-less
// text channel. The message is not recorded in Sent. It returns the id.
func (s *eventFeed) SendOwn(channelID, content string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.guildChannelLocked("", channelID)
	return s.createInboundLocked(ch, s.botWire(), nil, content)
}

// EditDM plays from editing their message messageID in their DM with the
// bot: MESSAGE_UPDATE with the new content and edited_timestamp.
func (s *eventFeed) EditDM(from User, messageID, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.dmChannelLocked(from.ID)
	at := s.now()
	if in, ok := s.inbound[messageID]; ok {
		at = in.at
	}
	m := newMessageWire(messageID, ch, from.wire(), content, at)
	edited := discordTime(s.now())
	m.EditedTimestamp = &edited
	s.dispatchLocked("MESSAGE_UPDATE", m, ch)
	s.notify()
}

// DeleteDM plays from deleting their message messageID in their DM with
// the bot: MESSAGE_DELETE with the message's and the channel's ids (all
// Discord says).
func (s *eventFeed) DeleteDM(from User, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.dmChannelLocked(from.ID)
	s.dispatchLocked("MESSAGE_DELETE", map[string]string{"id": messageID, "channel_id": ch.id}, ch)
	s.notify()
}

// ReactDM plays from reacting with emoji (a Unicode emoji) to message
// messageID in their DM with the bot, or taking that reaction back:
// MESSAGE_REACTION_ADD or MESSAGE_REACTION_REMOVE, as Discord sends them
// in a DM (no guild_id, no member), to sessions with the direct message
// reactions intent when intents are strict.
func (s *eventFeed) ReactDM(from User, messageID, emoji string, removed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.dmChannelLocked(from.ID)
	ev := "MESSAGE_REACTION_ADD"
	if removed {
		ev = "MESSAGE_REACTION_REMOVE"
	}
	s.dispatchLocked(ev, map[string]any{"user_id": from.ID, "channel_id": ch.id, "message_id": messageID,
		"emoji": map[string]any{"id": nil, "name": emoji}, "burst": false, "type": 0}, ch)
	s.notify()
}
