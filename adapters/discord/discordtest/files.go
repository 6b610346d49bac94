package discordtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"image"
	_ "image/gif"  // image.DecodeConfig reads GIF sizes
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"net/http"
	"strconv"
	"strings"
)

// fileStore sends messages with files, voice messages and stickers, and
// serves their downloads as Discord's CDN does.
type fileStore struct {
	*state
	*delivery
}

// messageFlagVoice is Discord's IS_VOICE_MESSAGE message flag.
const messageFlagVoice = 1 << 13

// Sticker format types of the Discord API.
const (
	StickerPNG    = 1
	StickerAPNG   = 2
	StickerLottie = 3
	StickerGIF    = 4
)

// File is a file a user attaches to a DM (SendFiles, SendVoiceMessage).
// The fake stores Data and serves it on its own origin, at Discord's CDN
// path /attachments/<channel id>/<attachment id>/<filename>.
type File struct {
	Filename string
	// ContentType is the attachment's content_type ("" sends none, as
	// Discord does for a type it does not know).
	ContentType string
	Data        []byte
	// Width and Height are an image's size; 0 reads them from Data for a
	// PNG, JPEG or GIF image.
	Width, Height int
	// DurationSecs is a voice message's length (default 1 for
	// SendVoiceMessage).
	DurationSecs float64
	// Waveform is a voice message's waveform, base64 ("": silence).
	Waveform string
}

// Sticker is a sticker a user sends (SendSticker). The fake serves Data
// at Discord's CDN path /stickers/<id>.<png|json|gif>.
type Sticker struct {
	// ID is the sticker's id ("": a fresh one).
	ID   string
	Name string
	// FormatType is StickerPNG (the default), StickerAPNG, StickerLottie
	// or StickerGIF.
	FormatType int
	Data       []byte
}

// Download is one GET of a file the fake serves, as it arrived (failed
// ones included).
type Download struct {
	// Path is the URL path, e.g. /attachments/<channel>/<id>/<filename>.
	Path string
	// Authorization is the request's Authorization header ("" for none,
	// which is right: Discord's CDN needs no token).
	Authorization string
}

// storedFile is a file the fake serves.
type storedFile struct {
	contentType string
	data        []byte
}

type wireAttachment struct {
	ID           string   `json:"id"`
	Filename     string   `json:"filename"`
	Size         int      `json:"size"`
	URL          string   `json:"url"`
	ProxyURL     string   `json:"proxy_url"`
	ContentType  string   `json:"content_type,omitempty"`
	Width        *int     `json:"width,omitempty"`
	Height       *int     `json:"height,omitempty"`
	DurationSecs *float64 `json:"duration_secs,omitempty"`
	Waveform     string   `json:"waveform,omitempty"`
}

type wireStickerItem struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	FormatType int    `json:"format_type"`
}

// SendFiles plays from writing content (may be "") with files attached
// in their DM with the bot: MESSAGE_CREATE with an attachments entry per
// file (id, filename, size, url and proxy_url on the fake's origin with
// Discord's signature parameters ex, is and hm, content_type, and an
// image's width and height). It returns the channel and the message id.
func (s *fileStore) SendFiles(from User, content string, files ...File) (channelID, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.dmChannelLocked(from.ID)
	atts := make([]json.RawMessage, 0, len(files))
	for _, f := range files {
		atts = append(atts, s.storeAttachmentLocked(ch.id, f, false))
	}
	return ch.id, s.createInboundWithLocked(ch, from.wire(), nil, content, func(m *wireMessage) {
		m.Attachments = atts
	})
}

