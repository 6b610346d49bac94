package discordtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Discord's JSON error codes for interactions.
const (
	codeUnknownInteraction = 10062
	codeInvalidWebhookTok  = 50027
	codeAlreadyAcked       = 40060
)

// Interaction types and callback types of the Discord API.
const (
	interactionMessageComponent = 3

	callbackChannelMessage         = 4
	callbackDeferredChannelMessage = 5
	callbackDeferredUpdate         = 6
	callbackUpdateMessage          = 7
	callbackModal                  = 9

	// flagEphemeral is the message flag of a reply only its user sees.
	flagEphemeral = 1 << 6
)

// defaultInteractionTimeout is how long Discord waits for an
// interaction's first callback.
const defaultInteractionTimeout = 3 * time.Second

// WithInteractionTimeout sets how long after a tap (WithNow's clock) its
// interaction takes a callback (default 3 s, as on Discord); a callback
// later is answered 404 with code 10062 "Unknown interaction".
func WithInteractionTimeout(d time.Duration) Option {
	return func(s *Server) { s.interactionTimeout = d }
}

// Interaction is a tap a test made (Tap, TapGuild), with the bot's
// callbacks to it.
type Interaction struct {
	ID    string
	Token string
	// ChannelID is where the tapped message is; GuildID is "" in a DM.
	ChannelID string
	GuildID   string
	UserID    string
	MessageID string
	CustomID  string
	At        time.Time
	// Callbacks are the bot's POST /interactions/{id}/{token}/callback,
	// in order, refused ones included (Status other than 204).
	Callbacks []Callback
}

// Callback is one interaction callback (response) the bot made.
type Callback struct {
	// Type is the callback type: 4 CHANNEL_MESSAGE_WITH_SOURCE (a reply,
	// Content), 5 its deferred form, 6 DEFERRED_UPDATE_MESSAGE (a plain
	// ack), 7 UPDATE_MESSAGE (the tapped message edited).
	Type int
	// Content and Flags are data.content and data.flags (64: ephemeral,
	// shown to the tapping user only).
	Content string
	Flags   int
	// Components are data.components of an UPDATE_MESSAGE, nil if it
	// has none.
	Components [][]Button
	// Status is the HTTP status answered (204: accepted), Code the
	// Discord error code of a refusal (10062 late, 40060 a second ack).
	Status int
	Code   int
	At     time.Time
}

// Ephemeral reports whether the callback's message is shown to the
// tapping user only.
func (c Callback) Ephemeral() bool { return c.Flags&flagEphemeral != 0 }

// storedInteraction is an Interaction with what the fake checks.
type storedInteraction struct {
	Interaction
	acked bool
}

// wireInteraction is an INTERACTION_CREATE's payload for a button.
type wireInteraction struct {
	ID             string               `json:"id"`
	ApplicationID  string               `json:"application_id"`
	Type           int                  `json:"type"`
	Data           wireComponentData    `json:"data"`
	GuildID        string               `json:"guild_id,omitempty"`
	ChannelID      string               `json:"channel_id"`
	Channel        wireChannel          `json:"channel"`
	Member         *wireInteractionUser `json:"member,omitempty"`
	User           *wireUser            `json:"user,omitempty"`
	Token          string               `json:"token"`
	Version        int                  `json:"version"`
	Message        wireMessage          `json:"message"`
	AppPermissions string               `json:"app_permissions"`
	Locale         string               `json:"locale"`
	GuildLocale    string               `json:"guild_locale,omitempty"`
	Context        int                  `json:"context"`
	Entitlements   []any                `json:"entitlements"`
}

type wireComponentData struct {
	CustomID      string `json:"custom_id"`
	ComponentType int    `json:"component_type"`
}

// wireInteractionUser is an interaction's member: a guild member with its
// user and permissions.
type wireInteractionUser struct {
	wireMember
	User        wireUser `json:"user"`
	Permissions string   `json:"permissions"`
}

