package wire

import (
	"github.com/parleybot/parley/core"
)

// VoiceClipSubtype is the per-file subtype of a clip recorded in Slack's
// composer (audio/webm or audio/mp4), as opposed to an audio file
// uploaded.
const VoiceClipSubtype = "slack_audio"

// File is the part of a file object in a message event that Parley
// reads. slack.File has no subtype, which tells a voice clip from an
// audio file, so the adapter decodes files itself.
type File struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Mimetype           string `json:"mimetype"`
	Filetype           string `json:"filetype"`
	Subtype            string `json:"subtype"`
	Mode               string `json:"mode"`
	IsExternal         bool   `json:"is_external"`
	Size               int64  `json:"size"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
	OriginalW          int    `json:"original_w"`
	OriginalH          int    `json:"original_h"`
	DurationMs         int    `json:"duration_ms"`
}

// Attachments describes a message's files for the core, in Slack's order.
// Files Parley cannot fetch with the bot token are left out, and returned
// as skipped: deleted ones (mode tombstone), those hidden by a free
// workspace's limit (hidden_by_limit), external links (Google Drive…),
// and any without a private URL.
func Attachments(files []File) (out []core.Attachment, skipped []File) {
	for _, f := range files {
		ref := f.URLPrivateDownload
		if ref == "" {
			ref = f.URLPrivate
		}
		if ref == "" || f.IsExternal || f.Mode == "tombstone" || f.Mode == "hidden_by_limit" || f.Mode == "external" {
			skipped = append(skipped, f)
			continue
		}
		out = append(out, core.Attachment{
			Kind:    kindOf(f),
			MIME:    f.Mimetype,
			Size:    max(f.Size, 0),
			Name:    f.Name,
			Ref:     ref,
			Seconds: seconds(f.DurationMs),
			Width:   max(f.OriginalW, 0),
			Height:  max(f.OriginalH, 0),
		})
	}
	return out, skipped
}

// seconds rounds a length in milliseconds to the nearest second; a
// negative one is not known (0). It cannot overflow, as ms+500 can.
func seconds(ms int) int {
	if ms <= 0 {
		return 0
	}
	return ms/1000 + (ms%1000+500)/1000
}

// kindOf tells what a file is from its MIME type; an audio clip recorded
// in Slack is a voice note, any other audio an audio file.
func kindOf(f File) core.AttachmentKind {
	k := core.KindOf(f.Mimetype)
	if k == core.AttachAudio && f.Subtype == VoiceClipSubtype {
		return core.AttachVoice
	}
	return k
}
