package discordtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Discord's JSON error codes for messages.
const (
	codeUnknownMessage    = 10008
	codeCannotEditOthers  = 50005
	defaultEditsPerWindow = 5
	defaultEditWindow     = 5 * time.Second
)

// Edit is one edit (PATCH) of a message the bot created.
type Edit struct {
	MessageID string
	// Content is the message's content after the edit.
	Content string
	// Components are the message's buttons after the edit.
	Components [][]Button
	// Interaction is the id of the interaction whose UPDATE_MESSAGE
	// callback made the edit, "" for a PATCH.
	Interaction string
	At          time.Time
}

// WithEditRateLimit limits the edits (PATCH /channels/{id}/messages/{mid})
// of each channel to n within any window of per, as Discord's "5 edits per
// 5 s per channel" (the default, 5 and 5 s): the edit over it changes
// nothing and is answered 429 with Discord's body and X-RateLimit headers
// (see RateLimitNext), retry_after being the time until the oldest edit
// of the window leaves it. Time is WithNow's clock. n or per 0: no limit.
func WithEditRateLimit(n int, per time.Duration) Option {
	return func(s *Server) { s.editLimit, s.editWindow = n, per }
}

// editBody is the part of an edit request the fake reads.
type editBody struct {
	Content *string           `json:"content"`
	Embeds  []json.RawMessage `json:"embeds"`
	// Components absent leaves the buttons; null or [] removes them.
	Components json.RawMessage `json:"components"`
}

// messageID is the last segment of a message route's path.
func messageID(r *http.Request) string {
	p := strings.TrimSuffix(r.URL.Path, "/")
	return p[strings.LastIndex(p, "/")+1:]
}

// botMessageLocked finds the bot's message mid in channelID, answering
// Discord's error when there is none: 10003 for an unknown channel, 50005
// for a user's message, 10008 for anything else. Callers hold s.mu.
func (s *chatAPI) botMessageLocked(w http.ResponseWriter, channelID, mid, action string) (*SentMessage, *channel, bool) {
	ch, known := s.channels[channelID]
	if !known {
		writeError(w, http.StatusNotFound, unknownChannel())
		return nil, nil, false
	}
	if in, ok := s.inbound[mid]; ok && in.channelID == channelID && action == "edit" {
		writeError(w, http.StatusForbidden, apiError{Message: "Cannot edit a message authored by another user", Code: codeCannotEditOthers})
		return nil, nil, false
	}
	i, ok := s.msgIdx[mid]
	if !ok || s.sent[i].ChannelID != channelID || s.sent[i].Deleted {
		writeError(w, http.StatusNotFound, apiError{Message: "Unknown Message", Code: codeUnknownMessage})
		return nil, nil, false
	}
	return &s.sent[i], ch, true
}

// editMessage is PATCH /channels/{id}/messages/{mid}: content replaced,
// edited_timestamp set, the edit kept in the message's history.
func (s *chatAPI) editMessage(w http.ResponseWriter, r *http.Request, channelID string) {
	var body editBody
	if e, ok := decodeJSON(r.Body, &body); !ok {
		writeError(w, http.StatusBadRequest, e)
		return
	}
	if body.Content != nil && utf8.RuneCountInString(*body.Content) > maxContent {
		writeError(w, http.StatusBadRequest, invalidField("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."))
		return
	}
	if body.Content != nil && *body.Content != "" && s.takeMarkupFault() {
		writeError(w, http.StatusBadRequest, invalidField("content", "CONTENT_INVALID", "Invalid message content."))
		return
	}
	rows, e, ok := readComponents(body.Components)
	if !ok {
		writeError(w, http.StatusBadRequest, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ch, ok := s.botMessageLocked(w, channelID, messageID(r), "edit")
	if !ok {
		return
	}
	if body.Components != nil {
		m.Components = rows
	}
	content := m.Content
	if body.Content != nil {
		content = *body.Content
	}
	if content == "" && len(m.Embeds) == 0 && body.Embeds == nil {
		writeError(w, http.StatusBadRequest, apiError{Message: "Cannot send an empty message", Code: codeEmptyMessage})
		return
	}
	now := s.now()
	m.Content, m.EditedAt = content, now
	m.Edits = append(m.Edits, Edit{MessageID: m.MessageID, Content: content, Components: cloneRows(m.Components), At: now})
	s.editTimes[channelID] = append(s.editTimes[channelID], now)
	out := s.sentWire(ch, *m, messageBody{})
	edited := discordTime(now)
	out.EditedTimestamp = &edited
	if s.echo {
		s.dispatchLocked("MESSAGE_UPDATE", out, ch)
	}
	s.notify()
	writeJSON(w, http.StatusOK, out)
}

// deleteMessage is DELETE /channels/{id}/messages/{mid}: 204, and the
// message is gone (an unknown or deleted one is 404, code 10008).
func (s *chatAPI) deleteMessage(w http.ResponseWriter, r *http.Request, channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ch, ok := s.botMessageLocked(w, channelID, messageID(r), "delete")
	if !ok {
		return
	}
	m.Deleted, m.DeletedAt = true, s.now()
	if s.echo {
		s.dispatchLocked("MESSAGE_DELETE", map[string]string{"id": m.MessageID, "channel_id": ch.id}, ch)
	}
	s.notify()
	w.WriteHeader(http.StatusNoContent)
}

// admitEdit applies WithEditRateLimit to one edit of channelID: when the
// channel had its n edits within the window, it counts a 429 and returns
// how long until the oldest leaves it.
func (s *chatAPI) admitEdit(channelID string) (wait time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.editLimit <= 0 || s.editWindow <= 0 {
		return 0, true
	}
	now := s.now()
	times := s.editTimes[channelID]
	for len(times) > 0 && !times[0].After(now.Add(-s.editWindow)) {
		times = times[1:]
	}
	s.editTimes[channelID] = times
	if len(times) < s.editLimit {
		return 0, true
	}
	s.rateLimited++
	s.notify()
	return times[len(times)-s.editLimit].Add(s.editWindow).Sub(now), false
}

// Message returns the bot's message messageID as it is now (content after
// its edits, Deleted once deleted).
func (s *chatAPI) Message(messageID string) (SentMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.msgIdx[messageID]
	if !ok {
		return SentMessage{}, false
	}
	return s.sent[i].clone(), true
}

// Edits returns every edit the fake accepted in channelID, in order,
// whatever message it was of.
func (s *chatAPI) Edits(channelID string) []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Edit
	for _, m := range s.sentToLocked(channelID) {
		out = append(out, m.Edits...)
	}
	sortEdits(out)
	return out
}

// sortEdits orders edits by time, keeping the order of equal times (the
// messages' own order).
func sortEdits(e []Edit) {
	for i := 1; i < len(e); i++ {
		for j := i; j > 0 && e[j].At.Before(e[j-1].At); j-- {
			e[j], e[j-1] = e[j-1], e[j]
		}
	}
}

// clone copies m's edit history, so that callers cannot change the fake's.
func (m SentMessage) clone() SentMessage {
	m.Edits = append([]Edit(nil), m.Edits...)
	for i := range m.Edits {
		m.Edits[i].Components = cloneRows(m.Edits[i].Components)
	}
	m.Components = cloneRows(m.Components)
	m.Attachments = append([]SentAttachment(nil), m.Attachments...)
	return m
}
