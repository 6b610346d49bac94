package slacktest

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unicode/utf8"
)

// botMessages answers chat.update and chat.delete and keeps every message
// the bot posted or streamed with its history, for tests to read.
type botMessages struct {
	*state
	*delivery
}

// Revision is one call that made or changed a bot message.
type Revision struct {
	// Method is the Web API method: chat.postMessage, chat.startStream,
	// chat.appendStream, chat.stopStream, chat.update or chat.delete.
	Method string
	// Text is what the call carried: the text posted or updated to
	// (still escaped), or the markdown_text a stream call appended ("" for
	// a stop without text and for a delete).
	Text string
	At   time.Time // by the server's clock (WithNow)
}

// BotMessage is a message of the bot as it stands now.
type BotMessage struct {
	Channel string
	TS      string
	// Text is what the message shows: the text it was posted with or last
	// updated to (mrkdwn, still escaped: &amp; &lt; &gt;), or, for a
	// streamed message never updated, the markdown_text of its stream
	// calls joined.
	Text string
	// Markdown is true while Text is the stream's markdown_text (standard
	// Markdown), false once it is a text field (mrkdwn, or plain when
	// Mrkdwn is false).
	Markdown bool
	Mrkdwn   bool
	// Streamed is true for a message chat.startStream created; Streaming
	// while its stream is open (not stopped).
	Streamed  bool
	Streaming bool
	Deleted   bool
	// Blocks are the message's layout blocks now: as posted, or as the
	// last chat.update that carried blocks left them.
	Blocks []Block
	// History lists the calls that made and changed it, in order.
	History []Revision
}

// addBotMessageLocked records a new bot message. Callers hold s.mu.
func (s *state) addBotMessageLocked(ch, ts, method, text string, markdown, mrkdwn bool) *BotMessage {
	m := &BotMessage{Channel: ch, TS: ts, Text: text, Markdown: markdown, Mrkdwn: mrkdwn,
		History: []Revision{{Method: method, Text: text, At: s.now()}}}
	s.botMsgs[ch+"/"+ts] = m
	s.botOrder[ch] = append(s.botOrder[ch], ts)
	return m
}

// refreshSentLocked makes the SentMessage of m (Sent) show m's text now.
// Callers hold s.mu.
func (s *state) refreshSentLocked(m *BotMessage) {
	for _, i := range s.sentIdx[m.Channel] {
		if s.sent[i].TS == m.TS {
			s.sent[i].Text, s.sent[i].Mrkdwn, s.sent[i].Blocks = m.Text, m.Mrkdwn, m.Blocks
			return
		}
	}
}

// messageLocked finds the bot message a chat.update, chat.delete or
// stream call names: a Slack error code when the channel or the message
// is not there, cant_update_message for a user's message. Callers hold
// s.mu.
func (s *state) messageLocked(p params, cant string) (*BotMessage, string) {
	ch, ts := p["channel"], p["ts"]
	if ch == "" {
		return nil, "channel_not_found"
	}
	if ts == "" {
		return nil, "message_not_found"
	}
	if _, ok := s.channels[ch]; !ok {
		// chat.update and chat.delete want the D… id, never a user id.
		return nil, "channel_not_found"
	}
	m, ok := s.botMsgs[ch+"/"+ts]
	if !ok {
		if _, user := s.inbound[ch+"/"+ts]; user {
			return nil, cant
		}
		return nil, "message_not_found"
	}
	if m.Deleted {
		return nil, "message_not_found"
	}
	return m, ""
}

// chatUpdate replaces a bot message's text as Slack does: a message still
// streaming answers streaming_state_conflict, an empty text with no
// blocks no_text. blocks replace the message's blocks ("[]" clears
// them); without a blocks argument the message keeps its blocks, as
// Slack's does.
func (s *botMessages) chatUpdate(p params) (result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, code := s.messageLocked(p, "cant_update_message")
	if code != "" {
		return nil, code
	}
	if m.Streaming {
		return nil, "streaming_state_conflict"
	}
	text := p["text"]
	if text == "" && !nonEmptyJSONList(p["blocks"]) {
		return nil, "no_text"
	}
	blocks, code := readBlocks(p["blocks"])
	if code != "" {
		return nil, code
	}
	if utf8.RuneCountInString(text) > maxTextRunes {
		return nil, "msg_too_long"
	}
	m.Text, m.Markdown, m.Mrkdwn = text, false, p["mrkdwn"] != "false"
	if _, set := p["blocks"]; set {
		m.Blocks = blocks
	}
	m.History = append(m.History, Revision{Method: "chat.update", Text: text, At: s.now()})
	s.refreshSentLocked(m)
	s.notify()
	msg := s.botMessageLocked(m.Channel, text, m.TS, "")
	return result{"channel": m.Channel, "ts": m.TS, "text": text, "message": msg}, ""
}

