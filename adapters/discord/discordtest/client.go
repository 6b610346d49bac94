package discordtest

import (
	"net/http"
	"net/url"
)

// rewriter sends requests for Discord's hosts to the fake instead, so that
// discordgo's global Endpoint* URLs need no change.
type rewriter struct {
	target *url.URL
	next   http.RoundTripper
}

// RoundTrip rewrites the scheme and host of requests to discord.com.
func (rw rewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	if h := r.URL.Hostname(); h == "discord.com" || h == "discordapp.com" {
		r = r.Clone(r.Context())
		r.URL.Scheme = rw.target.Scheme
		r.URL.Host = rw.target.Host
		r.Host = rw.target.Host
	}
	return rw.next.RoundTrip(r)
}

// HTTPClient returns an http.Client that sends https://discord.com
// requests to the fake; give it to a discordgo session (session.Client =
// srv.HTTPClient()). Its idle connections are closed with the server.
func (s *Server) HTTPClient() *http.Client {
	return s.client
}

func newRewriteClient(origin string) *http.Client {
	target, err := url.Parse(origin)
	if err != nil {
		panic("discordtest: bad server URL " + origin) // httptest made it
	}
	return &http.Client{Transport: rewriter{target: target, next: &http.Transport{}}}
}
