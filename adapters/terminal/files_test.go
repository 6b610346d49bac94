package terminal

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// Files are saved in files_dir, the user's alone, each under a name of
// its own, and the terminal prints the caption and where they are.
func TestSendFilesSavesThemAndPrintsWhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.adapter.FilesDir = filepath.Join(t.TempDir(), "files")
	res, err := b.adapter.SendFiles(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Text: "Here is Miso.",
		Files: []core.OutboundFile{
			{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: []byte("\x89PNG fake")},
			{Kind: core.AttachDocument, Name: "../../etc/passwd\n", MIME: "text/plain", Data: []byte("notes")},
		}})
	require.NoError(t, err)
	require.Len(t, res.PlatformMessageIDs, 1)
	shown := b.out.String()
	require.Contains(t, shown, "Subaru: Here is Miso.\n[image saved: ")
	paths := regexp.MustCompile(`saved: (\S+) \(`).FindAllStringSubmatch(shown, -1)
	require.Len(t, paths, 2, shown)
	data, err := os.ReadFile(paths[0][1])
	require.NoError(t, err)
	require.Equal(t, "\x89PNG fake", string(data))
	require.True(t, strings.HasSuffix(paths[0][1], "-miso.png"))
	second := paths[1][1]
	require.Equal(t, b.adapter.FilesDir, filepath.Dir(second), "a name never leaves the directory")
	require.True(t, strings.HasSuffix(second, "-passwd_"), second)
	info, err := os.Stat(second)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the user's alone")
	dir, err := os.Stat(b.adapter.FilesDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dir.Mode().Perm())
}

func TestSafeName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"report.pdf":            "report.pdf",
		"a/b/c.txt":             "c.txt",
		"..":                    "file",
		"":                      "file",
		"x:y\\z\x00.txt":        "x_y_z_.txt",
		strings.Repeat("é", 60): strings.Repeat("é", 40),
	} {
		require.Equal(t, want, safeName(in), "%q", in)
	}
}
