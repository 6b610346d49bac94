package core_test

import (
	"testing"

	"github.com/parleybot/parley/core"
)

func TestKindOf(t *testing.T) {
	t.Parallel()
	for mime, want := range map[string]core.AttachmentKind{
		"image/png": core.AttachImage, " IMAGE/JPEG ; q=1": core.AttachImage, "audio/ogg; codecs=opus": core.AttachAudio,
		"video/mp4": core.AttachVideo, "application/pdf": core.AttachDocument, "": core.AttachDocument,
		"audio": core.AttachDocument, ";image/png": core.AttachDocument, "text/plain; charset=utf-8": core.AttachDocument,
	} {
		if got := core.KindOf(mime); got != want {
			t.Errorf("KindOf(%q) = %s, want %s", mime, got, want)
		}
	}
}
