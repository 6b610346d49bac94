package discordtest

import (
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
)

// MaxUpload is what the files of one message may weigh for a bot in a DM
// (no server boosts): 10 MiB. Over it Discord answers 413 with code 40005,
// "Request entity too large".
const MaxUpload = 10 << 20

// Discord's error codes for uploads.
const (
	codeEntityTooLarge    = 40005
	codeVoiceSingleAudio  = 50159
	codeVoiceNeedsDetails = 50160
)

// SentAttachment is a file the bot attached to a message it created, as
// Discord stored it: the bytes that arrived, and the attachment object's
// fields the fake answered with.
type SentAttachment struct {
	ID       string
	Filename string
	// ContentType is the part's Content-Type, or the one its filename's
	// extension names when the part had none (or a generic one).
	ContentType string
	Size        int
	Data        []byte
	// URL serves Data on the fake's origin, as Discord's CDN does.
	URL string
	// DurationSecs and Waveform are a voice message's, from the
	// attachments entry of payload_json.
	DurationSecs float64
	Waveform     string
	// Voice is set on the file of a voice message (flags
	// IS_VOICE_MESSAGE, which the fake takes only with one audio file, its
	// duration and waveform).
	Voice bool
	raw   json.RawMessage
}

// Shown is how a Discord client shows the attachment: "voice" (a voice
// message, with its length and waveform), "image" (PNG, JPEG, GIF or
// WebP, inline), "video" or "audio" (with a player), else "file" (a name
// to download).
func (a SentAttachment) Shown() string {
	typ, _, _ := mime.ParseMediaType(a.ContentType)
	switch {
	case a.Voice:
		return "voice"
	case typ == "image/png" || typ == "image/jpeg" || typ == "image/gif" || typ == "image/webp":
		return "image"
	case strings.HasPrefix(typ, "video/"):
		return "video"
	case strings.HasPrefix(typ, "audio/"):
		return "audio"
	}
	return "file"
}

// upload is one files[n] part of a multipart create-message request.
type upload struct {
	index       int
	filename    string
	contentType string
	data        []byte
}

// payloadAttachment is an attachments entry of payload_json: metadata for
// files[id].
type payloadAttachment struct {
	ID           json.Number `json:"id"`
	Filename     string      `json:"filename"`
	DurationSecs *float64    `json:"duration_secs"`
	Waveform     string      `json:"waveform"`
}

// readUploads reads the files[n] parts of form in n's order.
func readUploads(form *multipart.Form) ([]upload, error) {
	var out []upload
	for field, hs := range form.File {
		n, ok := strings.CutPrefix(field, "files[")
		if !ok || !strings.HasSuffix(n, "]") || len(hs) == 0 {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSuffix(n, "]"))
		if err != nil {
			continue
		}
		f, err := hs[0].Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil {
			return nil, err
		}
		ct := hs[0].Header.Get("Content-Type")
		if ct == "" || ct == "application/octet-stream" {
			if byExt := mime.TypeByExtension(path.Ext(hs[0].Filename)); byExt != "" {
				ct = byExt
			}
		}
		out = append(out, upload{index: i, filename: hs[0].Filename, contentType: ct, data: data})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].index < out[b].index })
	return out, nil
}

// checkUploads is Discord's verdict on a message's files: 413 over
// MaxUpload in all; for a voice message (flags IS_VOICE_MESSAGE), 400
// unless it is one audio file with duration_secs and a waveform.
func checkUploads(ups []upload, body messageBody) (int, apiError, bool) {
	total := 0
	for _, u := range ups {
		total += len(u.data)
	}
	if total > MaxUpload {
		return http.StatusRequestEntityTooLarge, apiError{Message: "Request entity too large", Code: codeEntityTooLarge}, false
	}
	if body.Flags&messageFlagVoice == 0 {
		return 0, apiError{}, true
	}
	if len(ups) != 1 || !strings.HasPrefix(ups[0].contentType, "audio/") {
		return http.StatusBadRequest, apiError{Message: "Voice messages must have a single audio attachment", Code: codeVoiceSingleAudio}, false
	}
	meta, ok := metaFor(body.Attachments, ups[0].index)
	if !ok || meta.DurationSecs == nil || meta.Waveform == "" {
		return http.StatusBadRequest, apiError{Message: "Voice messages must have supporting metadata", Code: codeVoiceNeedsDetails}, false
	}
	return 0, apiError{}, true
}

// metaFor is the attachments entry of payload_json for files[i].
func metaFor(atts []payloadAttachment, i int) (payloadAttachment, bool) {
	for _, a := range atts {
		if a.ID.String() == strconv.Itoa(i) {
			return a, true
		}
	}
	return payloadAttachment{}, false
}

// attachLocked stores a message's files and returns them as Discord
// shows them. Callers hold s.mu.
func (s *state) attachLocked(channelID string, ups []upload, body messageBody) []SentAttachment {
	voice := body.Flags&messageFlagVoice != 0
	out := make([]SentAttachment, 0, len(ups))
	for _, u := range ups {
		f := File{Filename: u.filename, ContentType: u.contentType, Data: u.data}
		meta, _ := metaFor(body.Attachments, u.index)
		if meta.Filename != "" {
			f.Filename = meta.Filename
		}
		if meta.DurationSecs != nil {
			f.DurationSecs = *meta.DurationSecs
		}
		f.Waveform = meta.Waveform
		raw := s.storeAttachmentLocked(channelID, f, voice)
		var w wireAttachment
		_ = json.Unmarshal(raw, &w)
		out = append(out, SentAttachment{ID: w.ID, Filename: w.Filename, ContentType: w.ContentType, Size: w.Size,
			Data: u.data, URL: w.URL, DurationSecs: f.DurationSecs, Waveform: w.Waveform, Voice: voice, raw: raw})
	}
	return out
}

// attachmentsWire is the attachments of a message the bot created.
func attachmentsWire(atts []SentAttachment) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(atts))
	for _, a := range atts {
		out = append(out, a.raw)
	}
	return out
}
