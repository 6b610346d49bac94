package discord

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/discord/cdn"
	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/core"
)

// fetcher downloads the files users send (FetchAttachment), from
// Discord's origins only.
type fetcher struct{ *state }

var _ core.AttachmentFetcher = (*Adapter)(nil)

const (
	// defaultCDN is where Discord serves attachments and stickers.
	defaultCDN = "https://cdn.discordapp.com"
	// defaultMedia is Discord's media proxy, which serves the same files
	// (an attachment's proxy_url, a sticker's image).
	defaultMedia = "https://media.discordapp.net"
	// defaultAPI is Discord's API origin when api_url is not set.
	defaultAPI = "https://discord.com"
	// fetchTimeout bounds one download, its retries and waits included:
	// media.max_bytes (20 MiB by default) takes seconds from Discord's
	// CDN, so a minute is only reached when something is wrong.
	fetchTimeout = 60 * time.Second
	// maxRedirects bounds the redirects a download follows (each one on
	// an allowed origin).
	maxRedirects = 3
)

// attachmentsOf describes the files of a DM: its attachments in order,
// then its stickers. An attachment of a voice message (flag
// IS_VOICE_MESSAGE) is a voice note; the others are told apart by their
// content type.
func (g *gateway) attachmentsOf(m *discordgo.Message) []core.Attachment {
	var out []core.Attachment
	voice := m.Flags&discordgo.MessageFlagsIsVoiceMessage != 0
	for _, f := range m.Attachments {
		if f == nil || f.URL == "" {
			continue // nothing to fetch: a malformed file is no file
		}
		mimeType := strings.TrimSpace(f.ContentType)
		out = append(out, core.Attachment{
			Kind:    kindOf(mimeType, voice),
			MIME:    mimeType,
			Size:    max(int64(f.Size), 0),
			Name:    f.Filename,
			Ref:     f.URL,
			Seconds: seconds(f.DurationSecs),
			Width:   max(f.Width, 0),
			Height:  max(f.Height, 0),
		})
	}
	for _, st := range m.StickerItems {
		if st == nil || !isSnowflake(st.ID) {
			// The id goes into the Ref's path: nothing else may pass.
			continue
		}
		ext, mimeType := stickerFormat(st.FormatType)
		out = append(out, core.Attachment{
			Kind: core.AttachSticker,
			MIME: mimeType,
			Name: st.Name,
			// Discord's sticker_items carry no emoji, so Emoji stays empty.
			Ref: g.cdnOrigin() + "/stickers/" + st.ID + "." + ext,
		})
	}
	return out
}

// kindOf is the kind of an attachment with content type mimeType; voice
// says it belongs to a voice message.
func kindOf(mimeType string, voice bool) core.AttachmentKind {
	k := core.KindOf(mimeType)
	if base, _, _ := strings.Cut(mimeType, ";"); voice && (k == core.AttachAudio || strings.TrimSpace(base) == "") {
		return core.AttachVoice
	}
	return k
}

// stickerFormat is the file extension on the CDN and the MIME type of a
// sticker of format f (Lottie stickers are JSON animations).
func stickerFormat(f discordgo.StickerFormat) (ext, mimeType string) {
	switch f {
	case discordgo.StickerFormatTypeAPNG:
		return "png", "image/apng"
	case discordgo.StickerFormatTypeLottie:
		return "json", "application/json"
	case discordgo.StickerFormatTypeGIF:
		return "gif", "image/gif"
	}
	return "png", "image/png"
}

// seconds rounds a duration Discord gives in seconds; a voice note under
// half a second is still 1.
func seconds(d float64) int {
	switch {
	case d <= 0 || math.IsNaN(d):
		return 0
	case d > math.MaxInt32:
		return math.MaxInt32
	}
	return max(int(math.Round(d)), 1)
}

// apiOrigin is the origin REST calls go to: api_url, else Discord's.
func (st *state) apiOrigin() string {
	if st.cfg.APIURL != "" {
		if u, err := parseOrigin(st.cfg.APIURL); err == nil {
			return u.String()
		}
	}
	return defaultAPI
}

// cdnOrigin is where attachments and stickers are fetched from: Discord's
// CDN, or the api_url origin when it is set (a test fake or a proxy
// stands in for both).
func (st *state) cdnOrigin() string {
	if st.cfg.APIURL != "" {
		return st.apiOrigin()
	}
	return defaultCDN
}

// allowedOrigin reports whether u is on an origin files are fetched from.
// A Ref comes back from storage, so it is not trusted to point anywhere
// (the adapter's client must not become a way to reach other hosts).
func (f *fetcher) allowedOrigin(u *url.URL) bool {
	if u == nil || u.User != nil {
		return false
	}
	origin := strings.ToLower(u.Scheme + "://" + u.Host)
	allowed := []string{f.apiOrigin(), f.cdnOrigin()}
	if f.cfg.APIURL == "" {
		allowed = append(allowed, defaultMedia)
	}
	for _, o := range allowed {
		if origin == strings.ToLower(o) {
			return true
		}
	}
	return false
}

