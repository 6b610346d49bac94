package terminal

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleybot/parley/core"
)

// A line "/file PATH [text]" sends the file at PATH (~ for the home
// directory; a path with spaces in quotes) with the text, as a photo,
// document or audio by its type: the terminal's 📎. The file is read when
// a turn opens it (FetchAttachment), from where it lies.

// fileCommand is the line's start that attaches a file.
const fileCommand = "/file "

var _ core.AttachmentFetcher = (*Adapter)(nil)

// attachment reads a "/file" line: the file's attachment and the text that
// goes with it; ok false when the line is no such line, err when its file
// cannot be sent.
func attachment(line string) (att core.Attachment, text string, ok bool, err error) {
	rest, ok := strings.CutPrefix(line, fileCommand)
	if !ok {
		return core.Attachment{}, "", false, nil
	}
	path, text := splitPath(strings.TrimSpace(rest))
	if path == "" {
		return core.Attachment{}, "", true, fmt.Errorf("say which file: /file PATH [text]")
	}
	if strings.HasPrefix(path, "~/") {
		if home, herr := os.UserHomeDir(); herr == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return core.Attachment{}, "", true, fmt.Errorf("%s: %w", path, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return core.Attachment{}, "", true, fmt.Errorf("cannot send %s: %w", path, err)
	case !st.Mode().IsRegular():
		return core.Attachment{}, "", true, fmt.Errorf("cannot send %s: not a file", path)
	}
	typ := mime.TypeByExtension(filepath.Ext(abs))
	if typ == "" {
		typ = sniff(abs)
	}
	return core.Attachment{Kind: core.KindOf(typ), MIME: typ, Size: st.Size(), Name: filepath.Base(abs), Ref: abs}, text, true, nil
}

// splitPath takes the path off the start of s: up to the first space, or
// within quotes; the rest is the text.
func splitPath(s string) (path, text string) {
	if q := s[:min(1, len(s))]; q == `"` || q == "'" {
		if end := strings.Index(s[1:], q); end >= 0 {
			return s[1 : 1+end], strings.TrimSpace(s[2+end:])
		}
	}
	path, text, _ = strings.Cut(s, " ")
	return path, strings.TrimSpace(text)
}

// sniff is the type of the file at path by its first bytes.
func sniff(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "application/octet-stream"
	}
	defer f.Close()
	var b [512]byte
	n, _ := f.Read(b[:])
	return http.DetectContentType(b[:n])
}

// FetchAttachment reads a file sent with "/file" from where it lies; over
// max bytes it is core.ErrTooLarge.
func (a *Adapter) FetchAttachment(_ context.Context, att core.Attachment, max int64) ([]byte, error) {
	if !filepath.IsAbs(att.Ref) {
		return nil, fmt.Errorf("reading %q: not a file the terminal sent", att.Name)
	}
	st, err := os.Stat(att.Ref)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", att.Name, err)
	}
	if st.Size() > max {
		return nil, fmt.Errorf("reading %q: %d bytes, over %d: %w", att.Name, st.Size(), max, core.ErrTooLarge)
	}
	data, err := os.ReadFile(att.Ref)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", att.Name, err)
	}
	return data, nil
}
