package discord

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/parleybot/parley/internal/httpclient"
)

// requestTimeout bounds one REST request, body included.
const requestTimeout = 30 * time.Second

// newClient returns the session's HTTP client: the pooled transport (see
// internal/httpclient) behind originTransport.
func newClient(base *http.Transport, origin *url.URL, fallback context.Context) *http.Client {
	return &http.Client{
		Transport: originTransport{base: base, origin: origin, fallback: fallback},
		Timeout:   requestTimeout,
	}
}

// newTransport returns the shared pooled transport.
func newTransport() *http.Transport {
	return httpclient.Transport(requestTimeout)
}

// originTransport sends every request to origin (scheme and host) instead
// of the one in its URL. discordgo builds its URLs from process-wide
// Endpoint variables that must not change, so this is how api_url points
// a session elsewhere.
//
// A request made without a context (discordgo's GET /gateway inside
// Session.Open) gets fallback, the adapter's run context, so that Stop can
// abort it.
type originTransport struct {
	base     http.RoundTripper
	origin   *url.URL // nil: leave the URL alone
	fallback context.Context
}

// RoundTrip implements http.RoundTripper. It does not modify r.
func (t originTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if ctx.Done() == nil && t.fallback != nil {
		ctx = t.fallback
	}
	out := r.Clone(ctx)
	if t.origin != nil {
		out.URL.Scheme = t.origin.Scheme
		out.URL.Host = t.origin.Host
		out.Host = "" // the Host header follows the URL
	}
	return t.base.RoundTrip(out)
}
