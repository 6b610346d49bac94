package slacktest

// ForgeTap is Tap with any value, whether or not the message shows a
// button with it (its action_id and block_id are then "forged"): what a
// client still showing buttons the bot has since replaced sends, or a tap
// on buttons the bot posted before its database was replaced. A bot must
// take a button's value as a claim to check against its own record. The
// tap is delivered and acknowledged as Tap's; the message must still be
// one of the bot's in channelID.
func (s *taps) ForgeTap(from User, channelID, ts, value string) (triggerID string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tapLocked(from, channelID, ts, value, false)
}
