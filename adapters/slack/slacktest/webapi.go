package slacktest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
)

// webAPI answers the Web API: it routes /api/<method>, checks tokens and
// answers auth, users and conversations itself (chat goes to chat).
type webAPI struct {
	*state
	chat  *chatAPI
	msgs  *botMessages
	taps  *taps
	react *reactions
	files *uploads
}

// maxBody bounds a Web API request body.
const maxBody = 10 << 20

// tokenKind is the kind of token a Web API method needs.
type tokenKind int

const (
	botTokenKind tokenKind = iota
	appTokenKind
)

// params are a Web API call's arguments, first value of each.
type params map[string]string

// result is the body of a successful call, without "ok".
type result map[string]any

// apiMethod answers one Web API method: a result, or a Slack error code.
type apiMethod func(p params) (result, string)

// method returns the handler of a Web API method and the token it needs.
func (s *webAPI) method(name string) (apiMethod, tokenKind, bool) {
	switch name {
	case "auth.test":
		return s.authTest, botTokenKind, true
	case "apps.connections.open":
		return s.appsConnectionsOpen, appTokenKind, true
	case "conversations.open":
		return s.conversationsOpen, botTokenKind, true
	case "chat.postMessage":
		return s.chat.chatPostMessage, botTokenKind, true
	case "chat.update":
		return s.msgs.chatUpdate, botTokenKind, true
	case "chat.delete":
		return s.msgs.chatDelete, botTokenKind, true
	case "chat.startStream":
		return s.msgs.chatStartStream, botTokenKind, true
	case "chat.appendStream":
		return s.msgs.chatAppendStream, botTokenKind, true
	case "chat.stopStream":
		return s.msgs.chatStopStream, botTokenKind, true
	case "chat.postEphemeral":
		return s.taps.chatPostEphemeral, botTokenKind, true
	case "reactions.add":
		return s.react.reactionsAdd, botTokenKind, true
	case "reactions.remove":
		return s.react.reactionsRemove, botTokenKind, true
	case "files.getUploadURLExternal":
		return s.files.filesGetUploadURLExternal, botTokenKind, true
	case "files.completeUploadExternal":
		return s.files.filesCompleteUploadExternal, botTokenKind, true
	case "users.info":
		return s.usersInfo, botTokenKind, true
	}
	return nil, 0, false
}

// serveAPI routes /api/<method>. Slack answers HTTP 200 with ok false for
// every error but rate limits and its own failures.
func (s *webAPI) serveAPI(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("method")
	s.mu.Lock()
	s.calls[name]++
	s.notify()
	s.mu.Unlock()

	if f := s.takeFault(name); f != nil {
		writeFault(w, f)
		return
	}
	handle, kind, ok := s.method(name)
	if !ok {
		writeError(w, "unknown_method")
		return
	}
	p, code := readParams(w, r)
	if code != "" {
		writeError(w, code)
		return
	}
	if code := s.checkToken(r, p, kind); code != "" {
		writeError(w, code)
		return
	}
	if name == "chat.postMessage" {
		if f := s.chat.admit(p["channel"]); f != nil {
			writeFault(w, f)
			return
		}
		if code, pointer := s.chat.refuseMarkup(p); code != "" {
			writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": code,
				"response_metadata": map[string]any{"messages": []string{"[ERROR] failed to match all allowed schemas [json-pointer:" + pointer + "]"}}})
			return
		}
	}
	res, code := handle(p)
	if code != "" {
		writeError(w, code)
		return
	}
	res["ok"] = true
	writeJSON(w, http.StatusOK, res)
}

// checkToken returns the error code for the call's token, "" if it may
// call a method that needs kind.
func (s *webAPI) checkToken(r *http.Request, p params, kind tokenKind) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		token = p["token"]
	}
	if token == "" {
		return "not_authed"
	}
	want, other := s.botToken, s.appToken
	if kind == appTokenKind {
		want, other = other, want
	}
	s.mu.Lock()
	revoked := s.revoked
	s.mu.Unlock()
	switch token {
	case want:
	case other:
		if revoked {
			return "token_revoked"
		}
		return "not_allowed_token_type"
	default:
		return "invalid_auth"
	}
	if revoked {
		return "token_revoked"
	}
	return ""
}

