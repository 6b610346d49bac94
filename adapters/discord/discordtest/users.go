package discordtest

// directory keeps the users and channels the bot can reach, and answers
// GET /channels/{id} and DM creation.
type directory struct{ *state }

// codeUnknownUser is Discord's JSON error code for a user id nobody has.
const codeUnknownUser = 10013

// AddUser makes u a Discord user the bot can open a DM with (POST
// /users/@me/channels) although they never wrote to it. Users who sent a
// DM or a guild message are known already; any other id is 404 Unknown
// User. A known user who does not accept DMs from the bot still gets a DM
// channel, as on Discord: Block them to make messages there fail.
func (s *directory) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// knownUserLocked reports whether a DM may be opened with userID. Callers
// hold s.mu.
func (s *state) knownUserLocked(userID string) bool {
	_, ok := s.users[userID]
	return ok
}

func unknownUser() apiError { return apiError{Message: "Unknown User", Code: codeUnknownUser} }

// DMChannelOf returns the id of the DM channel with userID, "" if none
// was opened yet.
func (s *directory) DMChannelOf(userID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dmOf[userID]
}

// AddGuildChannel makes a guild text channel known, so the bot can send to
// it before any event came from it.
func (s *directory) AddGuildChannel(guildID, channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guildChannelLocked(guildID, channelID)
}
