package telegram

import (
	"context"
	"net/http"
	"time"

	"github.com/parleybot/parley/core/httpclient"
)

// newTransport returns the shared pooled transport (see core/httpclient).
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
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		if box, ok := r.Context().Value(statusKey{}).(*statusBox); ok {
			box.code = resp.StatusCode
		}
	}
	return resp, err
}
