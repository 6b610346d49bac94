package telegram

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/parleybot/parley/internal/httpclient"
)

// newTransport returns the shared pooled transport (see internal/httpclient).
// Responses may take up to pollTimeout to start (the getUpdates long poll),
// so the header timeout is longer than that.
func newTransport(pollTimeout time.Duration) *http.Transport {
	return httpclient.Transport(pollTimeout + 15*time.Second)
}

// newClient wraps transport in a client whose timeout bounds every request,
// long polls included.
func newClient(t *http.Transport, pollTimeout time.Duration) *http.Client {
	return &http.Client{
		Transport: statusTransport{base: t},
		Timeout:   pollTimeout + 20*time.Second,
	}
}

// statusKey is the context key of a *statusBox.
type statusKey struct{}

// statusBox receives the HTTP status of the request made with its context.
// go-telegram/bot folds a 5xx answer into an untyped error (or a decoding
// error when a proxy answers with HTML), so Send reads the status here to
// know whether a retry is safe and worthwhile.
type statusBox struct{ code int }

// withStatus returns a context whose request records its status in the box.
func withStatus(ctx context.Context) (context.Context, *statusBox) {
	box := &statusBox{}
	return context.WithValue(ctx, statusKey{}, box), box
}

// statusTransport records response statuses into the request's statusBox.
// http.Client.Do returns only after RoundTrip, so reading the box after Do
// needs no lock.
type statusTransport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r, err := gathered(r)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		if box, ok := r.Context().Value(statusKey{}).(*statusBox); ok {
			box.code = resp.StatusCode
		}
	}
	return resp, err
}

// maxGathered is the largest request body sent in one piece; an upload
// beyond it streams.
const maxGathered = 64 << 10

// gathered returns r with its body read into memory, up to maxGathered,
// and sent with a Content-Length. go-telegram/bot writes every request as
// multipart form data through a pipe, and each field's few small writes
// would go out as chunks of their own, a write system call each (about a
// tenth of the CPU of a busy bot in a profile); gathered, the request
// goes out in one.
func gathered(r *http.Request) (*http.Request, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > 0 {
		return r, nil
	}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, r.Body, maxGathered+1)
	if err != nil && err != io.EOF {
		_ = r.Body.Close()
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	r2 := r.Clone(r.Context())
	if n <= maxGathered {
		_ = r.Body.Close()
		r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(buf.Bytes())), n
		return r2, nil
	}
	// Too large to hold: what was read, then the rest as it comes.
	r2.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf.Bytes()), r.Body), r.Body}
	return r2, nil
}
