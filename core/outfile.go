package core

import (
	"context"
)

// OutboundFile is a file the bot sends with a message: a picture, a
// document, a voice note or audio, with its bytes. The core records the
// bytes before the send (like a reply's text), so a send retried after a
// crash sends the same file.
type OutboundFile struct {
	// Kind is AttachImage, AttachDocument, AttachVoice (a voice note:
	// Ogg Opus) or AttachAudio.
	Kind AttachmentKind
	// Name is the file's name as the user sees it ("export.json",
	// "reply.ogg").
	Name string
	// MIME is the file's type ("image/png", "audio/ogg").
	MIME string
	Data []byte
}

// FileSender is an optional Adapter capability: send msg.Files natively,
// with msg.Text (in msg.Format) as their caption, in order, as the
// platform shows files (Telegram's sendPhoto, sendDocument, sendVoice;
// Discord's attachments; Slack's upload flow; the web chat inline). A
// file the platform cannot show as its kind goes as a document; a picture
// over the platform's limit is scaled down or sent as a document; a file
// over every limit is a PermanentError naming it and the limit. A caption
// longer than the platform allows goes as text after the files. Retries
// and rate limits are as for Send; SendResult lists every platform
// message made. Without FileSender the core sends the text with a line
// per file it could not show (the outbox adds it).
type FileSender interface {
	SendFiles(ctx context.Context, msg OutboundMessage) (SendResult, error)
}

// FilesKey is the Message.Metadata key describing the files a message
// carries (a list of Attachment: kind, MIME, size, name), kept after
// their bytes are dropped.
const FilesKey = "files"

// FilesNotKeptKey marks a message whose files' bytes were not kept until
// it was sent (over MaxOutboundFileBytes, or past store.max_file_bytes in
// flight): sent again after a crash, it has only its text and a line
// per file saying so.
const FilesNotKeptKey = "files_not_kept"

// MaxOutboundFileBytes bounds one file kept for a send in flight: the
// largest Telegram takes from a bot (50 MB). A bigger one is never kept;
// each platform sends what it can take, and the text says what it could
// not.
const MaxOutboundFileBytes = 50 << 20

// MaxReplyPictures bounds the pictures tools attach to one reply
// (Turn.Files: generate_image, MCP's share_image): a reply's worth, which
// every platform shows together with one caption.
const MaxReplyPictures = 4

// AttachFiles sets the files m carries and describes them in its
// metadata.
func (m *Message) AttachFiles(files []OutboundFile) {
	m.Files = files
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	described := make([]Attachment, len(files))
	for i, f := range files {
		described[i] = Attachment{Kind: f.Kind, MIME: f.MIME, Size: int64(len(f.Data)), Name: f.Name}
	}
	m.Metadata[FilesKey] = described
}

// ImageMaker makes a picture from a prompt (*llm.Imager): its bytes and
// MIME type.
type ImageMaker interface {
	GenerateImage(ctx context.Context, prompt string) (data []byte, mime string, err error)
}