// readParams reads a form-encoded, multipart or JSON body (and the query
// string). It returns a Slack error code if the body is unreadable.
func readParams(w http.ResponseWriter, r *http.Request) (params, string) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	p := params{}
	ctype, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ctype {
	case "application/json":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, "invalid_json"
		}
		if len(bytes.TrimSpace(body)) > 0 {
			var fields map[string]json.RawMessage
			if json.Unmarshal(body, &fields) != nil {
				return nil, "invalid_json"
			}
			for k, v := range fields {
				var str string
				if json.Unmarshal(v, &str) == nil {
					p[k] = str
				} else {
					// Booleans, numbers, blocks: their JSON text, as a
					// form would carry them.
					p[k] = string(v)
				}
			}
		}
	case "multipart/form-data":
		if r.ParseMultipartForm(maxBody) != nil {
			return nil, "invalid_form_data"
		}
	default:
		if r.ParseForm() != nil {
			return nil, "invalid_form_data"
		}
	}
	for k, v := range r.Form {
		if _, set := p[k]; !set && len(v) > 0 {
			p[k] = v[0]
		}
	}
	for k, v := range r.URL.Query() {
		if _, set := p[k]; !set && len(v) > 0 {
			p[k] = v[0]
		}
	}
	return p, ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers a Slack error: HTTP 200, {"ok":false,"error":code}.
func writeError(w http.ResponseWriter, code string) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": code})
}

func (s *webAPI) authTest(params) (result, string) {
	return result{
		"url":                   teamURL,
		"team":                  teamName,
		"user":                  botName,
		"team_id":               teamID,
		"user_id":               botUserID,
		"bot_id":                botID,
		"is_enterprise_install": false,
	}, ""
}

// appsConnectionsOpen hands out a single-use socket URL.
func (s *webAPI) appsConnectionsOpen(params) (result, string) {
	ticket := randomHex(16)
	s.mu.Lock()
	s.tickets[ticket] = true
	s.mu.Unlock()
	return result{"url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/socket?ticket=" + ticket}, ""
}

// conversationsOpen opens (or finds) the DM with one user.
func (s *webAPI) conversationsOpen(p params) (result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	users := strings.TrimSpace(p["users"])
	if users == "" {
		ch := p["channel"]
		if ch == "" {
			return nil, "users_list_not_supplied"
		}
		u, ok := s.dmUser[ch]
		if !ok {
			return nil, "channel_not_found"
		}
		return result{"channel": imWire(ch, u, s.now().Unix()), "no_op": true, "already_open": true}, ""
	}
	if strings.Contains(users, ",") {
		// Group DMs (mpim) are out of the fake's scope.
		return nil, "not_implemented"
	}
	if users == botUserID {
		return nil, "cannot_dm_bot"
	}
	if _, ok := s.users[users]; !ok {
		return nil, "user_not_found"
	}
	if s.blocked[users] {
		return nil, "user_disabled"
	}
	id, existed := s.dmLocked(users)
	res := result{"channel": imWire(id, users, s.now().Unix())}
	if existed {
		res["no_op"], res["already_open"] = true, true
	}
	s.notify()
	return res, ""
}

// imWire is a DM channel object as conversations.open returns it.
func imWire(id, user string, created int64) map[string]any {
	return map[string]any{
		"id":              id,
		"created":         created,
		"is_im":           true,
		"is_org_shared":   false,
		"context_team_id": teamID,
		"user":            user,
		"is_user_deleted": false,
		"priority":        0,
		"is_open":         true,
	}
}

func (s *webAPI) usersInfo(p params) (result, string) {
	id := p["user"]
	if id == botUserID {
		return result{"user": userWire(User{ID: botUserID, Name: botName, RealName: "Parley"}, true)}, ""
	}
	s.mu.Lock()
	u, ok := s.users[id]
	s.mu.Unlock()
	if !ok {
		return nil, "user_not_found"
	}
	return result{"user": userWire(u, false)}, ""
}

// userWire is a user object as users.info returns it.
func userWire(u User, bot bool) map[string]any {
	profile := map[string]any{
		"real_name":               u.RealName,
		"real_name_normalized":    u.RealName,
		"display_name":            u.DisplayName,
		"display_name_normalized": u.DisplayName,
		"team":                    teamID,
	}
	if bot {
		profile["bot_id"] = botID
		profile["api_app_id"] = appID
	}
	return map[string]any{
		"id":          u.ID,
		"team_id":     teamID,
		"name":        u.Name,
		"deleted":     false,
		"real_name":   u.RealName,
		"tz":          "Etc/UTC",
		"tz_label":    "Coordinated Universal Time",
		"tz_offset":   0,
		"is_bot":      bot,
		"is_app_user": false,
		"profile":     profile,
	}
}

// AddUser makes u known to users.info and conversations.open. SendDM and
// the other Send methods add their sender themselves. Fields left empty
// keep what the fake already knew about the user.
func (s *webAPI) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(u)
}

// DMChannelOf returns the "D…" id of the bot's DM with userID, "" if it
// was not opened yet (by SendDM, conversations.open or chat.postMessage
// to the user id).
func (s *webAPI) DMChannelOf(userID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dmOf[userID]
}
