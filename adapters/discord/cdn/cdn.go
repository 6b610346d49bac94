// Package cdn downloads files from Discord's CDN: without credentials,
// bounded in bytes, its errors without the URLs' signature parameters;
// and it reads those parameters (an attachment URL expires, ex, and is
// refreshed through the API by the adapter).
package cdn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleybot/parley/adapters/bodylimit"
	"github.com/parleybot/parley/core"
)

// defaultRetryAfter is the wait after a 429 without Retry-After.
const defaultRetryAfter = time.Second

// Expired reports whether u is an attachment URL past its ex at now.
func Expired(u *url.URL, now time.Time) bool {
	ex := u.Query().Get("ex")
	if ex == "" || !IsAttachment(u.Path) {
		return false
	}
	sec, err := strconv.ParseInt(ex, 16, 64)
	return err == nil && now.Unix() >= sec
}

// IsAttachment reports whether a CDN path is an attachment's (not a
// sticker's, whose URL neither expires nor refreshes).
func IsAttachment(p string) bool { return strings.HasPrefix(p, "/attachments/") }

// Gone reports whether a download failed because its URL is no longer
// valid: Discord's CDN answers an expired or badly signed URL 404 (or 403).
func Gone(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusForbidden)
}

// RedirectError is a redirect a download does not follow: final.
type RedirectError struct{ Reason string }

func (e RedirectError) Error() string { return e.Reason }

// StatusError is a download Discord answered with an error status.
type StatusError struct {
	Status     int
	RetryAfter time.Duration // for a 429
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
}

// Download GETs u without credentials and reads at most maxBytes+1 bytes
// of it: one more than allowed tells a file over the limit. Errors name
// the URL without its query (Discord's signature parameters).
func Download(ctx context.Context, client *http.Client, u *url.URL, maxBytes int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("making the request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = Redact(ue.URL)
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header)}
	}
	data, err := bodylimit.Read(resp, maxBytes)
	if err != nil {
		if errors.Is(err, core.ErrTooLarge) {
			return nil, err
		}
		// A body cut off on the way is worth another try.
		return nil, &url.Error{Op: "Get", URL: Redact(u.String()), Err: err}
	}
	return data, nil
}

// retryAfter reads a 429's Retry-After (seconds, possibly fractional).
func retryAfter(h http.Header) time.Duration {
	secs, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After")), 64)
	switch {
	case err != nil || secs <= 0 || math.IsNaN(secs):
		return defaultRetryAfter
	case secs > 3600:
		// Longer than any download's deadline: retry.Do gives up at once.
		secs = 3600
	}
	return time.Duration(secs * float64(time.Second))
}

// Redact is raw without its query and fragment: Discord's attachment URLs
// carry signature parameters that errors and logs need not show.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// Refreshed finds u's fresh URL in the answer of POST
// /attachments/refresh-urls: the same file (path), signed anew.
func Refreshed(answer []byte, u *url.URL) (*url.URL, error) {
	var out struct {
		RefreshedURLs []struct {
			Original  string `json:"original"`
			Refreshed string `json:"refreshed"`
		} `json:"refreshed_urls"`
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	for _, r := range out.RefreshedURLs {
		if r.Original != u.String() || r.Refreshed == "" {
			continue
		}
		fresh, err := url.Parse(r.Refreshed)
		if err != nil || fresh.Path != u.Path {
			return nil, errors.New("discord answered a URL that is not the same file")
		}
		return fresh, nil
	}
	return nil, errors.New("discord refreshed nothing (the file may be deleted)")
}
