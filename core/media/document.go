package media

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// ErrNoText is returned by DocumentText for a file it cannot read as text
// (a binary file, a spreadsheet, a PDF of scanned pages).
var ErrNoText = errors.New("no text to read in this file")

// textExtensions are files read as text whatever their MIME type says
// (platforms send application/octet-stream for most of them).
var textExtensions = map[string]bool{
	".txt": true, ".md": true, ".markdown": true, ".csv": true, ".tsv": true, ".json": true, ".jsonl": true,
	".xml": true, ".yaml": true, ".yml": true, ".toml": true, ".ini": true, ".cfg": true, ".conf": true, ".log": true,
	".html": true, ".htm": true, ".css": true, ".sql": true, ".sh": true, ".go": true, ".py": true, ".js": true,
	".ts": true, ".tsx": true, ".jsx": true, ".java": true, ".kt": true, ".c": true, ".h": true, ".cpp": true,
	".hpp": true, ".cs": true, ".rb": true, ".rs": true, ".php": true, ".swift": true, ".lua": true, ".r": true,
	".tex": true, ".srt": true, ".vtt": true,
}

// DocumentText reads a document's text: text-like files (by extension,
// MIME type or content) as they are, PDFs through their text layer. The
// text is cut to maxChars characters; cut reports that it was. A file with
// no text to read is ErrNoText.
func DocumentText(name, mime string, data []byte, maxChars int) (text string, cut bool, err error) {
	switch {
	case isPDF(name, mime, data):
		text, err = pdfText(data)
		if err != nil {
			return "", false, err
		}
	case isText(name, mime, data):
		text = strings.ToValidUTF8(string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))), "\uFFFD")
	default:
		return "", false, ErrNoText
	}
	text = strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
	if text == "" {
		return "", false, ErrNoText
	}
	if maxChars > 0 && utf8.RuneCountInString(text) > maxChars {
		text, cut = string([]rune(text)[:maxChars]), true
	}
	return text, cut, nil
}

func isPDF(name, mime string, data []byte) bool {
	return bytes.HasPrefix(data, []byte("%PDF-")) ||
		(mime == "application/pdf" || strings.EqualFold(path.Ext(name), ".pdf")) && bytes.Contains(data[:min(len(data), 1024)], []byte("%PDF-"))
}

// isText reports whether data is text: its name or type says so and its
// bytes agree (no NUL, mostly valid UTF-8), or the bytes alone are
// clearly text.
func isText(name, mime string, data []byte) bool {
	head := data[:min(len(data), 8192)]
	if bytes.IndexByte(head, 0) >= 0 {
		return false // whatever it claims, it is binary
	}
	valid := utf8.Valid(head) || utf8.Valid(head[:max(0, len(head)-3)])
	if !valid {
		return false
	}
	mime = strings.ToLower(strings.TrimSpace(strings.Split(mime, ";")[0]))
	switch {
	case strings.HasPrefix(mime, "text/"), mime == "application/json", mime == "application/xml",
		mime == "application/x-yaml", mime == "application/yaml", mime == "application/javascript":
		return true
	case textExtensions[strings.ToLower(path.Ext(name))]:
		return true
	}
	return strings.HasPrefix(http.DetectContentType(head), "text/plain")
}

// pdfText is the text layer of a PDF, page by page.
func pdfText(data []byte) (text string, err error) {
	defer func() {
		// The PDF reader panics on some malformed files; a user's file
		// must never take the bot down.
		if p := recover(); p != nil {
			text, err = "", fmt.Errorf("reading PDF: malformed file (%v)", p)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("reading PDF: %w", err)
	}
	var b strings.Builder
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return "", fmt.Errorf("reading PDF page %d: %w", i, err)
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(strings.TrimSpace(t))
	}
	return b.String(), nil
}
