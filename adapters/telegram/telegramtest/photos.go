package telegramtest

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"
)

// maxCaptionLen is Telegram's limit on a caption, in UTF-16 code units
// after entity parsing.
const maxCaptionLen = 1024

// sendPhoto validates like Telegram (a photo given, a caption that parses
// and fits, a known and unblocked chat), then records the photo and
// returns the message. A URL is taken as it is: the fake fetches nothing.
func (s *chatAPI) sendPhoto(_ context.Context, p params) (any, *Fault) {
	photo := strings.TrimSpace(p["photo"])
	if photo == "" {
		f := badRequest("there is no photo in the request")
		return nil, &f
	}
	if !photoRef(photo) {
		f := badRequest("wrong file identifier/HTTP URL specified")
		return nil, &f
	}
	if p["parse_mode"] != "" {
		if f := s.takeMarkupFault(p["caption"]); f != nil {
			return nil, f
		}
	}
	caption, ents, f := parseText(p["caption"], p["parse_mode"])
	if f != nil {
		return nil, f
	}
	if len(utf16.Encode([]rune(caption))) > maxCaptionLen {
		f := badRequest("message caption is too long")
		return nil, &f
	}
	replyTo, f := replyToID(p)
	if f != nil {
		return nil, f
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	cs, f := s.chatTarget(p)
	if f != nil {
		return nil, f
	}
	bot := s.bot
	msg := s.newMessage(cs, &bot, "")
	id := "fake-photo-" + strconv.Itoa(msg.ID)
	msg.Photo = []models.PhotoSize{
		{FileID: id + "-s", FileUniqueID: id + "-s", Width: 90, Height: 90},
		{FileID: id, FileUniqueID: id, Width: 800, Height: 800},
	}
	msg.Caption, msg.CaptionEntities = caption, ents
	s.recordLocked(SentMessage{
		ChatID:           cs.chat.ID,
		MessageID:        msg.ID,
		Text:             p["caption"],
		Plain:            caption,
		ParseMode:        p["parse_mode"],
		Entities:         ents,
		Photo:            photo,
		Kind:             "photo",
		ReplyToMessageID: replyTo,
		At:               s.now(),
	})
	return msg, nil
}

// photoRef reports whether photo is something sendPhoto takes: an http(s)
// URL or an uploaded file (attach://). Telegram would also take the
// file_id of a photo it has; the fake knows none.
func photoRef(photo string) bool {
	if strings.HasPrefix(photo, "attach://") {
		return true
	}
	u, err := url.Parse(photo)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(photo, " \n")
}
