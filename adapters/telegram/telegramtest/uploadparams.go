package telegramtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strconv"
)

// uploadPrefix marks the params that hold an uploaded file: a NUL cannot
// start a form field Telegram knows, so they never clash.
const uploadPrefix = "\x00upload:"

// upload is a file sent in a multipart body: its bytes, or with
// WithUploadDigests its first headBytes (digest set).
type upload struct {
	Name, MIME string
	Data       []byte
	Size       int
	SHA256     string
	digest     bool
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
	sum := sha256.Sum256(data)
	p[uploadPrefix+k+":size"], p[uploadPrefix+k+":sha256"] = strconv.Itoa(len(data)), hex.EncodeToString(sum[:])
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
	size, _ := strconv.Atoi(p[uploadPrefix+k+":size"])
	_, digest := p[uploadPrefix+k+":digest"]
	return upload{Name: p[uploadPrefix+k+":name"], MIME: p[uploadPrefix+k+":type"], Data: []byte(data),
		Size: size, SHA256: p[uploadPrefix+k+":sha256"], digest: digest}, true
}

// headBytes is how much of an upload WithUploadDigests keeps: enough to
// sniff its type and read a picture's size.
const headBytes = 64 << 10

// readDigested reads a multipart body as it streams, keeping of each file
// only its head, size and SHA-256 (WithUploadDigests): the fake then
// holds no copy of what the bot sends, so a benchmark measures the bot.
func readDigested(r *http.Request) (params, error) {
	p := params{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("reading multipart form: %w", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading multipart form: %w", err)
		}
		k := part.FormName()
		if part.FileName() == "" {
			v, err := io.ReadAll(io.LimitReader(part, 1<<20))
			if err != nil {
				return nil, fmt.Errorf("reading field %s: %w", k, err)
			}
			p[k] = string(v)
			continue
		}
		h := sha256.New()
		head := &capped{max: headBytes}
		n, err := io.Copy(io.MultiWriter(h, head), io.LimitReader(part, maxBody+1))
		if err != nil {
			return nil, fmt.Errorf("reading upload %s: %w", k, err)
		}
		if n > maxBody {
			return nil, errTooLarge
		}
		p[k] = "attach://" + k
		p[uploadPrefix+k] = string(head.b)
		p[uploadPrefix+k+":size"], p[uploadPrefix+k+":sha256"] = strconv.FormatInt(n, 10), hex.EncodeToString(h.Sum(nil))
		p[uploadPrefix+k+":name"], p[uploadPrefix+k+":digest"] = part.FileName(), ""
		p[uploadPrefix+k+":type"] = detectMIME(part.FileName(), part.Header.Get("Content-Type"), head.b)
	}
}

// capped keeps the first max bytes written to it.
type capped struct {
	b   []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
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
