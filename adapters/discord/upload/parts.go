package upload

import (
	"fmt"
	"path"
	"strings"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/media"
)

// part is the files of one message; voice is set for a voice message
// (one Ogg Opus file).
type part struct {
	files []core.OutboundFile
	voice *voice
}

// prepare fits files to Discord's limits and groups them into messages,
// in order: a voice note alone, other files together up to 10 a message
// and Limit bytes.
func (s Sender) prepare(files []core.OutboundFile) ([]part, error) {
	var parts []part
	var cur part
	size := 0
	flush := func() {
		if len(cur.files) > 0 {
			parts = append(parts, cur)
		}
		cur, size = part{}, 0
	}
	for _, f := range files {
		f, err := fit(named(f))
		if err != nil {
			return nil, err
		}
		if f.Kind == core.AttachVoice {
			if v, ok := readVoice(f.Data); ok {
				flush()
				parts = append(parts, part{files: []core.OutboundFile{f}, voice: &v})
				continue
			}
			// Without its length Discord refuses a voice message: the
			// note goes as an audio file, which plays all the same.
			s.Log.Warn("a voice note is not Ogg Opus whose length can be read; sending it as an audio file", "file", f.Name)
		}
		if len(cur.files) == maxFiles || size+len(f.Data) > Limit {
			flush()
		}
		cur.files = append(cur.files, f)
		size += len(f.Data)
	}
	flush()
	if len(parts) == 0 {
		return nil, &core.PermanentError{Reason: "no files"}
	}
	return parts, nil
}

// named gives f the name and type Discord needs when it has none.
func named(f core.OutboundFile) core.OutboundFile {
	if strings.TrimSpace(f.Name) == "" {
		f.Name = "file"
		if f.Kind == core.AttachVoice {
			f.Name = "voice-message.ogg"
		}
	}
	if f.MIME == "" {
		f.MIME = "application/octet-stream"
		if f.Kind == core.AttachVoice {
			f.MIME = "audio/ogg"
		}
	}
	return f
}

// fit returns f within Limit: a picture over it scaled down (halving its
// longest side from 4096 pixels until it fits, as JPEG or PNG), anything
// else over it a core.PermanentError naming it and the limit.
func fit(f core.OutboundFile) (core.OutboundFile, error) {
	if len(f.Data) <= Limit {
		return f, nil
	}
	tooLarge := &core.PermanentError{Reason: fmt.Sprintf("file %q is %s, over Discord's limit of %s a message",
		f.Name, core.ByteSize(int64(len(f.Data))), core.ByteSize(Limit))}
	if f.Kind != core.AttachImage {
		return f, tooLarge
	}
	for px := 4096; px >= 256; px /= 2 {
		p, err := media.Image(f.Data, px)
		if err != nil {
			tooLarge.Reason += " (and it could not be scaled: " + err.Error() + ")"
			return f, tooLarge
		}
		if len(p.Data) <= Limit {
			ext := ".jpg"
			if p.MIME == "image/png" {
				ext = ".png"
			}
			f.Name = strings.TrimSuffix(f.Name, path.Ext(f.Name)) + ext
			f.MIME, f.Data = p.MIME, p.Data
			return f, nil
		}
	}
	return f, tooLarge
}
