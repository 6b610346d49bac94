package discordtest

// ForgeTap is Tap with any custom_id, whether or not the message shows
// that button, enabled: what a client still showing buttons the bot has
// since disabled sends, or a modified one, or a tap on buttons the bot sent
// before its database was replaced. A bot must take a custom_id as a claim
// to check against its own record. The interaction is a real one: its
// callbacks are taken as Tap's. The message must still be one the bot
// sent in from's DM. It returns the interaction id.
func (s *Server) ForgeTap(from User, messageID, customID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tapDMLocked(from, messageID, customID, false)
}
