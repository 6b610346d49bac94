package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/parleybot/parley/core"
)

// forRequest is the reader for r. With several bots its rows say their
// bot, and for a page of lists (perBot) it reads the bot ?bot= picks
// (none: every bot's). An id that is no bot's is a 404 there: a reload
// may have removed the bot, and its open page then says it is gone.
func (s *reader) forRequest(r *http.Request, perBot bool) (*reader, error) {
	if s.bots == nil {
		return s, nil
	}
	id := r.URL.Query().Get("bot")
	c := *s
	found := id == ""
	for _, b := range s.bots() {
		c.botIDs = append(c.botIDs, b.ID)
		if b.ID == id {
			found, c.bot = true, id
			if perBot {
				c.store = b.Store
			}
		}
	}
	if !found && perBot {
		return nil, pageError{http.StatusNotFound, "There is no bot " + strconv.Quote(id) + ": this parley runs " +
			strings.Join(c.botIDs, ", ") + "."}
	}
	if len(c.botIDs) < 2 {
		c.botIDs = nil // one bot: no picker, and rows need not say whose
	}
	return &c, nil
}

// link is a console path that keeps the bot picked.
func (s *reader) link(path string) string {
	if s.bot == "" {
		return path
	}
	return path + "?bot=" + s.bot
}

// botOf is what a row says of its bot: its id with several bots, else "".
func (s *reader) botOf(id string) string {
	if s.botIDs == nil {
		return ""
	}
	return id
}

// othersPart reports whether the /healthz component name is a bot's other
// than the one picked: adapter:BOT/PLATFORM, llm:BOT and the like.
func (s *reader) othersPart(name string) bool {
	_, rest, ok := strings.Cut(name, ":")
	owner, _, _ := strings.Cut(rest, "/")
	return ok && s.bot != "" && owner != s.bot && slices.Contains(s.botIDs, owner)
}

// picker is the bot picker's links (none with one bot): "All bots" and
// each bot, to the section nav is in; on the section's own list the
// search or filter is kept, and the paging starts again.
func (s *reader) picker(r *http.Request, nav string) []option {
	if s.botIDs == nil {
		return nil
	}
	u := url.URL{Path: Prefix}
	if nav != "overview" {
		u.Path += nav
	}
	if r.URL.Path == u.Path {
		q := r.URL.Query()
		q.Del("page")
		q.Del("notice")
		q.Del("job")
		u.RawQuery = q.Encode()
	}
	out := []option{{Value: queryWith(&u, "bot", ""), Label: "All bots", Selected: s.bot == ""}}
	for _, id := range s.botIDs {
		out = append(out, option{Value: queryWith(&u, "bot", id), Label: id, Selected: id == s.bot})
	}
	return out
}

// dress fills in v's frame for the request: the session's CSRF token,
// the section, the bot picked and the picker.
func (s *reader) dress(v framed, r *http.Request, csrf, nav string) {
	l := v.frame()
	l.CSRF, l.Nav, l.Bot = csrf, nav, s.bot
	l.Bots = s.picker(r, nav)
}

// conversationRow is a conversation in a list.
func (s *reader) conversationRow(c core.Conversation) conversationItem {
	it := conversationItem{ID: c.ID, Bot: s.botOf(c.BotID), Platform: string(c.Platform), Name: c.DisplayName,
		UserID: c.ChannelUserID, TimeZone: c.TimeZone, Messages: c.LastSeq}
	if c.LastMessageAt != nil {
		it.LastActivity = c.LastMessageAt.UTC().Format(utcLayout)
	}
	return it
}
