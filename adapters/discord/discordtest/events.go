package discordtest

// SendDM plays from writing content to the bot in a direct message: it
// opens the user's DM channel if needed and dispatches MESSAGE_CREATE
// without guild_id. It returns the channel and the new message's id.
func (s *Server) SendDM(from User, content string) (channelID, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.dmChannelLocked(from.ID)
	return ch.id, s.createInboundLocked(ch, from.wire(), nil, content)
}

// SendGuild plays from writing content in a guild text channel (known
// from then on) and dispatches MESSAGE_CREATE with guild_id and member.
// It returns the new message's id.
func (s *Server) SendGuild(guildID, channelID string, from User, content string) string {
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
func (s *Server) SendOwn(channelID, content string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.guildChannelLocked("", channelID)
	return s.createInboundLocked(ch, s.botWire(), nil, content)
}

// createInboundLocked makes and dispatches a MESSAGE_CREATE. Callers hold
// s.mu.
func (s *Server) createInboundLocked(ch *channel, author wireUser, member *wireMember, content string) string {
	return s.createInboundWithLocked(ch, author, member, content, nil)
}

// createInboundWithLocked is createInboundLocked with edit applied to the
// message (attachments, stickers, flags) before it is dispatched. Callers
// hold s.mu.
func (s *Server) createInboundWithLocked(ch *channel, author wireUser, member *wireMember, content string, edit func(*wireMessage)) string {
	id := s.newIDLocked()
	at := s.now()
	s.inbound[id] = inbound{channelID: ch.id, at: at}
	m := newMessageWire(id, ch, author, content, at)
	m.Member = member
	if edit != nil {
		edit(&m)
	}
	s.dispatchLocked("MESSAGE_CREATE", m, ch)
	s.notify()
	return id
}

// EditDM plays from editing their message messageID in their DM with the
// bot: MESSAGE_UPDATE with the new content and edited_timestamp.
func (s *Server) EditDM(from User, messageID, content string) {
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
