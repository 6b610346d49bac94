package telegram

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A request body written through a pipe, as go-telegram/bot writes every
// one, is sent in one piece with its length; one too large to hold
// streams, whole.
func TestRequestBodiesAreGathered(t *testing.T) {
	t.Parallel()
	for _, size := range []int{10, maxGathered, maxGathered + 1, 3 * maxGathered} {
		want := strings.Repeat("x", size)
		pr, pw := io.Pipe()
		go func() {
			for chunk := range bytes.SplitSeq([]byte(want), nil) {
				_, _ = pw.Write(chunk) // one byte at a time, as small as it gets
			}
			_ = pw.Close()
		}()
		req, err := http.NewRequest(http.MethodPost, "http://telegram.invalid/bot/sendMessage", pr)
		require.NoError(t, err)
		got, err := gathered(req)
		require.NoError(t, err)
		if size <= maxGathered {
			require.Equal(t, int64(size), got.ContentLength, "size %d", size)
		} else {
			require.LessOrEqual(t, got.ContentLength, int64(0), "size %d streams", size)
		}
		body, err := io.ReadAll(got.Body)
		require.NoError(t, err)
		require.Equal(t, want, string(body), "size %d", size)
		require.NoError(t, got.Body.Close())
	}
}
