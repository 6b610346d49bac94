package discordtest

import (
	"net/http"
	"net/url"
	"strings"
)

// addReaction is PUT /channels/{id}/messages/{mid}/reactions/{emoji}/@me:
// the bot reacts to a user's message. The emoji is URL-encoded, a Unicode
// emoji or name:id for a custom one; an unknown message is 404 code
// 10008, an emoji Discord cannot read 400 code 10014 (Unknown Emoji).
func (s *chatAPI) addReaction(w http.ResponseWriter, r *http.Request, channelID string) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v9/channels/"+channelID+"/messages/")
	rest = strings.TrimPrefix(rest, "/api/v10/channels/"+channelID+"/messages/")
	mid, rest, _ := strings.Cut(rest, "/reactions/")
	raw := strings.TrimSuffix(rest, "/@me")
	emoji, err := url.PathUnescape(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.inbound[mid]
	switch {
	case !ok || in.channelID != channelID:
		writeError(w, http.StatusNotFound, apiError{Message: "Unknown Message", Code: codeUnknownMessage})
		return
	case err != nil || emoji == "" || strings.ContainsAny(emoji, " /"):
		writeError(w, http.StatusBadRequest, apiError{Message: "Unknown Emoji", Code: 10014})
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

// BotReactions are the bot's reactions on a user's message, in order.
func (s *Server) BotReactions(messageID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reactions[messageID]...)
}
