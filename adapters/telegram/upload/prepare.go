package upload

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/parleybot/parley/core"
)

// Telegram's limits on what a bot uploads.
const (
	// MaxPhoto is sendPhoto's limit; a bigger picture is scaled down.
	MaxPhoto = 10 << 20
	// MaxFile is the limit of every other upload.
	MaxFile = 50 << 20
)

// Methods that send a file, named by the file parameter they take.
const (
	photo    = "photo"
	document = "document"
	voice    = "voice"
	audio    = "audio"
)

// item is a file as it will be uploaded: by which method, under which
// name, with which bytes.
type item struct {
	method string
	name   string
	data   []byte
}

// prepare decides how f goes: a picture as a photo (scaled down when over
// sendPhoto's limits, as a document when Telegram could not read it as
// one), a voice note as a voice note when it is Ogg (else as audio),
// audio as audio, anything else as a document. A file over every limit,
// or empty, is a *core.PermanentError naming it.
func prepare(f core.OutboundFile) (item, error) {
	name := f.Name
	if name == "" {
		name = "file"
	}
	if len(f.Data) == 0 {
		return item{}, &core.PermanentError{Reason: fmt.Sprintf("file %q is empty", name)}
	}
	it := item{method: document, name: name, data: f.Data}
	switch f.Kind {
	case core.AttachImage:
		if data, scaledName, ok := fitPhoto(f.Data, name); ok {
			return item{method: photo, name: scaledName, data: data}, nil
		}
	case core.AttachVoice:
		it.method = audio
		if bytes.HasPrefix(f.Data, []byte("OggS")) || strings.HasPrefix(f.MIME, "audio/ogg") {
			it.method = voice
		}
	case core.AttachAudio:
		it.method = audio
	}
	if len(it.data) > MaxFile {
		return item{}, &core.PermanentError{Reason: fmt.Sprintf("file %q is %s, over Telegram's %s limit for a bot's upload",
			name, core.ByteSize(int64(len(it.data))), core.ByteSize(MaxFile))}
	}
	return it, nil
}
