package discordtest

import (
	"encoding/json"
	"strings"
)

// delivery creates inbound messages and dispatches events to the bot's
// gateway sessions.
type delivery struct{ *state }

// dispatchLocked sends an event to every session: live ones get it now,
// disconnected ones on RESUME. ch is the channel of a message event, nil
// for others. Callers hold s.mu.
func (s *delivery) dispatchLocked(eventType string, d any, ch *channel) {
	raw, _ := json.Marshal(d)
	var blank json.RawMessage
	for _, sess := range s.sessions {
		if ch != nil && ch.typ == channelDM && sess.shard[0] != 0 {
			continue // Discord sends DMs to shard 0 only
		}
		payload := json.RawMessage(raw)
		if s.strictIntents && ch != nil {
			need := intentGuildMessages
			switch {
			case ch.typ == channelDM && strings.HasPrefix(eventType, "MESSAGE_REACTION"):
				need = intentDirectMessageReactions
			case ch.typ == channelDM:
				need = intentDirectMessages
			}
			if sess.intents&need == 0 {
				continue
			}
			if m, ok := d.(wireMessage); ok && s.contentHidden(sess, ch, m) {
				if blank == nil {
					m.Content, m.Embeds = "", []json.RawMessage{}
					blank, _ = json.Marshal(m)
				}
				payload = blank
			}
		}
		f := sess.appendLocked(eventType, payload)
		if sess.conn != nil {
			sess.conn.enqueueLocked(f)
		}
	}
}

// contentHidden reports whether Discord would blank m's content for sess:
// a guild message, no MESSAGE_CONTENT intent, neither by nor mentioning
// the bot.
func (s *delivery) contentHidden(sess *gwSession, ch *channel, m wireMessage) bool {
	if ch.typ == channelDM || sess.intents&intentMessageContent != 0 || m.Author.ID == s.bot.ID {
		return false
	}
	for _, u := range m.Mentions {
		if u.ID == s.bot.ID {
			return false
		}
	}
	return true
}

// createInboundLocked makes and dispatches a MESSAGE_CREATE. Callers hold
// s.mu.
func (s *delivery) createInboundLocked(ch *channel, author wireUser, member *wireMember, content string) string {
	return s.createInboundWithLocked(ch, author, member, content, nil)
}

// createInboundWithLocked is createInboundLocked with edit applied to the
// message (attachments, stickers, flags) before it is dispatched. Callers
// hold s.mu.
func (s *delivery) createInboundWithLocked(ch *channel, author wireUser, member *wireMember, content string, edit func(*wireMessage)) string {
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
