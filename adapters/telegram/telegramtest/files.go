package telegramtest

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg" // DecodeConfig reads a photo's size
	_ "image/png"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-telegram/bot/models"
)

// maxGetFileSize is the largest file getFile hands out: the Bot API
// answers "file is too big" above 20 MB.
const maxGetFileSize = 20 << 20

// downloadKey is the fault queue and call counter of file downloads; no
// Bot API method has a slash in its name.
const downloadKey = "/file"

// Media is a file a user sends in a private message, for SendPhoto,
// SendVoice, SendAudio, SendVideo, SendDocument and SendSticker. The fake
// stores Data; getFile and the file endpoint serve it.
type Media struct {
	Data []byte
	// Caption is the message's caption ("" for none; a sticker has none).
	Caption string
	// Name and MIME are file_name and mime_type, where the kind has them
	// (a document, an audio file, a video; a voice note's MIME only).
	Name, MIME string
	// Emoji is a sticker's emoji.
	Emoji string
	// Seconds is the duration of a voice note, audio file or video.
	Seconds int
	// Width and Height are a video's or sticker's size; a photo's is read
	// from Data when it is a PNG or JPEG, else 800×600.
	Width, Height int
}

// storedFile is a file the fake serves.
type storedFile struct {
	id, uniqueID, path string
	data               []byte
	// serve, when set, answers the download instead of data.
	serve http.HandlerFunc
}

// fileStore keeps the files users send and serves them (getFile and the
// file endpoint), with their own faults.
type fileStore struct {
	*state
	*faultInjector
}

// storeLocked keeps data as a new file under dir ("photos", "voice", …)
// and returns it. Callers hold s.mu.
func (s *fileStore) storeLocked(dir, ext string, data []byte) *storedFile {
	s.nextFile++
	n := strconv.Itoa(s.nextFile)
	f := &storedFile{
		id:       "fake-file-" + n,
		uniqueID: "fake-unique-" + n,
		path:     dir + "/file_" + n + ext,
		data:     bytes.Clone(data),
	}
	s.files[f.id] = f
	s.filePaths[f.path] = f
	return f
}

// sendMedia queues a private message from from with the caption and the
// fields attach sets, after storing m.Data under dir. Callers do not hold
// s.mu.
func (s *fileStore) sendMedia(from User, m Media, dir, ext string, attach func(*models.Message, *storedFile)) models.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.touchChat(privateChat(from))
	msg := s.newMessage(chat, from.model(), "")
	msg.Caption = m.Caption
	attach(&msg, s.storeLocked(dir, ext, m.Data))
	return s.enqueue(models.Update{Message: &msg})
}

// SendPhoto makes from send a photo (with m.Caption) in their private
// chat and returns the update. As Telegram does, the photo comes in two
// sizes, smallest first: a thumbnail (90 px, other bytes) and the photo
// itself, whose file holds m.Data.
func (s *fileStore) SendPhoto(from User, m Media) models.Update {
	w, h := 800, 600
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(m.Data)); err == nil {
		w, h = cfg.Width, cfg.Height
	}
	return s.sendMedia(from, m, "photos", ".jpg", func(msg *models.Message, f *storedFile) {
		thumb := s.storeLocked("thumbnails", ".jpg", []byte("fake thumbnail"))
		msg.Photo = []models.PhotoSize{
			{FileID: thumb.id, FileUniqueID: thumb.uniqueID, Width: 90, Height: 90 * h / max(w, 1), FileSize: len(thumb.data)},
			{FileID: f.id, FileUniqueID: f.uniqueID, Width: w, Height: h, FileSize: len(f.data)},
		}
	})
}

// SendVoice makes from send a voice note (mime_type m.MIME, default
// audio/ogg) and returns the update.
func (s *fileStore) SendVoice(from User, m Media) models.Update {
	mimeType := m.MIME
	if mimeType == "" {
		mimeType = "audio/ogg"
	}
	return s.sendMedia(from, m, "voice", ".oga", func(msg *models.Message, f *storedFile) {
		msg.Voice = &models.Voice{FileID: f.id, FileUniqueID: f.uniqueID, Duration: m.Seconds, MimeType: mimeType, FileSize: int64(len(f.data))}
	})
}

// SendAudio makes from send an audio file and returns the update.
func (s *fileStore) SendAudio(from User, m Media) models.Update {
	return s.sendMedia(from, m, "music", extOf(m.Name), func(msg *models.Message, f *storedFile) {
		msg.Audio = &models.Audio{FileID: f.id, FileUniqueID: f.uniqueID, Duration: m.Seconds,
			FileName: m.Name, MimeType: m.MIME, FileSize: int64(len(f.data))}
	})
}

