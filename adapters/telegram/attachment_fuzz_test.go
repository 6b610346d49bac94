package telegram

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
)

// fileFields are the fields of a Telegram message that carry a file, in
// the order FuzzUpdateFiles's kind picks them.
var fileFields = []string{"photo", "voice", "audio", "video", "video_note", "animation", "document", "sticker"}

// wireFiles is the part of an update the oracle reads to know which
// file_ids its message carries.
type wireFiles struct {
	Message *struct {
		Photo []struct {
			FileID string `json:"file_id"`
		} `json:"photo"`
		Voice     *wireFile `json:"voice"`
		Audio     *wireFile `json:"audio"`
		Video     *wireFile `json:"video"`
		VideoNote *wireFile `json:"video_note"`
		Animation *wireFile `json:"animation"`
		Document  *wireFile `json:"document"`
		Sticker   *wireFile `json:"sticker"`
	} `json:"message"`
}

// wireFile is a file of a message, as the oracle reads it.
type wireFile struct {
	FileID string `json:"file_id"`
}

// fileIDs are the file_ids the update's message carries.
func (w wireFiles) fileIDs() []string {
	m := w.Message
	if m == nil {
		return nil
	}
	var ids []string
	for _, p := range m.Photo {
		ids = append(ids, p.FileID)
	}
	for _, f := range []*wireFile{m.Voice, m.Audio, m.Video, m.VideoNote, m.Animation, m.Document, m.Sticker} {
		if f != nil {
			ids = append(ids, f.FileID)
		}
	}
	return ids
}

