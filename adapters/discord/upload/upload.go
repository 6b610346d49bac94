package upload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/discord/nonce"
	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// Discord's limits on one message.
const (
	// Limit is what the files of one message may weigh for a bot in a
	// DM (no server boosts): 10 MiB. Over it Discord answers 413, code
	// 40005 "Request entity too large".
	Limit = 10 << 20
	// maxFiles is the most attachments one message may carry.
	maxFiles = 10
	// maxContent is the longest content, in characters.
	maxContent = 2000
)

// codeInvalidFormBody is Discord's 400 Invalid Form Body.
const codeInvalidFormBody = 50035

// Sender sends messages with files. Post and Text are the adapter's.
type Sender struct {
	// Post sends one multipart create-message request (contentType and
	// body as discordgo.MultipartBodyWithJSON makes them) with Send's
	// retries and returns Discord's answer, the Message object.
	Post func(ctx context.Context, contentType string, body []byte) ([]byte, error)
	// Text sends a message's text as Send does.
	Text func(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error)
	Log  *slog.Logger
}

// payload is payload_json of a create-message request with files.
type payload struct {
	Content         string                            `json:"content,omitempty"`
	Nonce           string                            `json:"nonce"`
	EnforceNonce    bool                              `json:"enforce_nonce"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	Flags           discordgo.MessageFlags            `json:"flags,omitempty"`
	Attachments     []attachment                      `json:"attachments"`
}

// attachment describes files[ID]; a voice message's carries its length
// and waveform, which discordgo's MessageSend has no field for.
type attachment struct {
	ID           int     `json:"id"`
	Filename     string  `json:"filename"`
	DurationSecs float64 `json:"duration_secs,omitempty"`
	Waveform     string  `json:"waveform,omitempty"`
}

// Send sends msg.Files to the channel, in order, as messages of at most
// 10 files and Limit bytes (a voice note alone in its message), with
// msg.Text rendered as Send renders it. The text is the content of the
// first message that is not a voice note when it fits in one message and
// the message has no choices; otherwise it follows the files, sent by
// Text (buttons and all). Message i of the files carries the nonce of
// msg.IdempotencyKey and i, as Send's parts do, and the text after them
// the key with "/c", so a repeat of the same send creates nothing twice.
// A file over Limit that is not a picture that scales is a
// core.PermanentError naming it and the limit. The result lists every
// message made, even when a later one fails.
func (s Sender) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	parts, err := s.prepare(msg.Files)
	if err != nil {
		return core.SendResult{}, err
	}
	key := msg.IdempotencyKey
	if key == "" {
		key = nonce.RandomKey() // still dedupes this call's own retries
	}
	content, formatted := caption(msg)
	textAfter := content == "" && strings.TrimSpace(msg.Text) != ""
	at := captionPart(parts)
	if at < 0 && content != "" {
		content, textAfter = "", true
	}
	var ids []string
	for i, p := range parts {
		c := ""
		if i == at {
			c = content
		}
		id, err := s.post(ctx, p, c, nonce.For(key, i))
		if err != nil && c != "" && formatted && invalidFormBody(err) {
			// Discord refused the caption's markup: the files go
			// bare, and the text after them as Send sends it, which
			// falls back to plain text itself.
			s.Log.Warn("discord refused a caption's markup; sending the files without it and the text after them",
				"channel_id", msg.ChannelThreadID, "err", err)
			textAfter = true
			id, err = s.post(ctx, p, "", nonce.For(key, i))
		}
		if err != nil {
			return core.SendResult{PlatformMessageIDs: ids}, fmt.Errorf("sending %s: %w", names(p), err)
		}
		ids = append(ids, id)
	}
	if !textAfter {
		return core.SendResult{PlatformMessageIDs: ids}, nil
	}
	text := msg
	text.Files, text.IdempotencyKey = nil, key+"/c"
	res, err := s.Text(ctx, text)
	ids = append(ids, res.PlatformMessageIDs...)
	if err != nil {
		return core.SendResult{PlatformMessageIDs: ids}, fmt.Errorf("sending the text after the files: %w", err)
	}
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// caption is msg's text as one message's content, rendered as Send
// renders it (formatted: Discord markdown), or "" when there is none or
// it takes more than one message.
func caption(msg core.OutboundMessage) (content string, formatted bool) {
	if strings.TrimSpace(msg.Text) == "" || len(msg.Choices) > 0 {
		return "", false
	}
	if msg.Format == core.FormatRichText {
		if ps := markup.SplitDiscord(msg.Text, maxContent); len(ps) == 1 {
			return ps[0].Text, true
		}
		return "", false
	}
	if ps := textsplit.Split(msg.Text, maxContent); len(ps) == 1 {
		return ps[0], false
	}
	return "", false
}

// captionPart is the index of the first part that can carry content (a
// voice message cannot), -1 if none.
func captionPart(parts []part) int {
	for i, p := range parts {
		if p.voice == nil {
			return i
		}
	}
	return -1
}

// post creates one message of p's files with content and returns its id.
func (s Sender) post(ctx context.Context, p part, content, n string) (string, error) {
	body := payload{Content: content, Nonce: n, EnforceNonce: true,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}}
	files := make([]*discordgo.File, 0, len(p.files))
	for i, f := range p.files {
		body.Attachments = append(body.Attachments, attachment{ID: i, Filename: f.Name})
		files = append(files, &discordgo.File{Name: f.Name, ContentType: f.MIME, Reader: bytes.NewReader(f.Data)})
	}
	if p.voice != nil {
		body.Flags = discordgo.MessageFlagsIsVoiceMessage
		body.Attachments[0].DurationSecs, body.Attachments[0].Waveform = p.voice.seconds, p.voice.waveform
	}
	ct, raw, err := discordgo.MultipartBodyWithJSON(body, files)
	if err != nil {
		return "", fmt.Errorf("building the request: %w", err)
	}
	answer, err := s.Post(ctx, ct, raw)
	if err != nil {
		return "", err
	}
	var m discordgo.Message
	if err := json.Unmarshal(answer, &m); err != nil || m.ID == "" {
		return "", errors.New("no message in discord's answer")
	}
	return m.ID, nil
}

// invalidFormBody reports whether err is Discord's 400 Invalid Form Body.
func invalidFormBody(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Message != nil && re.Message.Code == codeInvalidFormBody
}

// names names p's files for an error: "file \"a.png\"", "files \"a\", \"b\"".
func names(p part) string {
	q := make([]string, len(p.files))
	for i, f := range p.files {
		q[i] = fmt.Sprintf("%q", f.Name)
	}
	if len(q) == 1 {
		return "file " + q[0]
	}
	return "files " + strings.Join(q, ", ")
}
