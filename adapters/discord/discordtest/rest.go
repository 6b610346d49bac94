package discordtest

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
)

// restAPI routes REST requests to the part that answers them, counts
// them and applies faults; it answers gateway discovery and users/@me.
type restAPI struct {
	*state
	gateway *gatewayServer
	dir     *directory
	chat    *chatAPI
	store   *fileStore
}

// route is a resolved REST request.
type route struct {
	name      string
	channelID string // for channel routes
	public    bool   // needs no token, like GET /gateway on Discord
	handle    func(http.ResponseWriter, *http.Request, string)
}

// serveHTTP serves the gateway websocket and the REST API.
func (s *restAPI) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/gateway" || r.URL.Path == "/gateway/" {
		s.gateway.serveGateway(w, r)
		return
	}
	rt := s.resolve(r)
	if rt.name == "cdn" {
		s.store.recordDownload(r)
	}

	s.mu.Lock()
	s.calls[rt.name]++
	s.notify()
	s.mu.Unlock()

	if !rt.public && r.Header.Get("Authorization") != "Bot "+s.token {
		writeError(w, http.StatusUnauthorized, unauthorized())
		return
	}
	if rt.handle == nil {
		writeError(w, http.StatusNotFound, notFound())
		return
	}
	if f, ok := s.takeFault(rt.name); ok {
		writeFault(w, rt.name, f)
		return
	}
	switch rt.name {
	case "messages":
		if wait, ok := s.chat.admit(rt.channelID); !ok {
			writeRateLimit(w, rt.name, s.chanLimit.Burst, wait)
			return
		}
	case "messages.edit":
		if wait, ok := s.chat.admitEdit(rt.channelID); !ok {
			writeRateLimit(w, rt.name, s.editLimit, wait)
			return
		}
	}
	if s.takeLost(rt.name) {
		rt.handle(httptest.NewRecorder(), r, rt.channelID)
		writeError(w, http.StatusInternalServerError, apiError{Message: "500: Internal Server Error"})
		return
	}
	if s.holds.Holding(rt.name) {
		rec := httptest.NewRecorder()
		rt.handle(rec, r, rt.channelID)
		if rec.Code < 300 && !s.holds.Wait(rt.name, r.Context().Done()) {
			return // acted, and the client went away: it never hears
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	rt.handle(w, r, rt.channelID)
}

// resolve maps a request to its route; an unknown one has no handler.
func (s *restAPI) resolve(r *http.Request) route {
	if r.Method == http.MethodGet && (strings.HasPrefix(r.URL.Path, "/attachments/") || strings.HasPrefix(r.URL.Path, "/stickers/")) {
		// Discord's CDN paths, which need no token.
		return route{name: "cdn", public: true, handle: s.store.serveFile}
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v9/")
	if !ok {
		rest, ok = strings.CutPrefix(r.URL.Path, "/api/v10/")
	}
	if !ok {
		return route{name: "unknown", public: true}
	}
	rest = strings.TrimSuffix(rest, "/")
	get, post := r.Method == http.MethodGet, r.Method == http.MethodPost
	switch {
	case rest == "gateway" && get:
		return route{name: "gateway", public: true, handle: s.getGateway}
	case rest == "gateway/bot" && get:
		return route{name: "gateway.bot", handle: s.getGatewayBot}
	case rest == "users/@me" && get:
		return route{name: "users.me", handle: s.getMe}
	case rest == "users/@me/channels" && post:
		return route{name: "users.channels", handle: s.dir.createDM}
	case rest == "attachments/refresh-urls" && post:
		return route{name: "attachments.refresh", handle: s.store.refreshURLs}
	}
	if p := strings.Split(rest, "/"); len(p) == 4 && p[0] == "interactions" && p[3] == "callback" && post {
		// The interaction's token is its credential: no bot token needed.
		return route{name: "interactions.callback", public: true, handle: s.chat.interactionCallback}
	}
	if id, sub, ok := strings.Cut(strings.TrimPrefix(rest, "channels/"), "/"); ok && strings.HasPrefix(rest, "channels/") {
		switch {
		case sub == "messages" && post:
			return route{name: "messages", channelID: id, handle: s.chat.createMessage}
		case sub == "typing" && post:
			return route{name: "typing", channelID: id, handle: s.chat.triggerTyping}
		case strings.HasPrefix(sub, "messages/") && strings.HasSuffix(sub, "/@me") && strings.Contains(sub, "/reactions/") &&
			r.Method == http.MethodPut:
			return route{name: "reactions", channelID: id, handle: s.chat.addReaction}
		case strings.HasPrefix(sub, "messages/") && strings.HasSuffix(sub, "/@me") && strings.Contains(sub, "/reactions/") &&
			r.Method == http.MethodDelete:
			return route{name: "reactions", channelID: id, handle: s.chat.removeReaction}
		case strings.HasPrefix(sub, "messages/") && isSnowflake(strings.TrimPrefix(sub, "messages/")):
			switch r.Method {
			case http.MethodPatch:
				return route{name: "messages.edit", channelID: id, handle: s.chat.editMessage}
			case http.MethodDelete:
				return route{name: "messages.delete", channelID: id, handle: s.chat.deleteMessage}
			}
		}
	} else if strings.HasPrefix(rest, "channels/") && get {
		return route{name: "channels.get", channelID: strings.TrimPrefix(rest, "channels/"), handle: s.dir.getChannel}
	}
	return route{name: "unknown"}
}

func (s *restAPI) getGateway(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, map[string]string{"url": s.GatewayURL()})
}

func (s *restAPI) getGatewayBot(w http.ResponseWriter, _ *http.Request, _ string) {
	s.mu.Lock()
	total, left := s.startsTotal, max(s.startsLeft-s.identifies, 0)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"url":    s.GatewayURL(),
		"shards": 1,
		"session_start_limit": map[string]int{
			"total": total, "remaining": left, "reset_after": 14400000, "max_concurrency": 1,
		},
	})
}