// SendVideo makes from send a video and returns the update.
func (s *fileStore) SendVideo(from User, m Media) models.Update {
	return s.sendMedia(from, m, "videos", extOf(m.Name), func(msg *models.Message, f *storedFile) {
		msg.Video = &models.Video{FileID: f.id, FileUniqueID: f.uniqueID, Width: m.Width, Height: m.Height,
			Duration: m.Seconds, FileName: m.Name, MimeType: m.MIME, FileSize: int64(len(f.data))}
	})
}

// SendDocument makes from send a file as a document and returns the
// update.
func (s *fileStore) SendDocument(from User, m Media) models.Update {
	return s.sendMedia(from, m, "documents", extOf(m.Name), func(msg *models.Message, f *storedFile) {
		msg.Document = &models.Document{FileID: f.id, FileUniqueID: f.uniqueID,
			FileName: m.Name, MimeType: m.MIME, FileSize: int64(len(f.data))}
	})
}

// SendSticker makes from send a static (WebP) sticker with m.Emoji and
// returns the update; a sticker has no caption, so m.Caption is ignored.
func (s *fileStore) SendSticker(from User, m Media) models.Update {
	m.Caption = ""
	w, h := m.Width, m.Height
	if w == 0 || h == 0 {
		w, h = 512, 512
	}
	return s.sendMedia(from, m, "stickers", ".webp", func(msg *models.Message, f *storedFile) {
		msg.Sticker = &models.Sticker{FileID: f.id, FileUniqueID: f.uniqueID, Type: "regular",
			Width: w, Height: h, Emoji: m.Emoji, FileSize: len(f.data)}
	})
}

// extOf is the extension of a file name, "" when it has none.
func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !strings.ContainsRune(name[i:], '/') {
		return name[i:]
	}
	return ""
}

// ServeFileWith makes the download of fileID answer with h instead of the
// stored bytes (after the token check and the download faults), for tests
// of a file server that misbehaves: a Content-Length over the size
// getFile gave, a body longer than it, a stall. getFile still reports the
// stored size.
func (s *fileStore) ServeFileWith(fileID string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[fileID]; ok {
		f.serve = h
	}
}

// FailNextDownload makes the next download from the file endpoint fail
// with f (ServerError() for a 500). Download faults form a queue, as
// FailNext's do: call it n times to fail n downloads in a row. getFile is
// an ordinary method: FailNext("getFile", …) fails it.
func (s *fileStore) FailNextDownload(f Fault) { s.FailAfter(downloadKey, 0, f) }

// FailDownloadAfter lets n downloads succeed, then fails one with f.
func (s *fileStore) FailDownloadAfter(n int, f Fault) { s.FailAfter(downloadKey, n, f) }

// Downloads returns how many requests the file endpoint got (failed ones
// and ones with a wrong token included).
func (s *fileStore) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[downloadKey]
}

// getFile answers like Telegram: the file's id, unique id, size and the
// path to download it from; 400 for an unknown file_id or a file over
// 20 MB.
func (s *fileStore) getFile(_ context.Context, p params) (any, *Fault) {
	s.mu.Lock()
	f, ok := s.files[p["file_id"]]
	s.mu.Unlock()
	switch {
	case !ok:
		fault := badRequest("invalid file_id")
		return nil, &fault
	case len(f.data) > maxGetFileSize:
		fault := badRequest("file is too big")
		return nil, &fault
	}
	return models.File{FileID: f.id, FileUniqueID: f.uniqueID, FileSize: int64(len(f.data)), FilePath: f.path}, nil
}

// serveFile answers GET /file/bot<token>/<file_path>: 401 for a wrong
// token, a queued download fault, 404 for an unknown path, else the bytes
// with their Content-Length.
func (s *fileStore) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	s.mu.Lock()
	s.calls[downloadKey]++
	revoked := s.revoked
	s.notify()
	s.mu.Unlock()

	token, path, ok := strings.Cut(rest, "/")
	switch {
	case !ok || token != s.token || revoked:
		writeFault(w, Fault{Code: http.StatusUnauthorized, Description: "Unauthorized"})
		return
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		writeFault(w, Fault{Code: http.StatusMethodNotAllowed, Description: "Method Not Allowed"})
		return
	}
	if f := s.takeFault(downloadKey); f != nil {
		writeFault(w, *f)
		return
	}
	s.mu.Lock()
	f, ok := s.filePaths[path]
	var data []byte
	var serve http.HandlerFunc
	if ok {
		data, serve = f.data, f.serve
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeFault(w, notFound())
		return
	case serve != nil:
		serve(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	if r.Method == http.MethodGet {
		_, _ = w.Write(data)
	}
}
