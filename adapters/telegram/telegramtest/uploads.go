package telegramtest

import (
	"bytes"
	"context"
	"image"
	_ "image/gif" // photos Telegram takes
	_ "image/jpeg"
	_ "image/png"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"
)

// Telegram's limits on what a bot uploads.
const (
	// MaxPhotoUpload is sendPhoto's limit.
	MaxPhotoUpload = 10 << 20
	// MaxFileUpload is the limit of sendDocument, sendVoice and sendAudio.
	MaxFileUpload = 50 << 20
)

// SentFile is a file the bot uploaded, as the fake received it.
type SentFile struct {
	ChatID    int64
	MessageID int
	// Method is the call that sent it ("sendPhoto", "sendDocument", ...).
	Method string
	// Kind is how the message shows it: "photo", "document", "voice" or
	// "audio". A voice note that is not Ogg shows as a document.
	Kind string
	// Name is the upload's file name; MIME the type Telegram gives it
	// (from the name, else the bytes).
	Name, MIME string
	// Data is the file's bytes; nil with WithUploadDigests, where Size
	// and SHA256 (hex) say what arrived.
	Data   []byte
	Size   int
	SHA256 string
	// Caption is the caption parameter as sent; CaptionPlain what a user
	// reads, with Entities its styles (MarkdownV2).
	Caption, CaptionPlain, ParseMode string
	Entities                         []models.MessageEntity
	// Width and Height are a photo's.
	Width, Height int
}

// uploadMethod is one of the Bot API methods that send a file.
type uploadMethod struct {
	name, field, kind string
	limit             int
}

var uploadMethods = map[string]uploadMethod{
	"sendphoto":    {name: "sendPhoto", field: "photo", kind: "photo", limit: MaxPhotoUpload},
	"senddocument": {name: "sendDocument", field: "document", kind: "document", limit: MaxFileUpload},
	"sendvoice":    {name: "sendVoice", field: "voice", kind: "voice", limit: MaxFileUpload},
	"sendaudio":    {name: "sendAudio", field: "audio", kind: "audio", limit: MaxFileUpload},
}

// uploadAPI takes the files the bot uploads.
type uploadAPI struct{ *state }

// sendPhotoAny sends an uploaded photo through the upload path (its bytes
// kept and checked), and a URL as before.
func (s *Server) sendPhotoAny(ctx context.Context, p params) (any, *Fault) {
	if _, ok := p.upload("photo"); ok {
		return s.uploadAPI.send(uploadMethods["sendphoto"])(ctx, p)
	}
	return s.sendPhoto(ctx, p)
}

