package web

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
)

// pageSource is the chat page: one self-contained file, vanilla JS and CSS,
// no external assets.
//
//go:embed page.html
var pageSource string

// pageTemplate renders pageSource. html/template escapes the title and bot
// name for each context they appear in (HTML text, JS string).
var pageTemplate = template.Must(template.New("page").Parse(pageSource))

// pageCSP allows nothing but the page itself and requests to this origin
// (pictures and audio the bot sent, from /web/files), so the page
// provably loads no external asset.
const pageCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src 'self' data:; media-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (rt *routes) handlePage(w http.ResponseWriter, _ *http.Request) {
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, struct{ Title, BotName string }{rt.cfg.Title, rt.botName})
	if err != nil {
		rt.log.Error("rendering the chat page", "err", err)
		http.Error(w, "could not render the chat page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(buf.Bytes())
}
