package telegramtest

import (
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path/filepath"
)

// uploadPrefix marks the params that hold an uploaded file: a NUL cannot
// start a form field Telegram knows, so they never clash.
const uploadPrefix = "\x00upload:"

// upload is a file sent in a multipart body.
type upload struct {
	Name, MIME string
	Data       []byte
}

// keepUpload stores the file of form field k in p, with its name and the
// MIME type Telegram would give it.
func (p params) keepUpload(k string, fh *multipart.FileHeader) error {
	f, err := fh.Open()
	if err != nil {
		return fmt.Errorf("opening upload %s: %w", k, err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("reading upload %s: %w", k, err)
	}
	p[uploadPrefix+k] = string(data)
	p[uploadPrefix+k+":name"] = fh.Filename
	p[uploadPrefix+k+":type"] = detectMIME(fh.Filename, fh.Header.Get("Content-Type"), data)
	return nil
}

// upload returns the file uploaded as form field k.
func (p params) upload(k string) (upload, bool) {
	data, ok := p[uploadPrefix+k]
	if !ok {
		return upload{}, false
	}
	return upload{Name: p[uploadPrefix+k+":name"], MIME: p[uploadPrefix+k+":type"], Data: []byte(data)}, true
}

// detectMIME is a file's type as Telegram reports it: the part's own
// Content-Type when it says more than application/octet-stream (what
// go-telegram/bot sends for every file), else by the name's extension,
// else by the bytes.
func detectMIME(name, partType string, data []byte) string {
	if partType != "" && partType != "application/octet-stream" {
		return partType
	}
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		t, _, _ = mime.ParseMediaType(t)
		return t
	}
	t, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	return t
}
