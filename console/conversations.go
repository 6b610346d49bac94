package console

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
)

// maxQueryRunes bounds a search.
const maxQueryRunes = 200

type conversationsView struct {
	layout
	// Query is the search, "" for the list by activity.
	Query         string
	Conversations []conversationItem
	Page          int
	Prev, Next    string
	// Erased is the word on an erasure just made.
	Erased string
}

// conversations is GET /console/conversations: the conversations, most
// recently active first, or those whose name, user id or messages match
// ?q=.
func (s *Console) conversations(w http.ResponseWriter, r *http.Request, sess session) {
	query := r.URL.Query()
	page := 1
	if v := query.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, http.StatusBadRequest, "The page number must be a positive integer.")
			return
		}
		page = n
	}
	rd, err := s.reader.forRequest(r, true)
	if err != nil {
		s.pageFailed(w, r, err)
		return
	}
	q := strings.TrimSpace(query.Get("q"))
	if utf8.RuneCountInString(q) > maxQueryRunes {
		s.fail(w, r, http.StatusBadRequest, "The search is too long: "+strconv.Itoa(maxQueryRunes)+" characters at most.")
		return
	}
	// One more than a page tells whether there is a next one.
	limit, offset := conversationsPerPage+1, (page-1)*conversationsPerPage
	v := &conversationsView{Page: page, Query: q, Erased: erasedNotice(query)}
	rd.dress(v, r, sess.csrf, "conversations")
	var convs []core.Conversation
	if q != "" {
		convs, err = rd.store.SearchConversations(r.Context(), q, limit, offset)
	} else {
		convs, err = rd.store.ConversationsByActivity(r.Context(), limit, offset)
	}
	if err != nil {
		s.internal(w, r, "listing conversations", err)
		return
	}
	link := func(p int) string {
		u := *r.URL
		return queryWith(&u, "page", strconv.Itoa(p))
	}
	if len(convs) > conversationsPerPage {
		convs, v.Next = convs[:conversationsPerPage], link(page+1)
	}
	if page > 1 {
		v.Prev = link(page - 1)
	}
	for _, c := range convs {
		v.Conversations = append(v.Conversations, rd.conversationRow(c))
	}
	s.render(w, r, http.StatusOK, "conversations", v)
}