// Tap plays from tapping the button customID on the bot's message
// messageID in their DM: Discord dispatches INTERACTION_CREATE (type 3,
// MESSAGE_COMPONENT) with user (not member), the DM's channel_id, the
// message as it shows now and a fresh interaction id and token. It returns
// the interaction id, or an error when the user could not tap that: no
// such message in their DM, no such button, or the button disabled.
func (s *Server) Tap(from User, messageID, customID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tapDMLocked(from, messageID, customID, true)
}

// tapDMLocked is Tap; shown requires an enabled button customID on the
// message. Callers hold s.mu.
func (s *Server) tapDMLocked(from User, messageID, customID string, shown bool) (string, error) {
	i, ok := s.msgIdx[messageID]
	if !ok || s.sent[i].Deleted {
		return "", fmt.Errorf("discordtest: no message %s to tap", messageID)
	}
	m := s.sent[i]
	ch := s.channels[m.ChannelID]
	if ch == nil || ch.typ != channelDM || ch.recipient != from.ID {
		return "", fmt.Errorf("discordtest: message %s is not in %s's DM with the bot", messageID, from.ID)
	}
	b, ok := findButton(m.Components, customID)
	switch {
	case !shown:
	case !ok:
		return "", fmt.Errorf("discordtest: message %s has no button %q", messageID, customID)
	case b.Disabled:
		return "", fmt.Errorf("discordtest: button %q of message %s is disabled", customID, messageID)
	}
	s.users[from.ID] = from
	u := from.wire()
	in := s.newInteractionLocked(ch, from.ID, messageID, customID)
	w := s.interactionWireLocked(in, ch, s.sentWire(ch, m, messageBody{}))
	w.User, w.Context = &u, 1 // BOT_DM
	s.dispatchInteractionLocked(w, ch)
	return in.ID, nil
}

// TapGuild plays from tapping a button customID on a bot message
// messageID in a guild text channel (known from then on): the
// INTERACTION_CREATE has guild_id and member. The message need not be
// one the fake has (the bot sends to DMs only); it is shown with the one
// button. It returns the interaction id.
func (s *Server) TapGuild(guildID, channelID string, from User, messageID, customID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.guildChannelLocked(guildID, channelID)
	in := s.newInteractionLocked(ch, from.ID, messageID, customID)
	msg := newMessageWire(messageID, ch, s.botWire(), "a question", s.now())
	msg.Components = componentsWire([][]Button{{{Label: customID, CustomID: customID, Style: StyleSecondary}}})
	w := s.interactionWireLocked(in, ch, msg)
	w.Member = &wireInteractionUser{
		wireMember:  wireMember{Roles: []string{}, JoinedAt: discordTime(s.now())},
		User:        from.wire(),
		Permissions: "2248473465835073",
	}
	w.GuildLocale, w.Context = "en-US", 0 // GUILD
	s.dispatchInteractionLocked(w, ch)
	return in.ID
}

// newInteractionLocked records a new interaction. Callers hold s.mu.
func (s *Server) newInteractionLocked(ch *channel, userID, messageID, customID string) *storedInteraction {
	var tok [24]byte
	_, _ = rand.Read(tok[:])
	in := &storedInteraction{Interaction: Interaction{
		ID: s.newIDLocked(), Token: "aW50ZXJhY3Rpb246" + hex.EncodeToString(tok[:]),
		ChannelID: ch.id, GuildID: ch.guildID, UserID: userID, MessageID: messageID, CustomID: customID, At: s.now(),
	}}
	s.interactions[in.ID] = in
	s.interactionOrder = append(s.interactionOrder, in.ID)
	return in
}

