package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/bodylimit"
	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/adapters/telegram/attach"
	"github.com/parleybot/parley/core"
)

// maxBotAPIFile is the largest file the Bot API hands to a bot.
const maxBotAPIFile = attach.MaxBotAPIFile

// defaultFileTimeout bounds one download attempt, headers and body: 20 MB
// (the Bot API's most) takes seconds on any link a bot runs on, so a
// download still going after a minute is stuck, and trying it again would
// only wait as long once more.
const defaultFileTimeout = 60 * time.Second

// fetcher downloads the files users send.
type fetcher struct {
	*state
}

// FetchAttachment downloads a file a user sent: getFile for a.Ref (its
// file_id), then the file from the Bot API's file endpoint. Both are
// retried like a send (a 429 waits what Telegram asks, a 5xx or a broken
// connection backs off; a download is a GET, so retrying it is safe).
// Each download attempt has a minute (defaultFileTimeout), and is not
// retried when it runs out. A file over maxBytes, by the size Telegram
// gives, by the download's Content-Length or by what arrives, is not
// downloaded whole: at most maxBytes+1 bytes are read and the error wraps
// core.ErrTooLarge; so does a file over the Bot API's 20 MB. Errors never
// hold the token (the download URL does).
func (fe *fetcher) FetchAttachment(ctx context.Context, att core.Attachment, maxBytes int64) ([]byte, error) {
	const what = "fetching telegram file"
	if att.Ref == "" {
		return nil, errors.New(what + ": the attachment has no file_id")
	}
	if att.Size > maxBytes {
		return nil, tooLarge(what, att.Size, maxBytes)
	}
	b, client, err := fe.fileClient()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	file, err := fe.getFile(ctx, b, att.Ref)
	switch {
	case err != nil:
		return nil, err
	case file.FileSize > maxBytes:
		return nil, tooLarge(what, file.FileSize, maxBytes)
	case file.FilePath == "":
		return nil, fmt.Errorf("%s: getFile gave no file_path for %s", what, att.Ref)
	}
	link := b.FileDownloadLink(file)
	return retry.Do(ctx, fe.retryPolicy(), what, []any{"file_id", att.Ref}, func(ctx context.Context) ([]byte, error) {
		return download(ctx, client, link, maxBytes)
	}, fe.judgeDownload(what))
}

// fileClient returns the bot and a client for downloads while the adapter
// runs. The client shares the adapter's pooled transport but has its own
// timeout: the API client's is sized for long polls.
func (fe *fetcher) fileClient() (*bot.Bot, *http.Client, error) {
	b, err := fe.live()
	if err != nil {
		return nil, nil, err
	}
	fe.mu.Lock()
	defer fe.mu.Unlock()
	timeout := fe.fileTimeout
	if timeout <= 0 {
		timeout = defaultFileTimeout
	}
	return b, &http.Client{Transport: fe.transport, Timeout: timeout}, nil
}

// getFile asks Telegram where the file fileID is, retrying like a send.
func (fe *fetcher) getFile(ctx context.Context, b *bot.Bot, fileID string) (*models.File, error) {
	const what = "fetching telegram file: getFile"
	var status *statusBox
	f, err := retry.Do(ctx, fe.retryPolicy(), what, []any{"file_id", fileID}, func(ctx context.Context) (*models.File, error) {
		rctx, box := withStatus(ctx)
		status = box
		return b.GetFile(rctx, &bot.GetFileParams{FileID: fileID})
	}, func(err error) retry.Verdict {
		final := fe.sendError(what, err)
		if errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "file is too big") {
			final = fmt.Errorf("%s: telegram hands bots files up to 20 MB only: %w", what, core.ErrTooLarge)
		}
		return fe.judge(err, status.code, final)
	})
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("%s: no file in the answer", what)
	}
	return f, nil
}

// statusError is a download the file endpoint answered with an error
// status. It names no URL: the URL holds the token.
type statusError struct {
	code       int
	retryAfter time.Duration
}

func (e *statusError) Error() string {
	return fmt.Sprintf("the file endpoint answered %d %s", e.code, http.StatusText(e.code))
}

// bodyError is a connection that broke while the file arrived.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the file: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// download GETs link and returns its body, reading at most maxBytes+1
// bytes.
func download(ctx context.Context, client *http.Client, link string, maxBytes int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, fmt.Errorf("making the download request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	// Closing a body not read to the end drops the connection, which is
	// what a refused oversized file should cost.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		e := &statusError{code: resp.StatusCode}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			e.retryAfter = time.Duration(s) * time.Second
		}
		return nil, e
	}
	data, err := bodylimit.Read(resp, maxBytes)
	switch {
	case errors.Is(err, core.ErrTooLarge):
		return nil, fmt.Errorf("fetching telegram file: %w", err)
	case err != nil:
		return nil, &bodyError{err: err}
	}
	return data, nil
}

// tooLarge is the error for a file of size bytes when at most maxBytes
// were asked for.
func tooLarge(what string, size, maxBytes int64) error {
	return fmt.Errorf("%s: %d bytes, over the %d asked for: %w", what, size, maxBytes, core.ErrTooLarge)
}

// judgeDownload reads a failed download attempt: a 429 waits what it asks
// (a second when it does not say), a 5xx or a broken connection backs off,
// a file over the limit, a timeout or any other answer fails. Errors are
// scrubbed: net/http's quote the URL, token and all.
func (fe *fetcher) judgeDownload(what string) func(error) retry.Verdict {
	return func(err error) retry.Verdict {
		var status *statusError
		var ue *url.Error
		var body *bodyError
		var nerr net.Error
		switch {
		case errors.Is(err, core.ErrTooLarge):
			return retry.Verdict{Kind: retry.Fail, Err: err}
		case errors.As(err, &status) && status.code == http.StatusTooManyRequests:
			return retry.Verdict{Kind: retry.RateLimited, After: max(status.retryAfter, time.Second)}
		case errors.As(err, &status) && status.code >= 500:
			return retry.Verdict{Kind: retry.Transient}
		case errors.As(err, &status):
			return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("%s: %w", what, err)}
		case errors.As(err, &nerr) && nerr.Timeout():
			return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("%s: gave up on a download that took too long: %w", what, fe.scrub(err))}
		case errors.As(err, &ue), errors.As(err, &body):
			return retry.Verdict{Kind: retry.Transient}
		}
		return retry.Verdict{Kind: retry.Fail, Err: fmt.Errorf("%s: %w", what, fe.scrub(err))}
	}
}
