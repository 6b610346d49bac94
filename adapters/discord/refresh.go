package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/bwmarrin/discordgo"
	"github.com/parleybot/parley/adapters/discord/cdn"
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
	fresh, err := cdn.Refreshed(raw, u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !f.allowedOrigin(fresh) {
		return nil, fmt.Errorf("%s: discord answered a URL that is not on its CDN", what)
	}
	return fresh, nil
}