// interactionWireLocked is in's payload without its user. Callers hold
// s.mu.
func (s *Server) interactionWireLocked(in *storedInteraction, ch *channel, msg wireMessage) wireInteraction {
	return wireInteraction{
		ID:             in.ID,
		ApplicationID:  s.bot.ID,
		Type:           interactionMessageComponent,
		Data:           wireComponentData{CustomID: in.CustomID, ComponentType: componentButton},
		GuildID:        ch.guildID,
		ChannelID:      ch.id,
		Channel:        s.channelWire(ch),
		Token:          in.Token,
		Version:        1,
		Message:        msg,
		AppPermissions: "562949953601536",
		Locale:         "en-US",
		Entitlements:   []any{},
	}
}

// dispatchInteractionLocked sends INTERACTION_CREATE to the sessions:
// interactions need no intent; those of a DM go to shard 0 only, as DMs
// do. Callers hold s.mu.
func (s *Server) dispatchInteractionLocked(w wireInteraction, ch *channel) {
	raw, _ := json.Marshal(w)
	for _, sess := range s.sessions {
		if ch.typ == channelDM && sess.shard[0] != 0 {
			continue
		}
		f := sess.appendLocked("INTERACTION_CREATE", raw)
		if sess.conn != nil {
			sess.conn.enqueueLocked(f)
		}
	}
	s.notify()
}

// callbackBody is the part of an interaction response the fake reads.
type callbackBody struct {
	Type int `json:"type"`
	Data *struct {
		Content    *string           `json:"content"`
		Flags      int               `json:"flags"`
		Embeds     []json.RawMessage `json:"embeds"`
		Components json.RawMessage   `json:"components"`
	} `json:"data"`
}

// interactionCallback is POST /interactions/{id}/{token}/callback. It
// needs no bot token (the interaction's token is the credential), as on
// Discord, and answers 204. A callback more than the interaction timeout
// after the tap is 404 / 10062 "Unknown interaction"; a second one 400 /
// 40060; an UPDATE_MESSAGE (7) edits the tapped message's content and
// components.
func (s *chatAPI) interactionCallback(w http.ResponseWriter, r *http.Request, _ string) {
	parts := strings.Split(strings.TrimSuffix(r.URL.Path, "/"), "/")
	id, token := parts[len(parts)-3], parts[len(parts)-2]
	var body callbackBody
	decodeErr, decoded := decodeJSON(r.Body, &body)

	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.interactions[id]
	refuse := func(status int, e apiError) {
		if in != nil {
			in.Callbacks = append(in.Callbacks, Callback{Type: body.Type, Status: status, Code: e.Code, At: s.now()})
			s.notify()
		}
		writeError(w, status, e)
	}
	unknown := apiError{Message: "Unknown interaction", Code: codeUnknownInteraction}
	switch {
	case in == nil:
		refuse(http.StatusNotFound, unknown)
		return
	case token != in.Token:
		refuse(http.StatusUnauthorized, apiError{Message: "Invalid Webhook Token", Code: codeInvalidWebhookTok})
		return
	case in.acked:
		refuse(http.StatusBadRequest, apiError{Message: "Interaction has already been acknowledged.", Code: codeAlreadyAcked})
		return
	case s.now().Sub(in.At) > s.interactionTimeout:
		refuse(http.StatusNotFound, unknown)
		return
	case !decoded:
		refuse(http.StatusBadRequest, decodeErr)
		return
	}
	cb := Callback{Type: body.Type, Status: http.StatusNoContent, At: s.now()}
	var rows [][]Button
	hasRows := false
	if body.Data != nil {
		if body.Data.Content != nil {
			cb.Content = *body.Data.Content
		}
		cb.Flags = body.Data.Flags
		var e apiError
		var ok bool
		if rows, e, ok = readComponents(body.Data.Components); !ok {
			refuse(http.StatusBadRequest, prefixed("data.", e))
			return
		}
		hasRows = body.Data.Components != nil
		cb.Components = rows
	}
	switch body.Type {
	case callbackChannelMessage:
		if body.Data == nil || (cb.Content == "" && len(body.Data.Embeds) == 0 && len(rows) == 0) {
			refuse(http.StatusBadRequest, apiError{Message: "Cannot send an empty message", Code: codeEmptyMessage})
			return
		}
		if utf8.RuneCountInString(cb.Content) > maxContent {
			refuse(http.StatusBadRequest, invalidField("data.content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."))
			return
		}
	case callbackUpdateMessage:
		if !s.updateTappedLocked(w, in, body, rows, hasRows) {
			return
		}
	case callbackDeferredChannelMessage, callbackDeferredUpdate, callbackModal:
	default:
		refuse(http.StatusBadRequest, invalidField("type", "BASE_TYPE_CHOICES", "Value must be one of {4, 5, 6, 7, 9}."))
		return
	}
	in.acked = true
	in.Callbacks = append(in.Callbacks, cb)
	s.notify()
	w.WriteHeader(http.StatusNoContent)
}

