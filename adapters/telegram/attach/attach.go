// Package attach reads the file a Telegram message carries (a photo, a
// voice note, a sticker, a document) as the core's attachment: what it
// is, never its bytes, which stay on Telegram's servers until a turn
// fetches them.
package attach

import (
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// MaxBotAPIFile is the largest file the Bot API hands to a bot: getFile
// answers "file is too big" above 20 MB.
const MaxBotAPIFile = 20 << 20

// Of describes the file a message carries, if any. Telegram
// sends one file per message (an album arrives as several messages), and
// the file stays on its servers: Ref is the file_id, never the download
// URL, which holds the bot token.
func Of(m *models.Message) []core.Attachment {
	var a core.Attachment
	switch {
	case len(m.Photo) > 0:
		p := LargestPhoto(m.Photo)
		// Telegram re-encodes every photo it stores as JPEG.
		a = core.Attachment{Kind: core.AttachImage, MIME: "image/jpeg", Size: int64(p.FileSize), Ref: p.FileID,
			Width: p.Width, Height: p.Height}
	case m.Voice != nil:
		v := m.Voice
		a = core.Attachment{Kind: core.AttachVoice, MIME: orDefault(v.MimeType, "audio/ogg"), Size: v.FileSize, Ref: v.FileID,
			Seconds: v.Duration}
	case m.Audio != nil:
		v := m.Audio
		a = core.Attachment{Kind: core.AttachAudio, MIME: v.MimeType, Size: v.FileSize, Name: v.FileName, Ref: v.FileID,
			Seconds: v.Duration}
	case m.Video != nil:
		v := m.Video
		a = core.Attachment{Kind: core.AttachVideo, MIME: v.MimeType, Size: v.FileSize, Name: v.FileName, Ref: v.FileID,
			Seconds: v.Duration, Width: v.Width, Height: v.Height}
	case m.VideoNote != nil:
		v := m.VideoNote
		// A video note is a square MP4 of side Length.
		a = core.Attachment{Kind: core.AttachVideo, MIME: "video/mp4", Size: int64(v.FileSize), Ref: v.FileID,
			Seconds: v.Duration, Width: v.Length, Height: v.Length}
	case m.Animation != nil:
		// Checked before Document: Telegram sends an animation in both
		// fields, the document one for old clients.
		v := m.Animation
		a = core.Attachment{Kind: core.AttachVideo, MIME: v.MimeType, Size: v.FileSize, Name: v.FileName, Ref: v.FileID,
			Seconds: v.Duration, Width: v.Width, Height: v.Height}
	case m.Document != nil:
		v := m.Document
		a = core.Attachment{Kind: core.AttachDocument, MIME: v.MimeType, Size: v.FileSize, Name: v.FileName, Ref: v.FileID}
	case m.Sticker != nil:
		v := m.Sticker
		a = core.Attachment{Kind: core.AttachSticker, MIME: stickerMIME(v), Size: int64(v.FileSize), Ref: v.FileID,
			Emoji: v.Emoji, Width: v.Width, Height: v.Height}
	default:
		return nil
	}
	if a.Ref == "" {
		return nil // nothing to fetch: a malformed file is no file
	}
	// A negative number is no size or length at all (0: not known).
	a.Size, a.Seconds, a.Width, a.Height = max(a.Size, 0), max(a.Seconds, 0), max(a.Width, 0), max(a.Height, 0)
	return []core.Attachment{a}
}

// LargestPhoto picks from Telegram's sizes of one photo (smallest first)
// the largest the Bot API will hand out; the largest of all when none
// says its size.
func LargestPhoto(sizes []models.PhotoSize) models.PhotoSize {
	for i := len(sizes) - 1; i >= 0; i-- {
		if sizes[i].FileSize <= MaxBotAPIFile {
			return sizes[i]
		}
	}
	return sizes[len(sizes)-1]
}

// stickerMIME is the format of a sticker's file: WebP for a static one,
// gzipped Lottie (TGS) for an animated one, WebM for a video one.
func stickerMIME(s *models.Sticker) string {
	switch {
	case s.IsAnimated:
		return "application/x-tgsticker"
	case s.IsVideo:
		return "video/webm"
	}
	return "image/webp"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
