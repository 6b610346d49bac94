package discordtest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// addReaction is PUT /channels/{id}/messages/{mid}/reactions/{emoji}/@me:
// the bot reacts to a user's message. The emoji is URL-encoded, a Unicode
// emoji or name:id for a custom one; an unknown message is 404 code
// 10008, an emoji Discord cannot read 400 code 10014 (Unknown Emoji).
func (s *chatAPI) addReaction(w http.ResponseWriter, r *http.Request, channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mid, emoji, ok := s.ownReaction(w, r, channelID)
	if !ok {
		return
	}
	for _, e := range s.reactions[mid] {
		if e == emoji {
			w.WriteHeader(http.StatusNoContent) // already there: no change
			return
		}
	}
	s.reactions[mid] = append(s.reactions[mid], emoji)
	s.notify()
	w.WriteHeader(http.StatusNoContent)
}

// removeReaction is DELETE
// /channels/{id}/messages/{mid}/reactions/{emoji}/@me: the bot takes its
// reaction back. One that is not there is 204 all the same, as on
// Discord; the message and the emoji are checked as addReaction checks
// them.
func (s *chatAPI) removeReaction(w http.ResponseWriter, r *http.Request, channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mid, emoji, ok := s.ownReaction(w, r, channelID)
	if !ok {
		return
	}
	if i := slices.Index(s.reactions[mid], emoji); i >= 0 {
		s.reactions[mid] = slices.Delete(s.reactions[mid], i, i+1)
		s.notify()
	}
	w.WriteHeader(http.StatusNoContent)
}

// ownReaction reads the message and the emoji of a request on the bot's
// reaction, answering Discord's error when either is wrong. Callers hold
// s.mu.
func (s *chatAPI) ownReaction(w http.ResponseWriter, r *http.Request, channelID string) (mid, emoji string, ok bool) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v9/channels/"+channelID+"/messages/")
	rest = strings.TrimPrefix(rest, "/api/v10/channels/"+channelID+"/messages/")
	mid, rest, _ = strings.Cut(rest, "/reactions/")
	emoji, err := url.PathUnescape(strings.TrimSuffix(rest, "/@me"))
	in, known := s.inbound[mid]
	switch {
	case !known || in.channelID != channelID:
		writeError(w, http.StatusNotFound, apiError{Message: "Unknown Message", Code: codeUnknownMessage})
		return "", "", false
	case err != nil || emoji == "" || strings.ContainsAny(emoji, " /"):
		writeError(w, http.StatusBadRequest, apiError{Message: "Unknown Emoji", Code: 10014})
		return "", "", false
	}
	return mid, emoji, true
}

// BotReactions are the bot's reactions on a user's message, in order.
func (s *Server) BotReactions(messageID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reactions[messageID]...)
}
