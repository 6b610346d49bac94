package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// AttachmentKind is what a file a user sent is, as the model is told.
type AttachmentKind string

// Attachment kinds.
const (
	AttachImage    AttachmentKind = "image"    // a photo or picture
	AttachVoice    AttachmentKind = "voice"    // a recorded voice note
	AttachAudio    AttachmentKind = "audio"    // a music or audio file
	AttachVideo    AttachmentKind = "video"    // a video, a video note, an animation
	AttachDocument AttachmentKind = "document" // any other file
	AttachSticker  AttachmentKind = "sticker"  // a sticker (its emoji stands for it)
)

// KindOf is the kind of a file of type mimeType by its major type: image,
// audio, video, or document for any other (a voice note is the
// platform's to tell).
func KindOf(mimeType string) AttachmentKind {
	base, _, _ := strings.Cut(mimeType, ";")
	major, _, typed := strings.Cut(strings.ToLower(strings.TrimSpace(base)), "/")
	if typed && (major == "image" || major == "audio" || major == "video") {
		return AttachmentKind(major)
	}
	return AttachDocument
}

// Attachment is a file a user sent with a direct message, as the adapter
// describes it. Its bytes stay on the platform: the core fetches them
// through the adapter (AttachmentFetcher) when a turn needs them, and
// stores only this description with the message.
type Attachment struct {
	Kind AttachmentKind `json:"kind"`
	// MIME is the type the platform gave ("" when it gave none).
	MIME string `json:"mime,omitempty"`
	// Size is in bytes; 0 when the platform did not say.
	Size int64 `json:"size,omitempty"`
	// Name is the file name ("" when it has none, as a Telegram photo).
	Name string `json:"name,omitempty"`
	// Ref is the adapter's own reference to fetch the file (a Telegram
	// file_id, a Discord attachment URL, a Slack url_private). It is
	// stored and shown to the owner, so it must never hold a secret
	// (Telegram's download URL holds the bot token: it is not a Ref).
	Ref string `json:"ref,omitempty"`
	// Emoji is a sticker's emoji ("" when it has none).
	Emoji string `json:"emoji,omitempty"`
	// Seconds is a voice note's, audio's or video's length, when known.
	Seconds int `json:"seconds,omitempty"`
	// Width and Height are an image's or video's size in pixels, when
	// known.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
}

// AttachmentFetcher is an optional Adapter capability: download an
// attachment's bytes through the platform's file API (Telegram getFile,
// Discord's CDN, Slack url_private with the bot token), retried like every
// platform call. A file larger than max bytes is not downloaded whole: the
// error wraps ErrTooLarge. Errors never hold a secret (a URL with the bot
// token in it).
type AttachmentFetcher interface {
	FetchAttachment(ctx context.Context, a Attachment, max int64) ([]byte, error)
}

// ErrTooLarge is wrapped by FetchAttachment for a file over the size
// asked for (media.max_bytes).
var ErrTooLarge = errors.New("the file is larger than media.max_bytes")

// Details are what is known of the file, for people and the model: "cat.png,
// image/png, 1.2 MB, 3 s" ("" when nothing is).
func (a Attachment) Details() string {
	var facts []string
	if a.Name != "" {
		facts = append(facts, a.Name)
	}
	if a.MIME != "" {
		facts = append(facts, a.MIME)
	}
	if a.Size > 0 {
		facts = append(facts, ByteSize(a.Size))
	}
	if a.Seconds > 0 {
		facts = append(facts, fmt.Sprintf("%d s", a.Seconds))
	}
	return strings.Join(facts, ", ")
}

// ByteSize writes n bytes for people: "820 KB", "1.2 MB".
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
