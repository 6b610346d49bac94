package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIPKey is the request context key of the client's address as the
// server worked it out (see WithClientIP).
type clientIPKey struct{}

// WithClientIP returns ctx carrying ip as the client's address; the
// server sets it on every request, after looking through trusted proxies.
func WithClientIP(ctx context.Context, ip netip.Addr) context.Context {
	return context.WithValue(ctx, clientIPKey{}, ip)
}

// httpsKey is the request context key of whether a trusted proxy said
// the client came over TLS (see HTTPS).
type httpsKey struct{}

// HTTPS reports whether the client reached Parley over TLS: on the
// connection itself, or as X-Forwarded-Proto says when the peer is a
// trusted proxy (http.trusted_proxies). From any other peer the header
// is ignored: anyone can write it.
func HTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	v, _ := r.Context().Value(httpsKey{}).(bool)
	return v
}

// PeerIP is the address of r's connection, whatever headers it sent.
func PeerIP(r *http.Request) netip.Addr { return peerIP(r.RemoteAddr) }

// forwardedHTTPS reports whether r's X-Forwarded-Proto says https: its
// first entry, the scheme the client used with the proxy nearest to it.
func forwardedHTTPS(r *http.Request) bool {
	first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(first), "https")
}

// ClientIP is the address of the client that made r, for per-client limits
// and back-off: the one the server put on the request's context (the
// nearest address in X-Forwarded-For that is not a trusted proxy, when the
// peer is one), else the connection's peer. It is the zero Addr when
// neither can be read (a request made without a connection, in a test).
func ClientIP(r *http.Request) netip.Addr {
	if ip, ok := r.Context().Value(clientIPKey{}).(netip.Addr); ok && ip.IsValid() {
		return ip
	}
	return peerIP(r.RemoteAddr)
}

// peerIP parses a RemoteAddr ("1.2.3.4:5678", "[::1]:5678"), unmapping
// IPv4-in-IPv6 so that one client has one address.
func peerIP(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}

// proxies are the trusted reverse proxies (http.trusted_proxies).
type proxies []netip.Prefix

func (p proxies) trusted(ip netip.Addr) bool {
	for _, pre := range p {
		if pre.Contains(ip) {
			return true
		}
	}
	return false
}

// clientIP works out who made r. A peer that is not a trusted proxy is
// the client, whatever headers it sends (anyone can write
// X-Forwarded-For). From a trusted proxy, X-Forwarded-For is read from
// the right, each hop appended by the proxy before it: the first address
// that is not a trusted proxy is the client. A hop that does not parse
// ends the walk at the last good one: what lies left of it was written
// by someone no trusted proxy vouches for.
func (p proxies) clientIP(r *http.Request) netip.Addr {
	client := peerIP(r.RemoteAddr)
	if len(p) == 0 || !client.IsValid() || !p.trusted(client) {
		return client
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		ip := parseHop(hops[i])
		if !ip.IsValid() {
			break
		}
		client = ip
		if !p.trusted(ip) {
			break
		}
	}
	return client
}

// parseHop parses one X-Forwarded-For entry: an address, or one with a
// port as some proxies write it ("1.2.3.4:5678", "[2001:db8::1]:80").
func parseHop(s string) netip.Addr {
	s = strings.TrimSpace(s)
	if ip, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return ip.Unmap()
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