// FuzzUpdateFiles checks the Telegram adapter's inbound decoding of
// messages with files (photos, voice notes, audio, videos, video notes,
// animations, documents, stickers), through the webhook and through the
// polling path's decoding (decodeRaw and normalise, without the panic
// guard of handleUpdate, so a panic fails the target). On body as it comes:
// no panic, a 200 or a 4xx, at most one message, and a message that
// reaches the core is a DM with a thread, at most one well-formed
// attachment whose Ref is one of the update's file_ids, and neither the
// bot token nor the webhook secret in it. On a private message made of
// the other arguments, carrying the file of field kind (with a smaller
// photo size first, as Telegram sends): taken exactly when it has a
// file_id or a caption, and its attachment is the file as described,
// with no negative size, length or dimension.
func FuzzUpdateFiles(f *testing.F) {
	for _, body := range []string{
		`{"update_id":1,"message":{"message_id":1,"date":1700000000,"chat":{"id":7,"type":"private"},"from":{"id":7,"first_name":"Ada"},"photo":[{"file_id":"AgACs","file_unique_id":"u1","width":90,"height":67,"file_size":1200},{"file_id":"AgACl","file_unique_id":"u2","width":1280,"height":960,"file_size":120000}],"caption":"my cat"}}`,
		`{"update_id":2,"message":{"message_id":2,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"voice":{"file_id":"AwACv","file_unique_id":"u","duration":3,"mime_type":"audio/ogg","file_size":8000}}}`,
		`{"update_id":3,"message":{"message_id":3,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"document":{"file_id":"BQACd","file_unique_id":"u","file_name":"report.pdf","mime_type":"application/pdf","file_size":-1}}}`,
		`{"update_id":4,"message":{"message_id":4,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"sticker":{"file_id":"CAACs","file_unique_id":"u","type":"regular","width":512,"height":512,"is_animated":true,"is_video":false,"emoji":"👍","file_size":3000}}}`,
		`{"update_id":5,"message":{"message_id":5,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"animation":{"file_id":"CgACa","file_unique_id":"u","width":320,"height":240,"duration":2,"mime_type":"video/mp4"},"document":{"file_id":"CgACa","file_unique_id":"u","mime_type":"video/mp4"}}}`,
		`{"update_id":6,"message":{"message_id":6,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"video_note":{"file_id":"DQACn","file_unique_id":"u","length":240,"duration":-5,"file_size":90000}}}`,
		`{"update_id":7,"message":{"message_id":7,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"photo":[{"file_id":"","width":90,"height":67}]}}`,
		`{"update_id":8,"message":{"message_id":8,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"audio":{"file_id":"CQACa","file_unique_id":"u","duration":200,"performer":"x","title":"y","file_name":"song.mp3","mime_type":"audio/mpeg","file_size":4000000}}}`,
		`{"update_id":9,"message":{"message_id":9,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"video":{"file_id":"BAACv","file_unique_id":"u","width":-1,"height":1e3,"duration":9,"file_size":30000000}}}`,
		`{"update_id":10,"message":{"message_id":10,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"photo":null,"voice":null,"sticker":{"file_id":""}}}`,
		`{"update_id":11,"message":{"message_id":11,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"photo":[{"file_id":"a","file_size":99999999999},{"file_id":"b","file_size":99999999999}]}}`,
		`{"update_id":12,"message":{"message_id":12,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"document":{"file_id":"https://api.telegram.org/file/bot123:SECRET/documents/file_0.pdf"}}}`,
		`{"update_id":13,"message":{"message_id":13,"date":1,"chat":{"id":-7,"type":"group"},"from":{"id":7},"photo":[{"file_id":"x"}]}}`,
	} {
		f.Add([]byte(body), uint8(0), "AgACAgIAAxkBAAIB", int64(51234), 3, 1280, 960, "image/jpeg", "cat.jpg", "🐱", "a caption")
	}
	f.Add([]byte(`{}`), uint8(1), "AwAC", int64(-1), -3, 0, 0, "", "", "", "")
	f.Add([]byte(`{}`), uint8(7), "CAAC", int64(0), 0, -512, 512, "\xff", "\x00", "🙂\xfe", " ")
	f.Add([]byte(`{}`), uint8(0), "AgAC", int64(maxBotAPIFile+1), 0, 1, 1, "", "", "", "")
	f.Add([]byte(`{}`), uint8(6), "", int64(10), 0, 0, 0, "text/plain", "a.txt", "", "\t\n")

	h := newFuzzHost(f)
	a, srv, box, mux := h.a, h.srv, h.box, h.mux
	post := func(body []byte) (int, []core.InboundMessage) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", webhookSecret)
		mux.ServeHTTP(rec, req)
		return rec.Code, box.Take()
	}
	secrets := []string{srv.Token(), webhookSecret}
	check := func(t *testing.T, body []byte, msg core.InboundMessage) {
		t.Helper()
		if err := adaptertest.CheckInbound(msg, Platform, 1, body, secrets...); err != nil {
			t.Fatalf("%q reached the core as %+v: %v", body, msg, err)
		}
		var w wireFiles
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatalf("%q reached the core, but does not decode: %v", body, err)
		}
		for _, att := range msg.Attachments {
			if !slices.Contains(w.fileIDs(), att.Ref) {
				t.Fatalf("%q: Ref %q is none of the update's file_ids %q", body, att.Ref, w.fileIDs())
			}
		}
	}

	f.Fuzz(func(t *testing.T, body []byte, kind uint8, fileID string, size int64, secs, width, height int,
		mime, name, emoji, caption string) {
		// The polling path: each update of a batch is decoded on its own.
		if u := a.decodeRaw(body); u.upd != nil {
			if msg, ok := a.normalise(u.upd); ok {
				check(t, body, msg)
			}
		}
		status, got := post(body)
		if status != http.StatusOK && (status < 400 || status >= 500) || len(got) > 1 {
			t.Fatalf("%q: %d, and the core got %+v", body, status, got)
		}
		for _, msg := range got {
			check(t, body, msg)
		}

		field := fileFields[int(kind)%len(fileFields)]
		file := map[string]any{"file_id": fileID, "file_unique_id": "u", "file_size": size, "duration": secs,
			"width": width, "height": height, "length": width, "mime_type": mime, "file_name": name, "emoji": emoji,
			"is_animated": kind&0x10 != 0, "is_video": kind&0x20 != 0}
		message := map[string]any{"message_id": 1, "date": 1700000000, "chat": map[string]any{"id": 7, "type": "private"},
			"from": map[string]any{"id": 7, "first_name": "Ada"}, "caption": caption}
		small := ""
		if fileID != "" {
			small = "s" + fileID
		}
		switch field {
		case "photo":
			message["photo"] = []any{map[string]any{"file_id": small, "width": 90, "height": 90, "file_size": 1}, file}
		case "animation":
			message["animation"], message["document"] = file, file // as Telegram sends one
		default:
			message[field] = file
		}
		made, err := json.Marshal(map[string]any{"update_id": 1, "message": message})
		if err != nil {
			t.Fatal(err)
		}
		status, got = post(made)
		if status != http.StatusOK || len(got) > 1 {
			t.Fatalf("%s: %d, and the core got %+v", made, status, got)
		}
		// The strings as JSON carries them (valid UTF-8).
		fileID, mime, name, emoji, caption = asJSON(fileID), asJSON(mime), asJSON(name), asJSON(emoji), asJSON(caption)
		want := fileID != "" || strings.TrimSpace(caption) != ""
		if want != (len(got) == 1) {
			t.Fatalf("%s: want taken %t, the core got %+v", made, want, got)
		}
		if !want {
			return
		}
		msg := got[0]
		check(t, made, msg)
		if msg.Text != caption {
			t.Fatalf("%s: caption %q became text %q", made, caption, msg.Text)
		}
		if fileID == "" {
			if len(msg.Attachments) != 0 {
				t.Fatalf("%s: a file without a file_id became %+v", made, msg.Attachments)
			}
			return
		}
		if len(msg.Attachments) != 1 {
			t.Fatalf("%s: the %s became %+v", made, field, msg.Attachments)
		}
		checkMadeFile(t, made, field, kind, msg.Attachments[0], fileID, size, mime, name, emoji)
	})
}

