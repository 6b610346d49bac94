package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/parleybot/parley/core"
)

// botPick is the bot a request picked, with the bots to pick from.
type botPick struct {
	// id is the bot picked (?bot=); "" for every bot.
	id string
	// ids are the bots' ids when there are several; nil with one (no
	// picker, and rows need not say whose they are).
	ids []string
}

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
	c.pick = botPick{}
	found := id == ""
	for _, b := range s.bots() {
		c.pick.ids = append(c.pick.ids, b.ID)
		if b.ID == id {
			found, c.pick.id = true, id
			if perBot {
				c.store = b.Store
			}
		}
	}
	if !found && perBot {
		return nil, pageError{http.StatusNotFound, "There is no bot " + strconv.Quote(id) + ": this parley runs " +
			strings.Join(c.pick.ids, ", ") + "."}
	}
	if len(c.pick.ids) < 2 {
		c.pick.ids = nil
	}
	return &c, nil
}

// dress fills in v's frame for the request: the session's CSRF token,
// the section, the bot picked and the picker.
func (s *reader) dress(v framed, r *http.Request, csrf, nav string) {
	l := v.frame()
	l.CSRF, l.Nav, l.Bot = csrf, nav, s.pick.id
	l.Bots = s.pick.links(r, nav)
}

// conversationRow is a conversation in a list.
func (s *reader) conversationRow(c core.Conversation) conversationItem {
	it := conversationItem{ID: c.ID, Bot: s.pick.of(c.BotID), Platform: string(c.Platform), Name: c.DisplayName,
		UserID: c.ChannelUserID, TimeZone: c.TimeZone, Messages: c.LastSeq}
	if c.LastMessageAt != nil {
		it.LastActivity = c.LastMessageAt.UTC().Format(utcLayout)
	}
	return it
}

// link is a console path that keeps the bot picked.
func (p botPick) link(path string) string {
	if p.id == "" {
		return path
	}
	return path + "?bot=" + p.id
}

// of is what a row says of its bot: its id with several bots, else "".
func (p botPick) of(id string) string {
	if p.ids == nil {
		return ""
	}
	return id
}

// others reports whether the /healthz component name is a bot's other
// than the one picked: adapter:BOT/PLATFORM, llm:BOT and the like.
func (p botPick) others(name string) bool {
	_, rest, ok := strings.Cut(name, ":")
	owner, _, _ := strings.Cut(rest, "/")
	return ok && p.id != "" && owner != p.id && slices.Contains(p.ids, owner)
}

// links are the bot picker's links (none with one bot): "All bots" and
// each bot, to the section nav is in; on the section's own list the
// search or filter is kept, and the paging starts again.
func (p botPick) links(r *http.Request, nav string) []option {
	if p.ids == nil {
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
	out := []option{{Value: queryWith(&u, "bot", ""), Label: "All bots", Selected: p.id == ""}}
	for _, id := range p.ids {
		out = append(out, option{Value: queryWith(&u, "bot", id), Label: id, Selected: id == p.id})
	}
	return out
}