// chatDelete deletes a bot message; one already deleted, or never there,
// is message_not_found, a user's message cant_delete_message.
func (s *botMessages) chatDelete(p params) (result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, code := s.messageLocked(p, "cant_delete_message")
	if code != "" {
		return nil, code
	}
	m.Deleted, m.Streaming = true, false
	m.History = append(m.History, Revision{Method: "chat.delete", At: s.now()})
	s.notify()
	return result{"channel": m.Channel, "ts": m.TS}, ""
}

// BotMessage returns the bot's message ts in channel as it stands now.
func (s *botMessages) BotMessage(channel, ts string) (BotMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.botMsgs[channel+"/"+ts]
	if !ok {
		return BotMessage{}, false
	}
	return snapshot(m), true
}

// BotMessages returns every message the bot posted or streamed in
// channel, deleted ones included, in the order they were made.
func (s *botMessages) BotMessages(channel string) []BotMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.botMessagesLocked(channel)
}

func (s *state) botMessagesLocked(channel string) []BotMessage {
	out := make([]BotMessage, 0, len(s.botOrder[channel]))
	for _, ts := range s.botOrder[channel] {
		out = append(out, snapshot(s.botMsgs[channel+"/"+ts]))
	}
	return out
}

// Visible returns the text of each bot message a user sees in channel
// now (not deleted), in order: what the conversation shows of the bot.
func (s *botMessages) Visible(channel string) []string {
	var out []string
	for _, m := range s.BotMessages(channel) {
		if !m.Deleted {
			out = append(out, m.Text)
		}
	}
	return out
}

// StreamOpen reports whether the bot's message ts in channel is a stream
// not yet stopped.
func (s *botMessages) StreamOpen(channel, ts string) bool {
	m, ok := s.BotMessage(channel, ts)
	return ok && m.Streaming
}

// WaitBotMessages waits until cond holds for the bot's messages in
// channel (as BotMessages returns them) and returns them; after timeout
// it fails the test (call it from the test goroutine) with what there
// was.
func (s *botMessages) WaitBotMessages(t testing.TB, channel string, timeout time.Duration, cond func([]BotMessage) bool) []BotMessage {
	t.Helper()
	s.waitFor(t, timeout, func() bool { return cond(s.botMessagesLocked(channel)) },
		func() string {
			return fmt.Sprintf("the bot's messages in %s to match, got %+v", channel, s.BotMessages(channel))
		})
	return s.BotMessages(channel)
}

// WaitShows waits until the bot's messages a user sees in channel (not
// deleted, as Visible lists them) read exactly want, in order, none of
// them a stream still open, and returns them. want is the text as the
// user reads it: each message's Text is compared after Unescape, so a
// test writes "Fish & chips", whether the message was posted (escaped
// mrkdwn) or is a stream's markdown; a test about escaping reads Text
// itself. A reply that grows shows its first words before it is
// finished, so a test reading a streamed reply waits for its final text
// here rather than after WaitSent. After timeout it fails the test (call
// it from the test goroutine) with what the channel shows.
func (s *botMessages) WaitShows(t testing.TB, channel string, timeout time.Duration, want ...string) []BotMessage {
	t.Helper()
	s.waitFor(t, timeout, func() bool {
		shown := notDeleted(s.botMessagesLocked(channel))
		return slices.Equal(texts(shown), want) && !slices.ContainsFunc(shown, func(m BotMessage) bool { return m.Streaming })
	}, func() string {
		shown := notDeleted(s.BotMessages(channel))
		return fmt.Sprintf("%s to show %q, it shows %q (streams open: %v)", channel, want, texts(shown),
			slices.ContainsFunc(shown, func(m BotMessage) bool { return m.Streaming }))
	})
	return notDeleted(s.BotMessages(channel))
}

// notDeleted is the messages of ms not deleted, in order.
func notDeleted(ms []BotMessage) []BotMessage {
	return slices.DeleteFunc(ms, func(m BotMessage) bool { return m.Deleted })
}

// texts is each message's text as a user reads it (Unescape).
func texts(ms []BotMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = Unescape(m.Text)
	}
	return out
}

// snapshot copies m for a caller outside the lock.
func snapshot(m *BotMessage) BotMessage {
	b := *m
	b.History = slices.Clone(m.History)
	b.Blocks = slices.Clone(m.Blocks)
	return b
}