// checkMadeFile checks the attachment made of a file of field, described
// by the other arguments, against what the adapter documents.
func checkMadeFile(t *testing.T, made []byte, field string, kind uint8, got core.Attachment,
	fileID string, size int64, mime, name, emoji string) {
	t.Helper()
	want := map[string]core.AttachmentKind{"photo": core.AttachImage, "voice": core.AttachVoice, "audio": core.AttachAudio,
		"video": core.AttachVideo, "video_note": core.AttachVideo, "animation": core.AttachVideo,
		"document": core.AttachDocument, "sticker": core.AttachSticker}[field]
	ref, wantSize := fileID, max(size, 0)
	if field == "photo" && size > maxBotAPIFile {
		// Too large for the Bot API: the smaller size is taken.
		ref, wantSize = "s"+fileID, 1
	}
	var wantMIME string
	switch field {
	case "photo":
		wantMIME = "image/jpeg"
	case "voice":
		wantMIME = mime
		if wantMIME == "" {
			wantMIME = "audio/ogg"
		}
	case "video_note":
		wantMIME = "video/mp4"
	case "sticker":
		wantMIME = "image/webp"
		if kind&0x10 != 0 {
			wantMIME = "application/x-tgsticker"
		} else if kind&0x20 != 0 {
			wantMIME = "video/webm"
		}
	default:
		wantMIME = mime
	}
	wantName := ""
	if slices.Contains([]string{"audio", "video", "animation", "document"}, field) {
		wantName = name
	}
	wantEmoji := ""
	if field == "sticker" {
		wantEmoji = emoji
	}
	if got.Kind != want || got.Ref != ref || got.Size != wantSize || got.MIME != wantMIME || got.Name != wantName ||
		got.Emoji != wantEmoji {
		t.Fatalf("%s: the %s became %+v; want kind %s, ref %q, size %d, MIME %q, name %q, emoji %q",
			made, field, got, want, ref, wantSize, wantMIME, wantName, wantEmoji)
	}
}

// asJSON is s as a JSON string carries it: invalid UTF-8 replaced.
func asJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}
