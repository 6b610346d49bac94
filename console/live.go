package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// pageDef is a console page: how to build what it shows, and which of
// its parts update live.
type pageDef struct {
	// name is the page's template.
	name string
	// nav is the menu entry the page belongs to.
	nav string
	// build reads what the page shows. The stream calls it again on every
	// tick, with the same runs cache. An error that is a pageError is
	// told to the owner.
	build func(s *Console, ctx context.Context, r *http.Request, c *runCache) (framed, error)
	// live are the ids of the page's live sections; each is rendered by
	// the template "live:<id>", in the page and on the stream alike.
	live []string
}

// page serves p: build, then render with the frame filled in.
func (s *Console) page(p *pageDef) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, sess session) {
		v, err := p.build(s, r.Context(), r, nil)
		if err != nil {
			s.pageFailed(w, r, err)
			return
		}
		l := v.frame()
		l.CSRF, l.Nav = sess.csrf, p.nav
		if len(p.live) > 0 {
			// The stream starts from the version of what the page shows:
			// it sends only what changed since.
			_, version, err := s.liveSections(p, v)
			if err != nil {
				s.internal(w, r, "rendering the page", err)
				return
			}
			q := r.URL.Query()
			q.Del("notice")
			q.Del("job")
			q.Set("v", version)
			l.Live = Prefix + "events/" + strings.TrimPrefix(r.URL.Path, Prefix) + "?" + q.Encode()
		}
		s.render(w, r, http.StatusOK, p.name, v)
	}
}

// liveSections renders p's live sections of v and returns them by id with
// their version: a hash of them all.
func (s *Console) liveSections(p *pageDef, v framed) (map[string]string, string, error) {
	out := make(map[string]string, len(p.live))
	h := sha256.New()
	var buf bytes.Buffer
	for _, id := range p.live {
		buf.Reset()
		if err := pages[p.name].ExecuteTemplate(&buf, "live:"+id, v); err != nil {
			return nil, "", err
		}
		out[id] = buf.String()
		_, _ = io.WriteString(h, id+"\x00")
		_, _ = h.Write(buf.Bytes())
		_, _ = io.WriteString(h, "\x00")
	}
	return out, hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// pingEvery is how often a quiet stream says it is alive, so that proxies
// keep it open and a dead browser is noticed.
const pingEvery = 20 * time.Second

// streamWriteTimeout bounds one write to a stream: a stalled browser
// cannot hold the handler.
const streamWriteTimeout = 10 * time.Second

// stream serves p's live updates as server-sent events: every LiveEvery
// the page is built again, and when its live sections differ from what
// the browser has, an "update" event carries them (JSON: {"sections":
// {id: html}}) with the version as the event id. The browser's version is
// the Last-Event-ID of a reconnect, else the page's v parameter.
//
// Events: "update"; "expired" when the session ends (the page says to log
// in again); "gone" when what the page shows is no more (a deleted
// conversation).
func (s *Console) stream(p *pageDef) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, sess session) {
		ctx := r.Context()
		cache := newRunCache()
		v, err := p.build(s, ctx, r, cache)
		if err != nil {
			s.pageFailed(w, r, err)
			return
		}
		// The sections' forms carry the session's CSRF token, as the
		// page's do.
		v.frame().CSRF = sess.csrf
		have := r.Header.Get("Last-Event-ID")
		if have == "" {
			have = r.URL.Query().Get("v")
		}
		rc := http.NewResponseController(w)
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
		w.WriteHeader(http.StatusOK)
		write := func(frame string) bool {
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // unsupported: keep the server's
			if _, err := io.WriteString(w, frame); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		// The first frame says the stream is live (tests wait for it);
		// retry: how long the browser waits before reconnecting.
		if !write(": connected\nretry: 3000\n\n") {
			return
		}
		lastWrite := s.clock.Now()
		for {
			if v != nil {
				sections, version, err := s.liveSections(p, v)
				if err != nil {
					s.log.Error("console: rendering live sections", "page", p.name, "err", err)
				} else if version != have {
					data, err := json.Marshal(map[string]any{"sections": sections})
					if err != nil {
						s.log.Error("console: encoding live sections", "err", err)
					} else if !write("id: " + version + "\nevent: update\ndata: " + string(data) + "\n\n") {
						return
					}
					have, lastWrite = version, s.clock.Now()
				}
			}
			t := s.clock.NewTimer(s.liveEvery)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-s.done:
				t.Stop()
				return
			case <-t.C():
			}
			if _, err := s.session(r); err != nil {
				// Expired or logged out: the page says to log in again. A
				// store that cannot say ends the stream only; the page
				// reconnects.
				if errors.Is(err, errNoSession) {
					write("event: expired\ndata: {}\n\n")
				}
				return
			}
			if now := s.clock.Now(); now.Sub(lastWrite) >= pingEvery {
				if !write(": ping\n\n") {
					return
				}
				lastWrite = now
			}
			next, err := p.build(s, ctx, r, cache)
			var pe pageError
			switch {
			case errors.As(err, &pe) && pe.code == http.StatusNotFound:
				write("event: gone\ndata: {}\n\n")
				return
			case err != nil:
				if ctx.Err() == nil {
					s.log.Error("console: live update", "page", p.name, "err", err)
				}
				v = nil // nothing to send this time; try again on the next tick
			default:
				v = next
				v.frame().CSRF = sess.csrf
			}
		}
	}
}

//go:embed static/console.js
var staticFS embed.FS

// static serves the console's script. It is no secret, so it needs no
// session: the login page could use it as well as any other.
func (s *Console) static(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("file") != "console.js" {
		s.fail(w, r, http.StatusNotFound, "There is no such file in the console.")
		return
	}
	data, err := staticFS.ReadFile("static/console.js")
	if err != nil {
		s.internal(w, r, "reading the script", err)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_, _ = w.Write(data)
}

// queryWith is u's path and query with key set to value (value "":
// removed).
func queryWith(u *url.URL, key, value string) string {
	q := u.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	if len(q) == 0 {
		return u.Path
	}
	return u.Path + "?" + q.Encode()
}

// pagePath is the path of the page a request is for: the page's own, or
// the page whose live stream it is.
func pagePath(r *http.Request) string {
	if rest, ok := strings.CutPrefix(r.URL.Path, Prefix+"events/"); ok {
		return Prefix + rest
	}
	return r.URL.Path
}
