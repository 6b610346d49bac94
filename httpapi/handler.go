package httpapi

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// serve is the server's handler around its mux, for every request: it
// puts the client's address on the context (through the trusted proxies),
// and whether it came over TLS as a trusted proxy says, and gives a body
// ReadTimeout to arrive.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	ctx := WithClientIP(r.Context(), s.proxies.clientIP(r))
	if forwardedHTTPS(r) && s.proxies.trusted(peerIP(r.RemoteAddr)) {
		ctx = context.WithValue(ctx, httpsKey{}, true)
	}
	r = r.WithContext(ctx)
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		w, r = s.bodyDeadline(w, r)
		if lc := connOf(r); lc != nil {
			// Answered before its body was all read: not slow, done.
			defer lc.l.bodyDone(lc)
		}
	}
	s.mux.ServeHTTP(w, r)
}

// bodyDeadline bounds the time r's body may take: a client that declares
// a body and sends it slowly, or never, would otherwise hold its
// connection (and a goroutine) for as long as it likes. A body of known
// length has bodyGrace and its length at MinBodyRate, if that is less
// than ReadTimeout: a login form does not get 30 s. The deadline is
// lifted once the body is read, so that a handler may take its time
// answering; a handler that answers before reading the whole body closes
// the connection after its answer, since waiting for the rest to skip it
// is what the slow client wants. Meanwhile the connection is on the
// limiter's list of bodies, where one that falls behind MinBodyRate
// gives its place to a new connection at a cap.
func (s *Server) bodyDeadline(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	rc := http.NewResponseController(w)
	limit := s.opts.ReadTimeout
	if r.ContentLength > 0 {
		limit = min(limit, bodyGrace+time.Duration(float64(r.ContentLength)/float64(s.opts.MinBodyRate)*float64(time.Second)))
	}
	// The socket's deadline is on the wall clock, whatever Options.Now is.
	if err := rc.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return w, r // not a connection of ours (a test's recorder)
	}
	b := &deadlineBody{ReadCloser: r.Body, rc: rc, left: r.ContentLength, conn: connOf(r)}
	if b.conn != nil {
		b.conn.l.bodyStarted(b.conn)
	}
	r2 := *r
	r2.Body = b
	return &bodyWriter{ResponseWriter: w, body: b}, &r2
}

// deadlineBody is a request body read under a deadline, lifted when the
// last byte is read.
type deadlineBody struct {
	io.ReadCloser
	rc *http.ResponseController
	// left is the bytes still to come (-1: unknown, chunked); read only
	// by the handler's goroutine.
	left int64
	// conn is the counted connection, told of the body's progress (nil
	// for none).
	conn *limitedConn
	done atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if b.conn != nil {
		b.conn.bodyRead.Add(int64(n))
	}
	if err == io.EOF || b.left == 0 {
		b.finish()
	}
	return n, err
}

// finish lifts the deadline: the body is in.
func (b *deadlineBody) finish() {
	if b.done.CompareAndSwap(false, true) {
		_ = b.rc.SetReadDeadline(time.Time{})
		if b.conn != nil {
			b.conn.l.bodyDone(b.conn)
		}
	}
}

// bodyWriter closes the connection after a response written before the
// body was read, at once.
type bodyWriter struct {
	http.ResponseWriter
	body    *deadlineBody
	started bool
}

// start runs before the response's header goes out. With the body still
// unread, the connection closes after the response, and the deadline
// expires now: net/http would otherwise read and skip the rest of the
// body first, which the slowest client sends last.
func (w *bodyWriter) start() {
	if !w.started {
		w.started = true
		if !w.body.done.Load() {
			w.Header().Set("Connection", "close")
			_ = w.body.rc.SetReadDeadline(time.Now())
		}
	}
}

func (w *bodyWriter) WriteHeader(code int) {
	if code >= 200 { // not an informational 1xx
		w.start()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *bodyWriter) Write(p []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(p)
}

// Flush keeps http.Flusher working through the wrapper.
func (w *bodyWriter) Flush() {
	w.start()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *bodyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
