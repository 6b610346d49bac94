package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// BeyondLoopback reports whether Listen can be reached from other
// machines: no host or a wildcard one (":8080", "0.0.0.0", "::"), a
// non-loopback address, or any host name but localhost (it may resolve
// to anything).
func (h HTTP) BeyondLoopback() bool {
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return false // validation reports it
	}
	if host == "localhost" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return true
	}
	return !ip.Unmap().IsLoopback()
}

// TrustedPrefixes is TrustedProxies parsed, a bare address as a
// single-address prefix; entries that do not parse (validation reports
// them) are left out.
func (h HTTP) TrustedPrefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(h.TrustedProxies))
	for _, s := range h.TrustedProxies {
		if p, ok := parsePrefix(s); ok {
			out = append(out, p)
		}
	}
	return out
}

func parsePrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		ip = ip.Unmap()
		return netip.PrefixFrom(ip, ip.BitLen()), true
	}
	return netip.Prefix{}, false
}

// MinAPITokenDistinct is how many different characters http.api_token
// must use: a 16-character token of one character repeated, or of a few
// over and over, is guessed long before the back-off makes a random one
// hopeless. A random 16-character hex token uses fewer than 5 about 4
// times in ten million.
const MinAPITokenDistinct = 5

// weakToken says why token is too weak for http.api_token ("" when it is
// fine, or empty: the API and the console are off). It never quotes the
// token.
func weakToken(token string) string {
	n := utf8.RuneCountInString(token)
	if n == 0 {
		return ""
	}
	if n < MinAPITokenChars {
		return fmt.Sprintf("has %d characters: it must have at least %d", n, MinAPITokenChars)
	}
	if strings.TrimSpace(token) != token {
		// The API trims the token a client sends: this one could never match.
		return "begins or ends with white space, which no Authorization header can carry"
	}
	distinct := map[rune]bool{}
	solid := 0
	for _, r := range token {
		switch {
		case unicode.IsSpace(r):
			continue
		case unicode.IsControl(r):
			return "holds a control character, which no Authorization header can carry"
		}
		solid++
		distinct[r] = true
	}
	if solid < MinAPITokenChars {
		return fmt.Sprintf("has %d characters besides white space: it must have at least %d", solid, MinAPITokenChars)
	}
	if len(distinct) < MinAPITokenDistinct {
		return fmt.Sprintf("uses only %d different characters: it must use at least %d", len(distinct), MinAPITokenDistinct)
	}
	return ""
}

// httpProblems checks the http section but for Listen's form.
func (c *Config) httpProblems(add addFunc) {
	// Never the token itself in the message, from the file or not.
	if why := weakToken(c.HTTP.APIToken.Reveal()); why != "" {
		add("http.api_token", why+" (make one with `openssl rand -hex 32`); "+
			"leave it empty (or ${"+EnvAPIToken+"} unset) to turn the API and the console off", nil)
	}
	for i, s := range c.HTTP.TrustedProxies {
		if _, ok := parsePrefix(s); !ok {
			add(indexPath("http.trusted_proxies", i), `must be an address or a CIDR (e.g. "10.0.0.0/8" or "127.0.0.1")`, s)
		}
	}
	between(add, "http.max_connections", c.HTTP.MaxConnections, 16, 1<<20)
	between(add, "http.max_connections_per_ip", c.HTTP.MaxConnectionsPerIP, 0, 1<<20)
	if c.HTTP.MinBodyRate < 64 {
		add("http.min_body_rate", "must be at least 64B (a second)", c.HTTP.MinBodyRate.String())
	}
	if c.HTTP.ReadTimeout < time.Second {
		add("http.read_timeout", "must be at least 1s", c.HTTP.ReadTimeout)
	}
	if c.WebChatOn() && !c.HTTP.Public && c.HTTP.BeyondLoopback() {
		add("http.listen", "is reachable from other machines and the web chat (adapters.web) is on: anyone who reaches it "+
			"can talk to the model at your cost. Listen on 127.0.0.1 (with a reverse proxy in front for the public), "+
			"or set http.public: true if the bot is meant to be public", c.HTTP.Listen)
	}
}

// WebChatOn reports whether the web chat is on: its section says so, or
// there is none (it is the one adapter on by default, as in the default
// config).
func (c *Config) WebChatOn() bool {
	web, ok := c.Adapters["web"]
	return !ok || web.Enabled
}
