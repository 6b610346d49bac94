package discordtest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// chatAPI answers message creation, with its rate limit and markup
// refusals, and typing; it tells tests what was sent.
type chatAPI struct {
	*state
	*delivery
}

// Discord's limits on a message.
const (
	maxContent = 2000 // Unicode code points
	maxNonce   = 25   // characters of a string nonce
)

// messageBody is the part of a create-message request the fake reads.
type messageBody struct {
	Content          string            `json:"content"`
	Embeds           []json.RawMessage `json:"embeds"`
	StickerIDs       []string          `json:"sticker_ids"`
	Nonce            json.RawMessage   `json:"nonce"`
	EnforceNonce     bool              `json:"enforce_nonce"`
	MessageReference *wireReference    `json:"message_reference"`
	Components       json.RawMessage   `json:"components"`
	Flags            int               `json:"flags"`
	// Attachments describe the files[n] parts of a multipart body.
	Attachments []payloadAttachment `json:"attachments"`
}

// decodeJSON decodes a JSON body, returning Discord's error on failure.
func decodeJSON(r io.Reader, v any) (apiError, bool) {
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return apiError{Message: "The request body contains invalid JSON.", Code: codeInvalidJSON}, false
	}
	return apiError{}, true
}

// readMessageBody reads a JSON body, or the payload_json part and the
// files[n] parts of a multipart body (what discordgo sends when files are
// attached).
func readMessageBody(r *http.Request) (messageBody, []upload, apiError, bool) {
	var body messageBody
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		e, ok := decodeJSON(r.Body, &body)
		return body, nil, e, ok
	}
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		return body, nil, apiError{Message: "400: Bad Request"}, false
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	ups, err := readUploads(r.MultipartForm)
	if err != nil {
		return body, nil, apiError{Message: "400: Bad Request"}, false
	}
	payload := r.FormValue("payload_json")
	if payload == "" {
		return body, ups, apiError{}, true
	}
	e, ok := decodeJSON(strings.NewReader(payload), &body)
	return body, ups, e, ok
}

// nonceText is the nonce as recorded: a string's value, a number's digits.
func nonceText(raw json.RawMessage) (string, apiError, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", apiError{}, true
	}
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		if utf8.RuneCountInString(str) > maxNonce {
			return "", invalidField("nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."), false
		}
		return str, apiError{}, true
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), apiError{}, true
	}
	return "", invalidField("nonce", "NONCE_TYPE_INVALID_TYPE", "Nonce must be an integer or string."), false
}

