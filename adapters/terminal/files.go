package terminal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
)

// Interface guard.
var _ core.FileSender = (*Adapter)(nil)

// SendFiles saves each of msg.Files in FilesDir (the directory made, for
// the user alone) and prints where, after the caption (core.FileSender):
// a terminal shows no pictures, but the user can open the file.
func (a *Adapter) SendFiles(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("saving files for the terminal: %w", err)
	}
	if err := os.MkdirAll(a.FilesDir, 0o700); err != nil {
		return core.SendResult{}, fmt.Errorf("saving files for the terminal: %w", err)
	}
	lines := make([]string, 0, len(msg.Files))
	for _, f := range msg.Files {
		path, err := a.saveFile(f)
		if err != nil {
			return core.SendResult{}, err
		}
		lines = append(lines, fmt.Sprintf("[%s saved: %s (%s)]", f.Kind, path, core.ByteSize(int64(len(f.Data)))))
	}
	text := strings.Join(lines, "\n")
	if strings.TrimSpace(msg.Text) != "" {
		text = strings.TrimRight(msg.Text, "\n") + "\n" + text
	}
	msg.Text, msg.Files = text, nil
	return a.Send(ctx, msg)
}

// saveFile writes f to a new file in FilesDir named after it, never over
// another, and returns its path.
func (a *Adapter) saveFile(f core.OutboundFile) (string, error) {
	path := filepath.Join(a.FilesDir, a.nextID()+"-"+safeName(f.Name))
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("saving %q for the terminal: %w", f.Name, err)
	}
	if _, err := out.Write(f.Data); err != nil {
		_ = out.Close()
		return "", fmt.Errorf("saving %q for the terminal: %w", f.Name, err)
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("saving %q for the terminal: %w", f.Name, err)
	}
	return path, nil
}

// safeName is name as a file name of its own: no directory, no control
// or separator characters, at most 80 bytes; "file" when nothing is left.
func safeName(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '/' || r == '\\' || r == ':' {
			return '_'
		}
		return r
	}, filepath.Base(name))
	for len(name) > 80 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}
