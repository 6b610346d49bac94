// Package upload sends a message's files to Slack with its external
// upload flow: files.getUploadURLExternal for each file, a POST of its
// bytes to the upload_url Slack answers, then one
// files.completeUploadExternal that shares them all in the channel with
// the caption as initial_comment. The Slack adapter's SendFiles is a thin
// call to Send here; the adapter's retries, pacing and errors come in
// through Host.
//
// slack-go's UploadFileContext makes the same three calls, but for one
// file and with no retry between them: a failed POST would start over
// with a new upload_url, and several files would be several messages.
package upload

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

// Host is what Send needs of the adapter.
type Host struct {
	// Live is the adapter's Web API client (an error before Start or
	// after Stop).
	Live func() (*slack.Client, error)
	// Channel is the conversation msg goes to, the DM opened when msg
	// names a user.
	Channel func(ctx context.Context, msg core.OutboundMessage) (string, error)
	// Call makes one call with the adapter's retries: a 429 waits its
	// Retry-After, a 5xx or refused connection backs off, other errors
	// are final (a *core.PermanentError when retrying cannot fix them).
	// paced calls wait for the channel's pacer first.
	Call func(ctx context.Context, what, channel string, paced bool, do func(ctx context.Context) error) error
	// Send posts text as the adapter's Send does: the caption when it
	// cannot be the files' comment.
	Send func(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error)
	// Timeout bounds the whole send; MaxComment is the longest caption
	// (in characters, as rendered) that goes as initial_comment.
	Timeout    time.Duration
	MaxComment int
}

// Send uploads msg.Files in order and shares them as one message in msg's
// channel, with msg.Text as their comment: mrkdwn rendered by
// markup.Slack for rich text, & < > escaped otherwise. A caption over
// h.MaxComment, or one with choices (a comment holds no buttons), goes
// after the files as messages of its own through h.Send. A picture's
// alt_txt is the caption as plain text (cut at 1,000 characters). Every kind goes
// as a Slack file: Slack previews images and plays audio, and has no
// voice note a bot can send, so a voice note is an audio file. An empty
// file is a *core.PermanentError, before anything is sent; Slack's own
// size limit (1 GB) is far above what a message carries.
//
// The result's platform ids are the file ids (F…), in order, then the ts
// of the caption's messages when it went apart: files.completeUploadExternal
// answers the files, not the ts of the message Slack then makes in the
// channel (it appears a moment later).
func Send(ctx context.Context, h Host, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending slack files: %w", err)
	}
	if len(msg.Files) == 0 {
		return h.Send(ctx, msg)
	}
	api, err := h.Live()
	if err != nil {
		return core.SendResult{}, fmt.Errorf("sending slack files: %w", err)
	}
	for i, f := range msg.Files {
		if len(f.Data) == 0 {
			return core.SendResult{}, &core.PermanentError{Reason: fmt.Sprintf("file %d of %d (%q) is empty", i+1, len(msg.Files), nameOf(f))}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	channel, err := h.Channel(ctx, msg)
	if err != nil {
		return core.SendResult{}, err
	}
	comment := caption(msg)
	apart := strings.TrimSpace(msg.Text) != "" &&
		(utf8.RuneCountInString(comment) > h.MaxComment || len(msg.Choices) > 0)
	if apart {
		comment = ""
	}
	ids, err := share(ctx, h, api, channel, msg.Files, comment, altText(msg))
	res := core.SendResult{PlatformMessageIDs: ids}
	if err != nil || !apart {
		return res, err
	}
	text := msg
	text.ChannelThreadID, text.Files = channel, nil
	more, err := h.Send(ctx, text)
	res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
	if err != nil {
		return res, fmt.Errorf("sending the caption after the slack files: %w", err)
	}
	return res, nil
}

// share uploads files and completes them into channel with comment,
// returning their ids; alt is the pictures' alt text.
func share(ctx context.Context, h Host, api *slack.Client, channel string, files []core.OutboundFile, comment, alt string) ([]string, error) {
	summaries := make([]slack.FileSummary, 0, len(files))
	for i, f := range files {
		id, err := put(ctx, h, api, channel, f, alt)
		if err != nil {
			if len(files) > 1 {
				err = fmt.Errorf("file %d of %d: %w", i+1, len(files), err)
			}
			return nil, err
		}
		summaries = append(summaries, slack.FileSummary{ID: id, Title: nameOf(f)})
	}
	var done *slack.CompleteUploadExternalResponse
	err := h.Call(ctx, "sharing slack files", channel, true, func(ctx context.Context) error {
		var err error
		done, err = api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{
			Files: summaries, Channel: channel, InitialComment: comment,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(summaries))
	for _, f := range done.Files {
		ids = append(ids, f.ID)
	}
	if len(ids) == 0 {
		// Slack answered no files: the ids it gave for the upload are
		// still the files it shared.
		for _, s := range summaries {
			ids = append(ids, s.ID)
		}
	}
	return ids, nil
}

// put gets an upload_url for f and POSTs its bytes there, each step
// retried on its own: a failed POST is sent again to the same URL. A
// picture's alt text is alt.
func put(ctx context.Context, h Host, api *slack.Client, channel string, f core.OutboundFile, alt string) (string, error) {
	name := nameOf(f)
	if f.Kind != core.AttachImage {
		alt = ""
	}
	var u *slack.GetUploadURLExternalResponse
	err := h.Call(ctx, fmt.Sprintf("getting an upload URL for slack file %q", name), channel, false, func(ctx context.Context) error {
		var err error
		u, err = api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: len(f.Data), AltTxt: alt})
		return err
	})
	if err != nil {
		return "", err
	}
	if u.UploadURL == "" || u.FileID == "" {
		return "", fmt.Errorf("getting an upload URL for slack file %q: no upload_url or file_id in the answer", name)
	}
	err = h.Call(ctx, fmt.Sprintf("uploading slack file %q", name), channel, false, func(ctx context.Context) error {
		return api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Reader: bytes.NewReader(f.Data), Filename: name})
	})
	if err != nil {
		return "", err
	}
	return u.FileID, nil
}

// caption is msg.Text as a comment in mrkdwn.
func caption(msg core.OutboundMessage) string {
	if strings.TrimSpace(msg.Text) == "" {
		return ""
	}
	if msg.Format == core.FormatRichText {
		return markup.Slack(msg.Text)
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(msg.Text)
}

// maxAltText is the longest alt_txt Slack takes.
const maxAltText = 1000

// altText is the caption as plain text, at most maxAltText characters:
// what a screen reader says for a picture ("" without a caption).
func altText(msg core.OutboundMessage) string {
	alt := msg.Text
	if msg.Format == core.FormatRichText {
		alt = markup.Plain(alt)
	}
	alt = strings.TrimSpace(alt)
	if utf8.RuneCountInString(alt) > maxAltText {
		alt = string([]rune(alt)[:maxAltText-1]) + "…"
	}
	return alt
}

// nameOf is f's name, "file" when it has none.
func nameOf(f core.OutboundFile) string {
	if strings.TrimSpace(f.Name) == "" {
		return "file"
	}
	return f.Name
}