// createMessage is POST /channels/{id}/messages.
func (s *chatAPI) createMessage(w http.ResponseWriter, r *http.Request, channelID string) {
	s.mu.Lock()
	ch, known := s.channels[channelID]
	s.mu.Unlock()
	if !known {
		writeError(w, http.StatusNotFound, unknownChannel())
		return
	}
	body, ups, e, ok := readMessageBody(r)
	if !ok {
		writeError(w, http.StatusBadRequest, e)
		return
	}
	if status, e, ok := checkUploads(ups, body); !ok {
		writeError(w, status, e)
		return
	}
	nonce, e, ok := nonceText(body.Nonce)
	if !ok {
		writeError(w, http.StatusBadRequest, e)
		return
	}
	embeds, e, ok := readEmbeds(body.Embeds)
	if !ok {
		writeError(w, http.StatusBadRequest, e)
		return
	}
	if utf8.RuneCountInString(body.Content) > maxContent {
		writeError(w, http.StatusBadRequest, invalidField("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."))
		return
	}
	rows, e, ok := readComponents(body.Components)
	if !ok {
		writeError(w, http.StatusBadRequest, e)
		return
	}
	if body.Content == "" && len(body.Embeds) == 0 && len(body.StickerIDs) == 0 && len(ups) == 0 {
		writeError(w, http.StatusBadRequest, apiError{Message: "Cannot send an empty message", Code: codeEmptyMessage})
		return
	}
	if body.Content != "" && s.takeMarkupFault() {
		writeError(w, http.StatusBadRequest, invalidField("content", "CONTENT_INVALID", "Invalid message content."))
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if ch.typ == channelDM && s.blocked[ch.recipient] {
		writeError(w, http.StatusForbidden, cannotSend())
		return
	}
	if body.EnforceNonce && nonce != "" {
		if i, dup := s.nonces[channelID][nonce]; dup {
			// Discord returns the message the nonce already created.
			writeJSON(w, http.StatusOK, s.sentWire(ch, s.sent[i], messageBody{Nonce: body.Nonce}))
			return
		}
	}
	m := SentMessage{
		ChannelID:    channelID,
		MessageID:    s.newIDLocked(),
		Content:      body.Content,
		Embeds:       embeds,
		Components:   rows,
		Nonce:        nonce,
		EnforceNonce: body.EnforceNonce,
		At:           s.now(),
	}
	m.Flags, m.Attachments = body.Flags, s.attachLocked(channelID, ups, body)
	if body.MessageReference != nil {
		m.ReplyTo = body.MessageReference.MessageID
	}
	s.recordLocked(m)
	out := s.sentWire(ch, m, body)
	if s.echo {
		s.dispatchLocked("MESSAGE_CREATE", out, ch)
	}
	s.notify()
	writeJSON(w, http.StatusOK, out)
}

// recordLocked keeps m, a message the bot created, with its nonce (the
// first message a nonce created is the one a repeat gets back). Callers
// hold s.mu.
func (s *chatAPI) recordLocked(m SentMessage) {
	s.sent = append(s.sent, m)
	s.sentIdx[m.ChannelID] = append(s.sentIdx[m.ChannelID], len(s.sent)-1)
	s.msgIdx[m.MessageID] = len(s.sent) - 1
	if m.Nonce == "" {
		return
	}
	if s.nonces[m.ChannelID] == nil {
		s.nonces[m.ChannelID] = map[string]int{}
	}
	if _, seen := s.nonces[m.ChannelID][m.Nonce]; !seen {
		s.nonces[m.ChannelID][m.Nonce] = len(s.sent) - 1
	}
}

// sentWire is the Message object of a message the bot created. Callers
// hold s.mu.
func (s *chatAPI) sentWire(ch *channel, m SentMessage, body messageBody) wireMessage {
	out := newMessageWire(m.MessageID, ch, s.botWire(), m.Content, m.At)
	if len(body.Embeds) > 0 {
		out.Embeds = body.Embeds
	}
	out.Nonce = body.Nonce
	out.Components = componentsWire(m.Components)
	out.Attachments, out.Flags = attachmentsWire(m.Attachments), m.Flags
	if m.ReplyTo != "" {
		out.Type = 19 // REPLY
		out.MessageReference = &wireReference{MessageID: m.ReplyTo, ChannelID: ch.id, GuildID: ch.guildID}
	}
	return out
}

// Sent returns the messages the bot created in channelID, in order.
func (s *chatAPI) Sent(channelID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentToLocked(channelID)
}

// sentToLocked is the bot's messages in channelID, in order. Callers hold
// s.mu.
func (s *state) sentToLocked(channelID string) []SentMessage {
	idx := s.sentIdx[channelID]
	out := make([]SentMessage, 0, len(idx))
	for _, i := range idx {
		out = append(out, s.sent[i].clone())
	}
	return out
}

// AllSent returns every message the bot created, in order.
func (s *chatAPI) AllSent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SentMessage, len(s.sent))
	for i, m := range s.sent {
		out[i] = m.clone()
	}
	return out
}

// WaitSent waits until the bot has created at least n messages in
// channelID and returns them all; after timeout it fails the test (call it
// from the test goroutine) with what did arrive.
func (s *chatAPI) WaitSent(t testing.TB, channelID string, n int, timeout time.Duration) []SentMessage {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { return len(s.sentIdx[channelID]) >= n },
		func() string {
			got := s.Sent(channelID)
			return fmtWant(n, channelID, got)
		})
	return s.Sent(channelID)
}

// Typing returns how many typing indicators the bot triggered in
// channelID.
func (s *chatAPI) Typing(channelID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channelID]
}
