package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/parleybot/parley/core"

	"github.com/parleybot/parley/core/media"
)

// messageTextSetter is the store's way to keep a transcript as its voice
// note's text (*store.Store).
type messageTextSetter interface {
	SetMessageText(ctx context.Context, m core.Message) error
}

// userMedia is what a user message with attachments shows the model: its
// text with the files described or read, and its images.
type userMedia struct {
	text   string
	images []string // data: URLs
}

// mediaCache keeps what opening a file produced (an image's data URL, a
// document's text), so the later turns of a session do not fetch and
// decode it again. Bounded by bytes; the oldest go first.
type mediaCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order []string
	items map[string]string
}

func newMediaCache(maxBytes int) *mediaCache {
	return &mediaCache{max: maxBytes, items: map[string]string{}}
}

func (c *mediaCache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.items[key]
	return v, ok
}

func (c *mediaCache) put(key, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok || len(v) > c.max {
		return
	}
	c.items[key] = v
	c.order = append(c.order, key)
	c.size += len(v)
	for c.size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.items[old])
		delete(c.items, old)
	}
}

// openFiles opens the files of the user messages in history, newest first
// and at most MaxPerTurn, and says what each holds for the model. A voice
// note's transcript is stored as its message's text, once. It returns
// what to show for each message id with files; nothing fails the turn:
// what cannot be opened is described.
func (p *prompter) openFiles(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) map[int64]userMedia {
	var withFiles []int
	for i, m := range t.History {
		if m.Role == core.RoleUser && m.Metadata["attachments"] != nil {
			withFiles = append(withFiles, i)
		}
	}
	if len(withFiles) == 0 {
		return nil
	}
	fetcher, _ := a.(core.AttachmentFetcher)
	budget := p.cfg.Media.MaxPerTurn
	out := make(map[int64]userMedia, len(withFiles))
	var mu sync.Mutex
	var wg sync.WaitGroup
	// Two files at a time: decoding a photo takes a core for a while.
	sem := make(chan struct{}, 2)
	for k := len(withFiles) - 1; k >= 0; k-- {
		m := t.History[withFiles[k]]
		files := core.AttachmentsOf(m)
		opened := make([]bool, len(files))
		for i := range files {
			if budget > 0 && files[i].Kind != core.AttachSticker {
				opened[i] = true
				budget--
			}
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			um := p.describeMessage(ctx, log, t, fetcher, m, files, opened)
			mu.Lock()
			out[m.ID] = um
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// describeMessage is one message's text with its files described, read or
// transcribed, and its images.
func (p *prompter) describeMessage(ctx context.Context, log *slog.Logger, t *core.Turn, f core.AttachmentFetcher, m core.Message, files []core.Attachment, opened []bool) userMedia {
	var um userMedia
	var parts []string
	if c := strings.TrimSpace(m.Content); c != "" {
		if m.Metadata["spoken"] == true {
			c = "(said in a voice note) " + c
		}
		parts = append(parts, c)
	}
	for i, a := range files {
		note, image := p.openFile(ctx, log, t, f, m, a, opened[i])
		if note != "" {
			parts = append(parts, note)
		}
		if image != "" {
			um.images = append(um.images, image)
		}
	}
	um.text = strings.Join(parts, "\n\n")
	return um
}

// openFile says what one file holds for the model, and its image as a
// data URL when it is one the model sees.
func (p *prompter) openFile(ctx context.Context, log *slog.Logger, t *core.Turn, f core.AttachmentFetcher, m core.Message, a core.Attachment, open bool) (note, image string) {
	cfg := p.cfg.Media
	what := describe(a)
	if note, unopened := unopenable(cfg, f, m, a, what, open); unopened {
		return note, ""
	}
	key := string(a.Kind) + "\x00" + a.Ref
	if v, ok := p.media.get(key); ok {
		if a.Kind == core.AttachImage {
			return "[The user sent " + what + ": it is shown to you.]", v
		}
		return v, ""
	}
	// A file that could not be opened is not tried again by every later
	// turn of the session: each try would cost the platform's retries.
	failKey := "failed\x00" + key
	if v, ok := p.media.get(failKey); ok {
		return v, ""
	}
	failed := func(note string) (string, string) {
		p.media.put(failKey, note)
		return note, ""
	}
	data, err := f.FetchAttachment(ctx, a, cfg.MaxBytes)
	switch {
	case errors.Is(err, core.ErrTooLarge):
		return failed(fmt.Sprintf("[The user sent %s, too large to open (the limit is %s).]", what, core.ByteSize(cfg.MaxBytes)))
	case err != nil:
		log.Warn("could not download a file the user sent", "kind", a.Kind, "err", err)
		return failed("[The user sent " + what + ", but it could not be downloaded. Tell them, and ask them to try again.]")
	}
	switch a.Kind {
	case core.AttachImage:
		pic, err := media.Image(data, cfg.MaxImagePx)
		if err != nil {
			log.Info("a file the user sent as an image is not one", "err", err)
			return failed("[The user sent " + what + ", but it is not an image that can be opened (" + err.Error() + ").]")
		}
		url := pic.DataURL()
		p.media.put(key, url)
		return "[The user sent " + what + ": it is shown to you.]", url
	case core.AttachVoice, core.AttachAudio:
		note, ok := p.transcribe(ctx, log, m, a, data)
		if !ok {
			return failed(note)
		}
		return note, ""
	}
	note, err = documentNote(cfg, a, data)
	if err != nil {
		return failed("[The user sent " + what + "; its contents cannot be read here (" + err.Error() + ").]")
	}
	p.media.put(key, note)
	return note, ""
}

// unopenable is the note for a file a turn does not open, and whether it
// is one: a sticker or a video, what the model cannot see or hear here,
// one not among the newest few, one too large, one the platform cannot
// fetch.
func unopenable(cfg core.MediaConfig, f core.AttachmentFetcher, m core.Message, a core.Attachment, what string, open bool) (string, bool) {
	switch {
	case a.Kind == core.AttachSticker:
		if a.Emoji != "" {
			return "[The user sent a sticker: " + a.Emoji + "]", true
		}
		return "[The user sent a sticker" + named(a) + ".]", true
	case a.Kind == core.AttachVideo:
		return "[The user sent " + what + ". You cannot watch videos: say so if it matters.]", true
	case a.Kind == core.AttachImage && !cfg.Vision:
		return "[The user sent " + what + ", which you cannot see: images are not shown to you here. Say so if it matters.]", true
	case (a.Kind == core.AttachVoice || a.Kind == core.AttachAudio) && m.Metadata["spoken"] == true:
		return "", true // its transcript is the message's text
	case (a.Kind == core.AttachVoice || a.Kind == core.AttachAudio) && cfg.Transcriber == nil:
		return "[The user sent " + what + ". You cannot listen to it: voice transcription is off.]", true
	case !open:
		return "[The user sent " + what + "; it was not opened: a turn opens only the newest few files.]", true
	case a.Size > cfg.MaxBytes:
		return fmt.Sprintf("[The user sent %s, too large to open (the limit is %s).]", what, core.ByteSize(cfg.MaxBytes)), true
	case f == nil:
		return "[The user sent " + what + ", which cannot be opened on this platform.]", true
	}
	return "", false
}

// documentNote is a document's text as the model reads it, cut to
// media.max_document_chars.
func documentNote(cfg core.MediaConfig, a core.Attachment, data []byte) (string, error) {
	text, cut, err := media.DocumentText(a.Name, a.MIME, data, cfg.MaxDocumentChars)
	if err != nil {
		return "", err
	}
	name := a.Name
	if name == "" {
		name = "the file"
	}
	note := fmt.Sprintf("[The user sent the file %s. Its text follows.]\n%s\n[End of %s", name, text, name)
	if cut {
		note += fmt.Sprintf(", cut to its first %d characters", cfg.MaxDocumentChars)
	}
	return note + ".]", nil
}

// transcribe turns a voice note into text and keeps it as the message's
// text, marked as spoken, so later turns and the console have it. ok is
// false when it could not be transcribed.
func (p *prompter) transcribe(ctx context.Context, log *slog.Logger, m core.Message, a core.Attachment, data []byte) (note string, ok bool) {
	name := a.Name
	if name == "" {
		name = "voice" + audioExt(a.MIME)
	}
	text, err := p.cfg.Media.Transcriber.Transcribe(ctx, name, data)
	if err != nil {
		log.Warn("could not transcribe a voice note", "err", err)
		return "[The user sent " + describe(a) + ", but it could not be transcribed. Tell them you could not listen to it.]", false
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return "[The user sent " + describe(a) + " with no words in it.]", false
	}
	if setter, ok := p.cfg.Store.(messageTextSetter); ok {
		kept := m
		kept.Content = strings.TrimSpace(strings.TrimSpace(m.Content) + "\n\n" + text)
		kept.Metadata = make(map[string]any, len(m.Metadata)+1)
		for k, v := range m.Metadata {
			kept.Metadata[k] = v
		}
		kept.Metadata["spoken"] = true
		if err := setter.SetMessageText(ctx, kept); err != nil {
			log.Warn("could not keep a voice note's transcript", "err", err)
		} else {
			p.cfg.History.Replaced(m.ConversationID, kept)
		}
	}
	return "(said in a voice note) " + text, true
}

// describe names a file for the model: "an image (cat.png, image/png,
// 1.2 MB)".
func describe(a core.Attachment) string {
	article := map[core.AttachmentKind]string{
		core.AttachImage: "an image", core.AttachVoice: "a voice note", core.AttachAudio: "an audio file",
		core.AttachVideo: "a video", core.AttachDocument: "a file", core.AttachSticker: "a sticker",
	}[a.Kind]
	if article == "" {
		article = "a file"
	}
	if d := a.Details(); d != "" {
		return article + " (" + d + ")"
	}
	return article
}

func named(a core.Attachment) string {
	if a.Name == "" {
		return ""
	}
	return " (" + a.Name + ")"
}

// audioExt is the file extension a transcription server infers the format
// from, for a voice note the platform gave no name.
func audioExt(mime string) string {
	switch {
	case strings.Contains(mime, "mpeg"), strings.Contains(mime, "mp3"):
		return ".mp3"
	case strings.Contains(mime, "mp4"), strings.Contains(mime, "m4a"), strings.Contains(mime, "aac"):
		return ".m4a"
	case strings.Contains(mime, "wav"):
		return ".wav"
	case strings.Contains(mime, "webm"):
		return ".webm"
	}
	return ".ogg"
}
