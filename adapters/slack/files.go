package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleybot/parley/adapters/bodylimit"
	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/core"
)

// fetcher downloads the files users send (FetchAttachment), with the bot
// token, from Slack's hosts only.
type fetcher struct{ *state }

var _ core.AttachmentFetcher = (*Adapter)(nil)

const (
	// fetchTimeout bounds one FetchAttachment, retries included: a
	// media.max_bytes file (20 MiB) comes well within it on any working
	// link, and a stalled one must not hold a turn for long.
	fetchTimeout = 60 * time.Second
	// filesHost serves url_private and url_private_download on Slack.
	filesHost = "files.slack.com"
)

// FetchAttachment downloads a file a user shared (its url_private) with
// the bot token in the Authorization header; it needs the files:read
// scope. The token goes only to the Web API's host (api_url's, slack.com
// by default) or files.slack.com: a Ref on any other host is refused. A
// file whose Size, Content-Length or body is over max bytes is not
// downloaded whole: the error wraps core.ErrTooLarge. A 429 waits its
// Retry-After, a 5xx or a refused connection backs off, as for Send; the
// whole fetch is bounded by 60 seconds. Slack answers a request it does
// not authorise with a 200 HTML login page: that is an error naming the
// missing scope, not the file.
func (f *fetcher) FetchAttachment(ctx context.Context, att core.Attachment, maxBytes int64) ([]byte, error) {
	const what = "fetching slack file"
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	client, err := f.fileClient()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	u, err := f.fileURL(att.Ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if att.Size > maxBytes {
		return nil, fmt.Errorf("%s %q (%d bytes, at most %d): %w", what, att.Name, att.Size, maxBytes, core.ErrTooLarge)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	return retry.Do(ctx, f.retryPolicy(), what, []any{"file", att.Name}, func(ctx context.Context) ([]byte, error) {
		return f.download(ctx, client, u, att, maxBytes)
	}, f.judgeDownload)
}

// fileClient is an HTTP client on the adapter's pooled transport, while
// the adapter runs. It has no timeout of its own: FetchAttachment's
// context bounds it.
func (f *fetcher) fileClient() (*http.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.stopped:
		return nil, errors.New("slack adapter is stopped")
	case f.transport == nil:
		return nil, errors.New("slack adapter is not started")
	}
	return &http.Client{Transport: f.transport, CheckRedirect: f.checkRedirect}, nil
}

// checkRedirect follows a redirect only to a host the token may go to.
// net/http already drops Authorization on a redirect to another domain;
// this keeps a download from wandering off Slack at all.
func (f *fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if !f.tokenHost(req.URL) {
		return fmt.Errorf("redirected to %s, which is not slack", req.URL.Host)
	}
	return nil
}

// fileURL reads a Ref and checks that the bot token may be sent there.
func (f *fetcher) fileURL(ref string) (*url.URL, error) {
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return nil, fmt.Errorf("ref %q is not a slack file URL", ref)
	}
	if !f.tokenHost(u) {
		return nil, fmt.Errorf("refusing to send the bot token to %s: a slack file's ref must be on %s or %s", u.Host, filesHost, f.apiHost().Host)
	}
	return u, nil
}

// tokenHost reports whether the bot token may go to u: https on
// files.slack.com, or the Web API's own scheme and host (which tests and
// proxies point elsewhere).
func (f *fetcher) tokenHost(u *url.URL) bool {
	if u.Scheme == "https" && strings.EqualFold(u.Host, filesHost) {
		return true
	}
	api := f.apiHost()
	return u.Scheme == api.Scheme && strings.EqualFold(u.Host, api.Host)
}

// apiHost is the Web API's base URL, parsed.
func (f *fetcher) apiHost() *url.URL {
	raw := "https://slack.com/api/"
	if f.cfg.APIURL != "" {
		raw = f.cfg.APIURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &url.URL{} // Validate refused it; nothing matches
	}
	return u
}

// downloadStatus is a download Slack answered with an HTTP error.
type downloadStatus struct {
	code       int
	retryAfter time.Duration
}

func (e *downloadStatus) Error() string {
	return fmt.Sprintf("slack answered HTTP %d", e.code)
}

// errLoginPage is Slack's answer to a file request it does not authorise.
var errLoginPage = errors.New("slack served a login page: the bot token lacks files:read (add the scope and reinstall the app)")

// download makes one GET of a file.
func (f *fetcher) download(ctx context.Context, client *http.Client, u *url.URL, att core.Attachment, maxBytes int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+f.cfg.BotToken.Reveal())
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() {
		// Drain a little so the connection goes back to the pool.
		_, _ = io.CopyN(io.Discard, res.Body, 64<<10)
		_ = res.Body.Close()
	}()
	if res.StatusCode != http.StatusOK {
		st := &downloadStatus{code: res.StatusCode}
		if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && secs > 0 {
			st.retryAfter = time.Duration(secs) * time.Second
		}
		return nil, st
	}
	if isHTML(res.Header.Get("Content-Type")) && !isHTML(att.MIME) {
		return nil, errLoginPage
	}
	data, err := bodylimit.Read(res, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("fetching %q: %w", att.Name, err)
	}
	return data, nil
}

// isHTML reports whether a Content-Type is HTML.
func isHTML(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// judgeDownload reads a failed download: a 429 waits what Slack asks (at
// least a second), a 5xx or a refused connection backs off, anything else
// (a 4xx, the login page, a file too large) fails at once.
func (f *fetcher) judgeDownload(err error) retry.Verdict {
	var st *downloadStatus
	switch {
	case errors.As(err, &st) && st.code == http.StatusTooManyRequests:
		return retry.Verdict{Kind: retry.RateLimited, After: max(st.retryAfter, time.Second)}
	case errors.As(err, &st) && st.code >= 500:
		return retry.Verdict{Kind: retry.Transient}
	case errors.As(err, &st):
		return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("fetching slack file: %w (is the file deleted, or not shared with the bot?)", err)}
	case retryable(err):
		return retry.Verdict{Kind: retry.Transient}
	}
	return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("fetching slack file: %w", f.scrub(err))}
}
