package bodylimit_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/bodylimit"
	"github.com/parleybot/parley/core"
)

func resp(body string, length int64) *http.Response {
	return &http.Response{Body: io.NopCloser(strings.NewReader(body)), ContentLength: length}
}

func TestRead(t *testing.T) {
	t.Parallel()
	data, err := bodylimit.Read(resp("hello", 5), 5)
	require.NoError(t, err)
	require.Equal(t, []byte("hello"), data, "exactly the bound is fine")

	data, err = bodylimit.Read(resp("hello", -1), 10)
	require.NoError(t, err, "no Content-Length")
	require.Equal(t, []byte("hello"), data)

	_, err = bodylimit.Read(resp("hello", 5), 4)
	require.ErrorIs(t, err, core.ErrTooLarge, "Content-Length over the bound")

	_, err = bodylimit.Read(resp("hello", -1), 4)
	require.ErrorIs(t, err, core.ErrTooLarge, "body over the bound")

	// A server that lies about its length sends no more than the bound.
	r := &http.Response{Body: io.NopCloser(io.MultiReader(bytes.NewReader([]byte("abc")), endless{})), ContentLength: 3}
	_, err = bodylimit.Read(r, 100)
	require.ErrorIs(t, err, core.ErrTooLarge)
}

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func BenchmarkRead4MB(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 4<<20)
	b.ReportAllocs()
	for b.Loop() {
		r := &http.Response{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
		if _, err := bodylimit.Read(r, 20<<20); err != nil {
			b.Fatal(err)
		}
	}
}
