package core

import (
	"context"
	"encoding/json"
)

// MediaConfig says what a turn does with the files users send.
type MediaConfig struct {
	// Vision sends images to the model as image parts; off, the model is
	// told an image came that it cannot see (llm.vision).
	Vision bool
	// MaxBytes: larger files are described, not fetched (media.max_bytes,
	// default 20 MiB).
	MaxBytes int64
	// MaxImagePx is the longest side of an image sent to the model
	// (media.max_image_px, default 1568).
	MaxImagePx int
	// MaxDocumentChars bounds the text of a document the model reads
	// (media.max_document_chars, default 20000).
	MaxDocumentChars int
	// MaxPerTurn is how many files a turn opens, newest first; the rest
	// are described (media.max_per_turn, default 10).
	MaxPerTurn int
	// Transcriber turns voice notes and audio into text; nil: off.
	Transcriber Transcriber
}

// VoiceReplies says when a turn answers by voice (voice.*): Mode is
// never, mirror (a user turn that answers a voice note) or always; a reply
// of more than MaxChars characters goes as text.
type VoiceReplies struct {
	Mode     string
	MaxChars int
	// Speaker speaks the reply; nil: replies go as text.
	Speaker Speaker
}

// Speaker turns a reply's text into speech: an Ogg Opus voice note.
type Speaker interface {
	Speak(ctx context.Context, text string) ([]byte, error)
}

// VoiceReplyKey marks a stored reply that went out as a voice note: its
// text is what was spoken, sent as the voice note alone.
const VoiceReplyKey = "voice_reply"

// Transcriber turns speech into text (*llm.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, name string, data []byte) (string, error)
}

// AttachmentsOf returns the attachments stored with a message.
func AttachmentsOf(m Message) []Attachment { return attachmentList(m.Metadata["attachments"]) }

// FilesOf returns the description of the files a bot message carried
// (FilesKey), kept after their bytes are dropped.
func FilesOf(m Message) []Attachment { return attachmentList(m.Metadata[FilesKey]) }

// attachmentList reads a metadata value holding attachments: as set, or
// read back from the database as JSON values.
func attachmentList(v any) []Attachment {
	switch v := v.(type) {
	case nil:
		return nil
	case []Attachment:
		return v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out []Attachment
		if json.Unmarshal(b, &out) != nil {
			return nil
		}
		return out
	}
}
