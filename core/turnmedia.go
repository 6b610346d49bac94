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

// Transcriber turns speech into text (*llm.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, name string, data []byte) (string, error)
}

// AttachmentsOf returns the attachments stored with a message.
func AttachmentsOf(m Message) []Attachment {
	switch v := m.Metadata["attachments"].(type) {
	case nil:
		return nil
	case []Attachment:
		return v
	default:
		// Read back from the database as JSON values.
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
