package slacktest

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// chatAPI answers chat.postMessage, with its rate limit and markup
// refusals, and tells tests what was sent.
type chatAPI struct {
	*state
	*delivery
}

// maxTextRunes is Slack's limit on chat.postMessage text; longer text
// fails with msg_too_long.
const maxTextRunes = 40000

// SentMessage is one message the bot posted with chat.postMessage.
type SentMessage struct {
	Channel string // channel id it went to (resolved DM id when a user id was given)
	// Text is what the message shows now: as posted, or as a stream
	// (chat.startStream, appendStream, stopStream) or chat.update left it
	// (still mrkdwn-escaped: &amp; &lt; &gt;). BotMessage has its history.
	Text string
	TS   string // the ts the fake gave it
	// ThreadTS is the thread_ts the bot asked for, "" outside a thread.
	ThreadTS string
	Mrkdwn   bool      // false only when the client sent mrkdwn=false
	At       time.Time // when accepted, by the server's clock (WithNow)
	// Blocks are the message's layout blocks, in order; Text is then the
	// fallback Slack shows in notifications.
	Blocks []Block
}

// chatPostMessage posts into a known channel, or into the DM of a known
// user when given a user id, as Slack does.
func (s *chatAPI) chatPostMessage(p params) (result, string) {
	text := p["text"]
	s.mu.Lock()
	defer s.mu.Unlock()
	chID, code := s.resolveChannelLocked(p["channel"])
	if code != "" {
		return nil, code
	}
	if u, ok := s.dmUser[chID]; ok && s.blocked[u] {
		return nil, "is_archived"
	}
	if text == "" && !nonEmptyJSONList(p["blocks"]) && !nonEmptyJSONList(p["attachments"]) {
		return nil, "no_text"
	}
	blocks, code := readBlocks(p["blocks"])
	if code != "" {
		return nil, code
	}
	if utf8.RuneCountInString(text) > maxTextRunes {
		return nil, "msg_too_long"
	}
	ts := s.nextTSLocked()
	m := SentMessage{
		Channel:  chID,
		Text:     text,
		TS:       ts,
		ThreadTS: p["thread_ts"],
		Mrkdwn:   p["mrkdwn"] != "false",
		At:       s.now(),
		Blocks:   blocks,
	}
	s.sentIdx[chID] = append(s.sentIdx[chID], len(s.sent))
	s.sent = append(s.sent, m)
	s.addBotMessageLocked(chID, ts, "chat.postMessage", text, false, m.Mrkdwn).Blocks = blocks

	msg := s.botMessageLocked(chID, text, ts, m.ThreadTS)
	if s.echo && s.channels[chID] == channelIM {
		echo := s.botMessageLocked(chID, text, ts, m.ThreadTS)
		echo["channel"], echo["event_ts"], echo["channel_type"] = chID, ts, channelIM
		s.emitLocked(mustJSON(echo))
	}
	s.notify()
	return result{"channel": chID, "ts": ts, "message": msg}, ""
}

// resolveChannelLocked maps a channel argument to a known channel id.
// Callers hold s.mu.
func (s *state) resolveChannelLocked(ch string) (string, string) {
	if _, ok := s.channels[ch]; ok {
		return ch, ""
	}
	if _, ok := s.users[ch]; ok {
		id, _ := s.dmLocked(ch)
		return id, ""
	}
	return "", "channel_not_found"
}

// nonEmptyJSONList reports whether v, a form value, holds a non-empty JSON
// array such as blocks.
func nonEmptyJSONList(v string) bool {
	v = strings.TrimSpace(v)
	return v != "" && v != "[]" && v != "null"
}

// Sent returns the messages the bot posted to channelID, in order.
func (s *chatAPI) Sent(channelID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentToLocked(channelID)
}

func (s *chatAPI) sentToLocked(channelID string) []SentMessage {
	idx := s.sentIdx[channelID]
	out := make([]SentMessage, 0, len(idx))
	for _, i := range idx {
		out = append(out, s.sent[i])
	}
	return out
}

// AllSent returns every message the bot posted, in order.
func (s *chatAPI) AllSent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent...)
}

// WaitSent waits until the bot has posted at least n messages to
// channelID, none of them a stream still open (a reply still growing is
// not sent yet), and returns them all; after timeout it fails the test
// (call it from the test goroutine) with what did arrive.
func (s *chatAPI) WaitSent(t testing.TB, channelID string, n int, timeout time.Duration) []SentMessage {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { return len(s.sentIdx[channelID]) >= n && !s.streamingLocked(channelID) },
		func() string {
			got := s.Sent(channelID)
			texts := make([]string, len(got))
			for i, m := range got {
				texts[i] = m.Text
			}
			return fmt.Sprintf("%d message(s) in %s, got %d: %q", n, channelID, len(got), texts)
		})
	return s.Sent(channelID)
}

// Calls returns how many requests arrived for a Web API method (e.g.
// "chat.postMessage"), refused, failed and unknown ones included.
func (s *chatAPI) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Unescape undoes Slack's escaping of &, < and > (&amp; &lt; &gt;), so a
// test can compare what the bot meant to say. It leaves <@U…> mentions and
// other markup alone.
func Unescape(text string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
}

// streamingLocked reports whether a message of the bot in channelID is a
// stream not yet stopped.
func (s *state) streamingLocked(channelID string) bool {
	for _, m := range s.botMessagesLocked(channelID) {
		if m.Streaming {
			return true
		}
	}
	return false
}
