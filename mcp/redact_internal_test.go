package mcp

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	r := newRedactor(Server{
		URL:     "https://user:hunter22@mcp.example/x?key=qwerty123&v=1",
		Headers: map[string]string{"Authorization": "Bearer abcdef", "X-Short": "ab"},
		Env:     map[string]string{"TOKEN": "tok-123456"},
	})
	got := r.text(`Post "https://user:hunter22@mcp.example/x?key=qwerty123&v=1": refused; token tok-123456; auth Bearer abcdef; ab; exit status 1`)
	require.Equal(t, `Post "https://mcp.example/x": refused; token [redacted]; auth [redacted]; ab; exit status 1`, got)
	require.Equal(t, "password [redacted], key [redacted]", r.text("password hunter22, key qwerty123"))

	long := strings.Repeat("word ", 100)
	reason := r.reason("line one\nline two " + long)
	require.NotContains(t, reason, "\n")
	require.Equal(t, maxReason, len([]rune(reason)))
}

func TestRedactHandler(t *testing.T) {
	t.Parallel()
	logs := newLogRecorder()
	r := newRedactor(Server{Env: map[string]string{"TOKEN": "tok-123456"}})
	log := slog.New(redactHandler{Handler: logs, r: r}).With("with", "tok-123456")
	log.Warn("saw tok-123456", "error", errors.New("bad tok-123456"), slog.Group("g", "k", "tok-123456"), "n", 3)
	lines := logs.all()
	require.Len(t, lines, 1)
	require.NotContains(t, lines[0], "tok-123456")
	require.Contains(t, lines[0], "saw [redacted]")
	require.Contains(t, lines[0], "error=bad [redacted]")
	require.Contains(t, lines[0], "n=3")
}
