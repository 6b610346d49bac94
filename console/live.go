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
	build func(s *reader, ctx context.Context, r *http.Request, c *runCache) (framed, error)
	// live are the ids of the page's live sections; each is rendered by
	// the template "live:<id>", in the page and on the stream alike.
	live []string
	// perBot is true for a page of lists, which shows the bot ?bot= picks.
	perBot bool
}

// read builds p for r, with the reader for r (see forRequest).
func (p *pageDef) read(s *reader, ctx context.Context, r *http.Request, c *runCache) (*reader, framed, error) {
	rd, err := s.forRequest(r, p.perBot)
	if err != nil {
		return nil, nil, err
	}
	v, err := p.build(rd, ctx, r, c)
	return rd, v, err
}

// page serves p: build, then render with the frame filled in.
func (s *Console) page(p *pageDef) sessionHandler {
	return func(w http.ResponseWriter, r *http.Request, sess session) {
		rd, v, err := p.read(s.reader, r.Context(), r, nil)
		if err != nil {
			s.pageFailed(w, r, err)
			return
		}
		rd.dress(v, r, sess.csrf, p.nav)
		l := v.frame()
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
		ls := &liveStream{s: s, p: p, r: r, csrf: sess.csrf, w: w, rc: http.NewResponseController(w), cache: newRunCache()}
		rd, v, err := p.read(s.reader, ctx, r, ls.cache)
		if err != nil {
			s.pageFailed(w, r, err)
			return
		}
		// The sections' forms carry the session's CSRF token, and their
		// links the bot picked, as the page's do.
		rd.dress(v, r, sess.csrf, p.nav)
		ls.v = v
		ls.have = r.Header.Get("Last-Event-ID")
		if ls.have == "" {
			ls.have = r.URL.Query().Get("v")
		}
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
		w.WriteHeader(http.StatusOK)
		// The first frame says the stream is live (tests wait for it);
		// retry: how long the browser waits before reconnecting.
		if !ls.write(": connected\nretry: 3000\n\n") {
			return
		}
		ls.lastWrite = s.clock.Now()
		// Send what changed, wait a tick, build again: until the browser,
		// the session or what the page shows is gone.
		for ls.sendChanges() && ls.tick(ctx) && ls.rebuild(ctx) {
		}
	}
}

// liveStream is one browser's stream of a page's live updates.
type liveStream struct {
	s     *Console
	p     *pageDef
	r     *http.Request
	csrf  string
	w     http.ResponseWriter
	rc    *http.ResponseController
	cache *runCache
	// v is the page as last built; nil when the last build failed.
	v framed
	// have is the version of the sections the browser has.
	have      string
	lastWrite time.Time
}

// write sends frame, false when the browser is gone.
func (ls *liveStream) write(frame string) bool {
	_ = ls.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // unsupported: keep the server's
	if _, err := io.WriteString(ls.w, frame); err != nil {
		return false
	}
	return ls.rc.Flush() == nil
}

// sendChanges sends the live sections when they differ from the
// browser's; false when the browser is gone.
func (ls *liveStream) sendChanges() bool {
	if ls.v == nil {
		return true
	}
	sections, version, err := ls.s.liveSections(ls.p, ls.v)
	if err != nil {
		ls.s.log.Error("console: rendering live sections", "page", ls.p.name, "err", err)
		return true
	}
	if version == ls.have {
		return true
	}
	data, err := json.Marshal(map[string]any{"sections": sections})
	if err != nil {
		ls.s.log.Error("console: encoding live sections", "err", err)
	} else if !ls.write("id: " + version + "\nevent: update\ndata: " + string(data) + "\n\n") {
		return false
	}
	ls.have, ls.lastWrite = version, ls.s.clock.Now()
	return true
}

// tick waits for the next update, checks the session is still open and
// pings a quiet stream; false when the stream ends.
func (ls *liveStream) tick(ctx context.Context) bool {
	s := ls.s
	t := s.clock.NewTimer(s.liveEvery)
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-s.done:
		t.Stop()
		return false
	case <-t.C():
	}
	if _, err := s.session(ls.r); err != nil {
		// Expired or logged out: the page says to log in again. A
		// store that cannot say ends the stream only; the page
		// reconnects.
		if errors.Is(err, errNoSession) {
			ls.write("event: expired\ndata: {}\n\n")
		}
		return false
	}
	if now := s.clock.Now(); now.Sub(ls.lastWrite) >= pingEvery {
		if !ls.write(": ping\n\n") {
			return false
		}
		ls.lastWrite = now
	}
	return true
}

// rebuild builds the page again; false when what it shows is gone.
func (ls *liveStream) rebuild(ctx context.Context) bool {
	rd, next, err := ls.p.read(ls.s.reader, ctx, ls.r, ls.cache)
	var pe pageError
	switch {
	case errors.As(err, &pe) && pe.code == http.StatusNotFound:
		ls.write("event: gone\ndata: {}\n\n")
		return false
	case err != nil:
		if ctx.Err() == nil {
			ls.s.log.Error("console: live update", "page", ls.p.name, "err", err)
		}
		ls.v = nil // nothing to send this time; try again on the next tick
	default:
		ls.v = next
		rd.dress(next, ls.r, ls.csrf, ls.p.nav)
	}
	return true
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
