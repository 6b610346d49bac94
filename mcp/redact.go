package mcp

import (
	"cmp"
	"context"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxReason bounds a state's reason, in characters.
const maxReason = 200

// minSecret is the shortest value treated as a secret: shorter ones ("1",
// "en") would only garble messages ("exit status 1") if scrubbed.
const minSecret = 4

// redactor removes a server's secrets (env and header values, the URL's
// password and query) from text that came from the server, its process or
// the network, before it is logged or returned.
type redactor struct {
	r *strings.Replacer
}

func newRedactor(cfg Server) *redactor {
	var secrets []string
	for _, v := range cfg.Env {
		secrets = append(secrets, v)
	}
	for _, v := range cfg.Headers {
		secrets = append(secrets, v)
	}
	var pairs []string
	if u, err := url.Parse(cfg.URL); err == nil && cfg.URL != "" {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
		for _, vs := range u.Query() {
			secrets = append(secrets, vs...)
		}
		safe := *u
		safe.User, safe.RawQuery, safe.Fragment = nil, "", ""
		pairs = append(pairs, cfg.URL, safe.String())
	}
	secrets = slices.DeleteFunc(secrets, func(s string) bool { return len(s) < minSecret })
	// Longest first, so that a secret containing another is removed whole.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, s := range secrets {
		pairs = append(pairs, s, "[redacted]")
	}
	return &redactor{r: strings.NewReplacer(pairs...)}
}

// text returns s without the server's secrets.
func (r *redactor) text(s string) string { return r.r.Replace(s) }

// reason returns s without secrets, on one line, at most maxReason
// characters.
func (r *redactor) reason(s string) string {
	s = strings.Join(strings.Fields(r.text(s)), " ")
	if utf8.RuneCountInString(s) <= maxReason {
		return s
	}
	runes := []rune(s)
	return string(runes[:maxReason-1]) + "…"
}

// redactHandler is a slog.Handler that takes a server's secrets out of
// the message and string attributes, for the SDK's own logging, whose
// text we do not control.
type redactHandler struct {
	slog.Handler
	r *redactor
}

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	switch v := a.Value.Resolve(); v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.text(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, g := range as {
			out[i] = h.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.text(err.Error()))
		}
		return slog.String(a.Key, h.r.text(v.String()))
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return redactHandler{Handler: h.Handler.WithAttrs(out), r: h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{Handler: h.Handler.WithGroup(name), r: h.r}
}