func (s *restAPI) getMe(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, s.botWire())
}

func (s *directory) getChannel(w http.ResponseWriter, _ *http.Request, id string) {
	s.mu.Lock()
	ch, ok := s.channels[id]
	var body wireChannel
	if ok {
		body = s.channelWire(ch)
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, unknownChannel())
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// createDM opens (or returns the already open) DM channel with
// recipient_id, a known user (see AddUser).
func (s *directory) createDM(w http.ResponseWriter, r *http.Request, _ string) {
	var body struct {
		RecipientID string `json:"recipient_id"`
	}
	if e, ok := decodeJSON(r.Body, &body); !ok {
		writeError(w, http.StatusBadRequest, e)
		return
	}
	if !isSnowflake(body.RecipientID) {
		writeError(w, http.StatusBadRequest, invalidField("recipient_id", "NUMBER_TYPE_COERCE", "Value \""+body.RecipientID+"\" is not snowflake."))
		return
	}
	s.mu.Lock()
	if !s.knownUserLocked(body.RecipientID) {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, unknownUser())
		return
	}
	out := s.channelWire(s.dmChannelLocked(body.RecipientID))
	s.notify()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *chatAPI) triggerTyping(w http.ResponseWriter, _ *http.Request, id string) {
	s.mu.Lock()
	ch, ok := s.channels[id]
	blocked := ok && ch.typ == channelDM && s.blocked[ch.recipient]
	if ok && !blocked {
		s.typing[id]++
		s.notify()
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, unknownChannel())
	case blocked:
		writeError(w, http.StatusForbidden, cannotSend())
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func isSnowflake(id string) bool {
	if id == "" || len(id) > 20 {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Calls returns how many REST requests of route arrived, refused and
// failed ones included. Routes: "gateway" (GET /gateway), "gateway.bot",
// "users.me", "users.channels" (POST /users/@me/channels), "channels.get"
// (GET /channels/{id}), "messages" (POST /channels/{id}/messages),
// "messages.edit" (PATCH /channels/{id}/messages/{mid}), "messages.delete"
// (DELETE of one), "interactions.callback" (POST
// /interactions/{id}/{token}/callback), "typing", "cdn" (GET of an attachment or sticker file) and "unknown"
// (anything else).
func (s *restAPI) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}