// FetchAttachment downloads att from Discord's CDN (att.Ref, the
// attachment's URL or the sticker's image). Only URLs on the CDN or API
// origin are fetched (with api_url set, its origin stands in for both);
// the bot token is never sent, as the CDN needs none. A file over max
// bytes (by its described size, its Content-Length, or the bytes that
// arrive) is not downloaded whole: the error wraps core.ErrTooLarge. A 429
// waits Retry-After, a 5xx or a lost connection is retried with backoff,
// like the adapter's other calls; the whole download, retries included,
// is bounded by 60 s.
func (f *fetcher) FetchAttachment(ctx context.Context, att core.Attachment, maxBytes int64) ([]byte, error) {
	what := "fetching discord attachment"
	if att.Name != "" {
		what += " " + strconv.Quote(att.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	u, err := url.Parse(att.Ref)
	if err != nil || att.Ref == "" {
		return nil, fmt.Errorf("%s: the reference is not a URL", what)
	}
	if !f.allowedOrigin(u) {
		return nil, fmt.Errorf("%s: refusing to fetch from %q: not Discord's CDN or the configured api_url", what, u.Scheme+"://"+u.Host)
	}
	if att.Size > maxBytes {
		return nil, fmt.Errorf("%s: %d bytes, over %d: %w", what, att.Size, maxBytes, core.ErrTooLarge)
	}
	transport, runCtx, err := f.fetchTransport()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return cdn.RedirectError{Reason: "too many redirects"}
			}
			if !f.allowedOrigin(r.URL) {
				return cdn.RedirectError{Reason: fmt.Sprintf("refusing a redirect to %q", r.URL.Scheme+"://"+r.URL.Host)}
			}
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	// Stop ends a download in flight, as it ends sends.
	defer context.AfterFunc(runCtx, cancel)()
	refreshed := false
	if cdn.Expired(u, f.clock.Now()) {
		if fresh, err := f.refreshURL(ctx, u); err == nil {
			u, refreshed = fresh, true
		} else {
			f.log.Warn("could not refresh an expired discord attachment URL; trying it as it is", "err", err)
		}
	}
	data, err := f.get(ctx, client, u, maxBytes, what)
	if cdn.Gone(err) && cdn.IsAttachment(u.Path) && !refreshed {
		// Expired by Discord's clock if not by ours, or signed anew.
		fresh, rerr := f.refreshURL(ctx, u)
		if rerr != nil {
			return nil, fmt.Errorf("%w (and %w)", err, rerr)
		}
		return f.get(ctx, client, fresh, maxBytes, what)
	}
	return data, err
}

// get downloads u with the adapter's retries (see FetchAttachment).
func (f *fetcher) get(ctx context.Context, client *http.Client, u *url.URL, maxBytes int64, what string) ([]byte, error) {
	p := retry.Policy{RateLimits: f.maxRateLimitRetries, Failures: f.maxServerRetries, Backoff: f.serverBackoff,
		GiveUpPastDeadline: true, Clock: f.clock, Log: f.log, Scrub: f.scrub, Platform: "discord"}
	return retry.Do(ctx, p, what, []any{"host", u.Host, "path", u.Path}, func(ctx context.Context) ([]byte, error) {
		return cdn.Download(ctx, client, u, maxBytes)
	}, func(err error) retry.Verdict {
		var se *cdn.StatusError
		switch {
		case errors.Is(err, core.ErrTooLarge):
			return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("%s: %w", what, err)}
		case errors.As(err, &se) && se.Status == http.StatusTooManyRequests:
			return retry.Verdict{Kind: retry.RateLimited, After: se.RetryAfter}
		case errors.As(err, &se) && se.Status >= 500:
			return retry.Verdict{Kind: retry.Transient}
		case errors.As(err, &se):
			return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("%s: %w", what, err)}
		}
		var ue *url.Error
		var re cdn.RedirectError
		if errors.As(err, &ue) && !errors.As(err, &re) {
			// The request or its answer was lost on the way (a refused
			// or broken connection).
			return retry.Verdict{Kind: retry.Transient}
		}
		return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("%s: %w", what, f.scrub(err))}
	})
}

// fetchTransport returns the adapter's pooled transport and run context
// while it runs.
func (f *fetcher) fetchTransport() (http.RoundTripper, context.Context, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.stopped:
		return nil, nil, errors.New("discord adapter is stopped")
	case f.transport == nil || f.runCtx == nil:
		return nil, nil, errors.New("discord adapter is not started")
	}
	return f.transport, f.runCtx, nil
}
