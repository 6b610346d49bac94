package mcp

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// dialHTTP initializes a session over streamable HTTP, or over the older
// SSE transport when the server's answer says it does not speak
// streamable HTTP.
func (m *Manager) dialHTTP(ctx context.Context, s *server, client *sdk.Client, c *conn) error {
	base := http.DefaultTransport.(*http.Transport).Clone()
	rec := &statusRecorder{next: &headerTransport{next: base, headers: s.cfg.Headers}}
	hc := &http.Client{Transport: rec}
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil)
	if err != nil && ctx.Err() == nil && notStreamable(rec.firstPOST.Load()) {
		s.log.Debug("mcp: no streamable HTTP here; trying SSE", "status", rec.firstPOST.Load())
		var sseErr error
		sse := &lifetimeTransport{Transport: &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, life: c.ctx}
		session, sseErr = client.Connect(ctx, sse, nil)
		if sseErr != nil {
			err = fmt.Errorf("streamable HTTP: %v; SSE: %w", err, sseErr)
		} else {
			err = nil
		}
	}
	if err != nil {
		base.CloseIdleConnections()
		return m.failure(ctx, "initialize", err)
	}
	c.session, c.closeIdle = session, base.CloseIdleConnections
	return nil
}

// notStreamable reports whether the status of the first POST says the
// server does not take streamable HTTP there: the spec's fallback rule is
// any 4xx; auth and rate limits are not about the transport.
func notStreamable(status int32) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}

// headerTransport adds the server's configured headers to every request.
type headerTransport struct {
	next    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(req)
}

// statusRecorder remembers the status of the first POST, which decides
// the fallback to SSE.
type statusRecorder struct {
	next      http.RoundTripper
	firstPOST atomic.Int32
}

func (t *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		t.firstPOST.CompareAndSwap(0, int32(resp.StatusCode))
	}
	return resp, err
}

// lifetimeTransport connects with a context that lives as long as the
// connection (life), not as long as the Connect call: the SSE transport
// ties its event stream to the context it connects with, and Connect's
// has the init timeout. Connect's context still bounds the connecting.
type lifetimeTransport struct {
	sdk.Transport
	life   context.Context
	cancel context.CancelFunc
}

func (t *lifetimeTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	var streamCtx context.Context
	streamCtx, t.cancel = context.WithCancel(t.life)
	stop := context.AfterFunc(ctx, t.cancel)
	conn, err := t.Transport.Connect(streamCtx)
	if !stop() {
		// ctx ended while connecting, and so did the stream.
		if conn != nil {
			_ = conn.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		t.cancel()
		return nil, err
	}
	return conn, nil
}
