// Package bodylimit reads the body of a file download with a size bound,
// for the adapters' AttachmentFetcher: a file over the bound is an error
// wrapping core.ErrTooLarge, found from its Content-Length before anything
// is read, or by reading one byte past the bound.
package bodylimit

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/parleybot/parley/core"
)

// Read reads resp's body, at most maxBytes of it. When the server
// says how long the body is, the buffer is made that size at once: a
// 4 MB photo read by growing a slice costs five times its size in
// allocations.
func Read(resp *http.Response, maxBytes int64) ([]byte, error) {
	if resp.ContentLength > maxBytes {
		return nil, fmt.Errorf("%d bytes, over the %d asked for: %w", resp.ContentLength, maxBytes, core.ErrTooLarge)
	}
	limit := maxBytes
	if limit < math.MaxInt64 {
		limit++ // one byte more than maxBytes tells a file over it
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, limit)); err != nil {
		return nil, fmt.Errorf("reading the download: %w", err)
	}
	if int64(buf.Len()) > maxBytes {
		return nil, fmt.Errorf("more than %d bytes arrived: %w", maxBytes, core.ErrTooLarge)
	}
	return buf.Bytes(), nil
}
