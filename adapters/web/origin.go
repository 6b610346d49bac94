package web

import (
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// A browser lets any page post to any address: a page the owner visits
// could make a bot on localhost call the model. Browsers say where a
// request comes from (Origin, Sec-Fetch-Site), and a cross-site page can
// send application/json only after a CORS preflight, which the web chat
// never grants; so it takes JSON only, and only from its own page.

// crossSiteRefusal is the answer to a request from another site's page.
const crossSiteRefusal = "requests from other sites are refused: use the chat page itself"

// crossSite reports why r came from another site's page, or "" when it
// did not (or from a client that is no browser, which sends neither
// header). Its own origin is the host the browser asked for, r.Host: the
// server trusts no proxy's X-Forwarded-Host, so the scheme, which a
// TLS-terminating proxy changes, is not compared; an origin in
// allowed_origins is accepted too (a proxy that rewrites Host).
func (g *guards) crossSite(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "Sec-Fetch-Site: cross-site"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	norm, err := normalOrigin(origin)
	if err != nil {
		return "Origin is not a web origin"
	}
	if g.origins[norm] {
		return ""
	}
	u, _ := url.Parse(norm) // normalOrigin parsed it
	if sameHost(u.Host, r.Host, defaultPort(u.Scheme)) {
		return ""
	}
	return "Origin is another site"
}

// normalOrigin is origin as "scheme://host[:port]", lower case, without
// the scheme's default port; an error unless it is an http(s) origin with
// nothing after the host ("null", the origin of a sandboxed page, is not).
func normalOrigin(origin string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(origin, "/"))
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", errors.New("not an http or https origin (scheme://host[:port])")
	}
	host := strings.ToLower(u.Host)
	if h, p, err := net.SplitHostPort(host); err == nil && p == defaultPort(scheme) {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	return scheme + "://" + host, nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// sameHost compares two host[:port]s, a missing port being port.
func sameHost(a, b, port string) bool {
	ah, ap := splitHost(a, port)
	bh, bp := splitHost(b, port)
	return ap == bp && strings.EqualFold(ah, bh)
}

func splitHost(hostport, port string) (string, string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), port
}

// isJSON reports whether r's Content-Type is application/json (any
// parameters, such as charset, allowed).
func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}
