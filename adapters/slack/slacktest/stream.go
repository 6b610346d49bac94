package slacktest

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// maxMarkdownRunes is Slack's limit on one call's markdown_text.
const maxMarkdownRunes = 12000

// RefuseStreams makes chat.startStream, chat.appendStream and
// chat.stopStream answer {"ok":false,"error":code} from now on, as a
// workspace or token without the streaming feature does: "unknown_method",
// "not_allowed_token_type", "missing_scope" or
// "method_not_supported_for_channel_type". "" allows them again.
func (s *botMessages) RefuseStreams(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streamRefusal = code
}

// RateLimitCalls rate-limits the next n calls of method as RateLimitNext
// does, a 429 storm (e.g. on "chat.update" or "chat.appendStream").
func (s *faultInjector) RateLimitCalls(method string, n int, retryAfter time.Duration) {
	for range n {
		s.RateLimitNext(method, retryAfter)
	}
}

// streamText is the markdown a stream call carries: markdown_text, or the
// text of its markdown_text chunks (other chunk types show no text); a
// Slack error code for chunks that are not a JSON array of typed chunks.
func streamText(p params) (string, bool, string) {
	text, ok := p["markdown_text"]
	if chunks := p["chunks"]; chunks != "" {
		var cs []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(chunks), &cs) != nil {
			return "", false, "invalid_chunks"
		}
		for _, c := range cs {
			if c.Type == "" {
				return "", false, "invalid_chunks"
			}
			if c.Type == "markdown_text" {
				text += c.Text
			}
		}
		ok = true
	}
	if utf8.RuneCountInString(text) > maxMarkdownRunes {
		return "", false, "msg_too_long"
	}
	return text, ok, ""
}

// chatStartStream starts a streamed message: in a DM (a D… id) as a
// top-level message or a reply to thread_ts; elsewhere Slack also wants
// the recipient's user and team.
func (s *botMessages) chatStartStream(p params) (result, string) {
	text, _, code := streamText(p)
	if code != "" {
		return nil, code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streamRefusal != "" {
		return nil, s.streamRefusal
	}
	ch := p["channel"]
	kind, ok := s.channels[ch]
	switch {
	case !ok:
		return nil, "channel_not_found"
	case kind != channelIM && p["recipient_user_id"] == "":
		return nil, "missing_recipient_user_id"
	case kind != channelIM && p["recipient_team_id"] == "":
		return nil, "missing_recipient_team_id"
	}
	if u, ok := s.dmUser[ch]; ok && s.blocked[u] {
		return nil, "is_archived"
	}
	ts := s.nextTSLocked()
	m := s.addBotMessageLocked(ch, ts, "chat.startStream", text, true, true)
	m.Streamed, m.Streaming = true, true
	// A streamed message is a message in the channel (Sent), like a post.
	s.sentIdx[ch] = append(s.sentIdx[ch], len(s.sent))
	s.sent = append(s.sent, SentMessage{Channel: ch, Text: text, TS: ts, Mrkdwn: true, At: s.now()})
	s.notify()
	return result{"channel": ch, "ts": ts}, ""
}

// chatAppendStream appends to an open stream: a stopped stream, or a
// message that never streamed, is message_not_in_streaming_state.
func (s *botMessages) chatAppendStream(p params) (result, string) {
	text, ok, code := streamText(p)
	switch {
	case code != "":
		return nil, code
	case !ok || text == "":
		return nil, "no_text"
	}
	return s.streamCall(p, "chat.appendStream", text, false)
}

// chatStopStream stops an open stream, with a last markdown_text if
// given; the answer carries the finished message.
func (s *botMessages) chatStopStream(p params) (result, string) {
	text, _, code := streamText(p)
	if code != "" {
		return nil, code
	}
	return s.streamCall(p, "chat.stopStream", text, true)
}

// streamCall appends text to the open stream p names and, when stop, ends
// it.
func (s *botMessages) streamCall(p params, method, text string, stop bool) (result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streamRefusal != "" {
		return nil, s.streamRefusal
	}
	m, code := s.messageLocked(p, "message_not_in_streaming_state")
	if code != "" {
		return nil, code
	}
	if !m.Streaming {
		return nil, "message_not_in_streaming_state"
	}
	m.Text += text
	m.Streaming = !stop
	s.refreshSentLocked(m)
	m.History = append(m.History, Revision{Method: method, Text: text, At: s.now()})
	s.notify()
	res := result{"channel": m.Channel, "ts": m.TS}
	if stop {
		msg := s.botMessageLocked(m.Channel, m.Text, m.TS, "")
		msg["subtype"] = "bot_message"
		res["message"] = msg
	}
	return res, ""
}
