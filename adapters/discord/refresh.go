package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Discord's attachment URLs are signed and expire: ex (the expiry, Unix
// seconds in hex), is and hm. A file from earlier in a long session, whose
// URL is past its ex, is first given a fresh URL (POST
// /attachments/refresh-urls), and so is one the CDN answers 404 or 403
// for, once: it was shown as a description before, not as the file.

// endpointRefreshURLs is Discord's endpoint that signs attachment URLs
// afresh.
var endpointRefreshURLs = discordgo.EndpointAPI + "attachments/refresh-urls"

// refreshBucket is the one rate-limit bucket of the refreshes.
const refreshBucket = "attachments/refresh-urls"

// expired reports whether u is an attachment URL past its ex at now.
func expired(u *url.URL, now time.Time) bool {
	ex := u.Query().Get("ex")
	if ex == "" || !isAttachmentPath(u.Path) {
		return false
	}
	sec, err := strconv.ParseInt(ex, 16, 64)
	return err == nil && now.Unix() >= sec
}

// isAttachmentPath reports whether a CDN path is an attachment's (not a
// sticker's, whose URL neither expires nor refreshes).
func isAttachmentPath(p string) bool { return strings.HasPrefix(p, "/attachments/") }

// gone reports whether a download failed because its URL is no longer
// valid: Discord's CDN answers an expired or badly signed URL 404 (or 403).
func gone(err error) bool {
	var se *statusError
	return errors.As(err, &se) && (se.status == http.StatusNotFound || se.status == http.StatusForbidden)
}

// refreshURL asks Discord for a freshly signed URL of the attachment at u.
func (f *fetcher) refreshURL(ctx context.Context, u *url.URL) (*url.URL, error) {
	const what = "refreshing a discord attachment URL"
	s, err := f.live()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	body := map[string][]string{"attachment_urls": {u.String()}}
	raw, err := retrying(ctx, f.state, s, refreshBucket, "", what, []any{"path", u.Path}, func(ctx context.Context) ([]byte, error) {
		return s.RequestWithBucketID(http.MethodPost, endpointRefreshURLs, body, refreshBucket,
			discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		RefreshedURLs []struct {
			Original  string `json:"original"`
			Refreshed string `json:"refreshed"`
		} `json:"refreshed_urls"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	for _, r := range out.RefreshedURLs {
		if r.Original != u.String() || r.Refreshed == "" {
			continue
		}
		fresh, err := url.Parse(r.Refreshed)
		if err != nil || !f.allowedOrigin(fresh) || fresh.Path != u.Path {
			return nil, fmt.Errorf("%s: discord answered a URL that is not the same file on its CDN", what)
		}
		return fresh, nil
	}
	return nil, fmt.Errorf("%s: discord refreshed nothing (the file may be deleted)", what)
}