// send returns the handler of method m: it validates like Telegram (a
// file given, not empty, within the method's limit, a photo Telegram can
// read, a caption that parses and fits, a known and unblocked chat), then
// records the file and returns the message with its photo, document,
// voice or audio object.
func (s *uploadAPI) send(m uploadMethod) handlerFunc {
	return func(_ context.Context, p params) (any, *Fault) {
		f, fault := s.check(m, p)
		if fault != nil {
			return nil, fault
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		cs, fault := s.chatTarget(p)
		if fault != nil {
			return nil, fault
		}
		bot := s.bot
		msg := s.newMessage(cs, &bot, "")
		msg.Caption, msg.CaptionEntities = f.CaptionPlain, f.Entities
		f.ChatID, f.MessageID = cs.chat.ID, msg.ID
		attachObject(&msg, f)
		s.outFiles = append(s.outFiles, f)
		s.recordLocked(SentMessage{
			ChatID: cs.chat.ID, MessageID: msg.ID, Text: f.Caption, Plain: f.CaptionPlain,
			ParseMode: f.ParseMode, Entities: f.Entities, Photo: photoParam(m, p), Kind: f.Kind, At: s.now(),
		})
		return msg, nil
	}
}

// check reads and validates the file and caption of a call to m.
func (s *uploadAPI) check(m uploadMethod, p params) (SentFile, *Fault) {
	bad := func(what string) (SentFile, *Fault) { f := badRequest(what); return SentFile{}, &f }
	ref := strings.TrimSpace(p[m.field])
	up, uploaded := p.upload(m.field)
	switch {
	case ref == "":
		return bad("there is no " + m.field + " in the request")
	case !uploaded && !photoRef(ref):
		return bad("wrong file identifier/HTTP URL specified")
	case uploaded && up.Size == 0:
		return bad("file must be non-empty")
	case up.Size > m.limit:
		return bad("file is too big")
	}
	f := SentFile{Method: m.name, Kind: m.kind, Name: up.Name, MIME: up.MIME, Data: up.Data, Size: up.Size, SHA256: up.SHA256,
		Caption: p["caption"], ParseMode: p["parse_mode"]}
	if up.digest {
		f.Data = nil // only its head was kept, for the checks below
	}
	if uploaded && m.kind == "photo" {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(up.Data))
		if err != nil {
			return bad("IMAGE_PROCESS_FAILED")
		}
		if cfg.Width+cfg.Height > 10000 || cfg.Width > 20*cfg.Height || cfg.Height > 20*cfg.Width {
			return bad("PHOTO_INVALID_DIMENSIONS")
		}
		f.Width, f.Height = cfg.Width, cfg.Height
	}
	// Telegram shows a voice note only when it is Ogg; anything else
	// arrives as a document.
	if m.kind == "voice" && uploaded && !bytes.HasPrefix(up.Data, []byte("OggS")) {
		f.Kind = "document"
	}
	if f.ParseMode != "" {
		if fault := s.takeMarkupFault(f.Caption); fault != nil {
			return SentFile{}, fault
		}
	}
	plain, ents, fault := parseText(f.Caption, f.ParseMode)
	if fault != nil {
		return SentFile{}, fault
	}
	if len(utf16.Encode([]rune(plain))) > maxCaptionLen {
		return bad("message caption is too long")
	}
	f.CaptionPlain, f.Entities = plain, ents
	return f, nil
}

// photoParam is SentMessage.Photo for a call to m: sendPhoto's parameter.
func photoParam(m uploadMethod, p params) string {
	if m.kind != "photo" {
		return ""
	}
	return p["photo"]
}

// attachObject puts f on msg as the object Telegram returns for its kind.
func attachObject(msg *models.Message, f SentFile) {
	id := "fake-" + f.Kind + "-" + strconv.Itoa(msg.ID)
	size := int64(f.Size)
	switch f.Kind {
	case "photo":
		msg.Photo = []models.PhotoSize{
			{FileID: id + "-s", FileUniqueID: id + "-s", Width: 90, Height: 90},
			{FileID: id, FileUniqueID: id, Width: f.Width, Height: f.Height, FileSize: int(size)},
		}
	case "voice":
		msg.Voice = &models.Voice{FileID: id, FileUniqueID: id, MimeType: f.MIME, FileSize: size}
	case "audio":
		msg.Audio = &models.Audio{FileID: id, FileUniqueID: id, FileName: f.Name, MimeType: f.MIME, FileSize: size}
	default:
		msg.Document = &models.Document{FileID: id, FileUniqueID: id, FileName: f.Name, MimeType: f.MIME, FileSize: size}
	}
}

// Files returns the files the bot uploaded to chatID, in order, bytes
// included.
func (s *uploadAPI) Files(chatID int64) []SentFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filesTo(chatID)
}

func (s *uploadAPI) filesTo(chatID int64) []SentFile {
	var out []SentFile
	for _, f := range s.outFiles {
		if f.ChatID == chatID {
			out = append(out, f)
		}
	}
	return out
}

// WaitFiles waits until the bot has uploaded at least n files to chatID
// and returns them all; after timeout it fails the test (call it from the
// test goroutine).
func (s *uploadAPI) WaitFiles(t testing.TB, chatID int64, n int, timeout time.Duration) []SentFile {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		got := s.filesTo(chatID)
		changed := s.changed
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("telegramtest: waited %v for %d files to chat %d, got %d", timeout, n, chatID, len(got))
			return got
		case <-s.done:
			t.Fatalf("telegramtest: server closed while waiting for %d files to chat %d, got %d", n, chatID, len(got))
			return got
		}
	}
}