// SendVoiceMessage plays from recording a voice message in their DM with
// the bot, as Discord's app sends one: no content, the message flag
// IS_VOICE_MESSAGE (1<<13), and one attachment with duration_secs and a
// waveform (content type audio/ogg and filename voice-message.ogg unless
// f says otherwise). It returns the channel and the message id.
func (s *fileStore) SendVoiceMessage(from User, f File) (channelID, messageID string) {
	if f.Filename == "" {
		f.Filename = "voice-message.ogg"
	}
	if f.ContentType == "" {
		f.ContentType = "audio/ogg"
	}
	if f.DurationSecs == 0 {
		f.DurationSecs = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.dmChannelLocked(from.ID)
	att := s.storeAttachmentLocked(ch.id, f, true)
	return ch.id, s.createInboundWithLocked(ch, from.wire(), nil, "", func(m *wireMessage) {
		m.Attachments = []json.RawMessage{att}
		m.Flags |= messageFlagVoice
	})
}

// SendSticker plays from sending a sticker (with content, may be "") in
// their DM with the bot: MESSAGE_CREATE with sticker_items [{id, name,
// format_type}] (which, as on Discord, carry no emoji). The sticker's
// image is served at /stickers/<id>.<ext>. It returns the channel and the
// message id.
func (s *fileStore) SendSticker(from User, content string, st Sticker) (channelID, messageID string) {
	if st.FormatType == 0 {
		st.FormatType = StickerPNG
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[from.ID] = from
	ch := s.dmChannelLocked(from.ID)
	if st.ID == "" {
		st.ID = s.newIDLocked()
	}
	ext, contentType := "png", "image/png"
	switch st.FormatType {
	case StickerLottie:
		ext, contentType = "json", "application/json"
	case StickerGIF:
		ext, contentType = "gif", "image/gif"
	}
	s.files["/stickers/"+st.ID+"."+ext] = storedFile{contentType: contentType, data: bytes.Clone(st.Data)}
	item := wireStickerItem{ID: st.ID, Name: st.Name, FormatType: st.FormatType}
	return ch.id, s.createInboundWithLocked(ch, from.wire(), nil, content, func(m *wireMessage) {
		m.StickerItems = []wireStickerItem{item}
	})
}

// storeAttachmentLocked stores f in channelID and returns its attachment
// object. Callers hold s.mu.
func (s *state) storeAttachmentLocked(channelID string, f File, voice bool) json.RawMessage {
	id := s.newIDLocked()
	path := "/attachments/" + channelID + "/" + id + "/" + f.Filename
	s.files[path] = storedFile{contentType: f.ContentType, data: bytes.Clone(f.Data)}
	// Discord's CDN URLs are signed and expire (cdnurls.go).
	u := s.signedURLLocked(path)
	w := wireAttachment{ID: id, Filename: f.Filename, Size: len(f.Data), URL: u, ProxyURL: u, ContentType: f.ContentType}
	width, height := f.Width, f.Height
	if width == 0 && height == 0 && strings.HasPrefix(f.ContentType, "image/") {
		if c, _, err := image.DecodeConfig(bytes.NewReader(f.Data)); err == nil {
			width, height = c.Width, c.Height
		}
	}
	if width > 0 || height > 0 {
		w.Width, w.Height = &width, &height
	}
	if voice {
		d := f.DurationSecs
		w.DurationSecs = &d
		w.Waveform = f.Waveform
		if w.Waveform == "" {
			w.Waveform = "AAAAAAAAAAAA" // base64 of silence
		}
	}
	raw, _ := json.Marshal(w)
	return raw
}

// FailNextDownloads makes the next n file downloads (attachments and
// stickers, route "cdn") answer 500, then serve again. Like FailNext's,
// these faults join the route's queue; RateLimitNext("cdn", d) and
// FailNext("cdn", ...) work too.
func (s *fileStore) FailNextDownloads(n int) {
	for range n {
		s.addFault("cdn", fault{status: http.StatusInternalServerError, message: "500: Internal Server Error"})
	}
}

// Downloads returns the file downloads that arrived, in order.
func (s *fileStore) Downloads() []Download {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Download(nil), s.downloads...)
}

// serveFile serves a stored file (GET, route "cdn"); an unknown one is
// 404 like Discord's CDN.
func (s *fileStore) serveFile(w http.ResponseWriter, r *http.Request, _ string) {
	s.mu.Lock()
	f, ok := s.files[r.URL.Path]
	signed := !strings.HasPrefix(r.URL.Path, "/attachments/") || s.validURLLocked(r.URL.Query())
	s.mu.Unlock()
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	if !signed {
		// Expired, or signed by no one: what Discord's CDN says.
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
		return
	}
	if f.contentType != "" {
		w.Header().Set("Content-Type", f.contentType)
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.data)
}

// recordDownload notes a file download as it arrived.
func (s *fileStore) recordDownload(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downloads = append(s.downloads, Download{Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
	s.notify()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