// updateTappedLocked applies an UPDATE_MESSAGE to the tapped message and
// reports whether it could; if not, it has answered. Callers hold s.mu.
func (s *chatAPI) updateTappedLocked(w http.ResponseWriter, in *storedInteraction, body callbackBody, rows [][]Button, hasRows bool) bool {
	i, ok := s.msgIdx[in.MessageID]
	if !ok || s.sent[i].Deleted {
		// A guild message the fake does not have, or one deleted since.
		e := apiError{Message: "Unknown Message", Code: codeUnknownMessage}
		in.Callbacks = append(in.Callbacks, Callback{Type: body.Type, Status: http.StatusNotFound, Code: e.Code, At: s.now()})
		writeError(w, http.StatusNotFound, e)
		return false
	}
	m := &s.sent[i]
	if body.Data != nil && body.Data.Content != nil {
		m.Content = *body.Data.Content
	}
	if hasRows {
		m.Components = rows
	}
	now := s.now()
	m.EditedAt = now
	m.Edits = append(m.Edits, Edit{MessageID: m.MessageID, Content: m.Content, Components: cloneRows(m.Components), Interaction: in.ID, At: now})
	if s.echo {
		ch := s.channels[m.ChannelID]
		out := s.sentWire(ch, *m, messageBody{})
		edited := discordTime(now)
		out.EditedTimestamp = &edited
		s.dispatchLocked("MESSAGE_UPDATE", out, ch)
	}
	return true
}

// prefixed puts prefix before the field an Invalid Form Body names.
func prefixed(prefix string, e apiError) apiError {
	var errs map[string]json.RawMessage
	if json.Unmarshal(e.Errors, &errs) != nil {
		return e
	}
	out := make(map[string]json.RawMessage, len(errs))
	for k, v := range errs {
		out[prefix+k] = v
	}
	e.Errors, _ = json.Marshal(out)
	return e
}

// Interaction returns the interaction id (a tap) with the bot's callbacks
// so far.
func (s *Server) Interaction(id string) (Interaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.interactions[id]
	if !ok {
		return Interaction{}, false
	}
	return in.clone(), true
}

// Interactions returns every tap, in order, with the bot's callbacks.
func (s *Server) Interactions() []Interaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Interaction, 0, len(s.interactionOrder))
	for _, id := range s.interactionOrder {
		out = append(out, s.interactions[id].clone())
	}
	return out
}

// WaitCallback waits until the bot has made a callback to interaction id
// (accepted or refused) and returns the first; after timeout it fails the
// test (call it from the test goroutine).
func (s *Server) WaitCallback(t testing.TB, id string, timeout time.Duration) Callback {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { in := s.interactions[id]; return in != nil && len(in.Callbacks) > 0 },
		func() string { return "a callback to interaction " + id })
	in, _ := s.Interaction(id)
	return in.Callbacks[0]
}

func (in *storedInteraction) clone() Interaction {
	out := in.Interaction
	out.Callbacks = append([]Callback(nil), in.Callbacks...)
	for i := range out.Callbacks {
		out.Callbacks[i].Components = cloneRows(out.Callbacks[i].Components)
	}
	return out
}
