package slack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// sender posts to Slack: it splits and renders replies, paces them per
// channel and retries what Slack did not act on.
type sender struct {
	*state
	*users
}

// Send delivers msg.Text with chat.postMessage to the DM
// msg.ChannelThreadID (or, when that is a user id or empty, to the DM with
// that user or msg.ChannelUserID, found or opened with conversations.open),
// split into parts of at most 4,000 characters, in order. & < > are
// escaped, so the text shows as written and cannot ping anyone. Rich text
// (core.FormatRichText) is rendered and split as mrkdwn with
// markup.SplitSlack, every part formatted; should Slack refuse a part's
// markup (invalid_blocks, invalid_blocks_format, invalid_arguments), that
// part alone is posted again as its plain text with mrkdwn off. A part
// that gets 429 is sent again after the Retry-After Slack asks for, once:
// a 429 means Slack did not post it. A 5xx answer or a refused connection
// is retried with backoff; the whole send is bounded by a deadline. The
// result holds the ts of the delivered parts even when a later part
// fails.
func (s *sender) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending slack message: %w", err)
	}
	api, err := s.live()
	if err != nil {
		return core.SendResult{}, fmt.Errorf("sending slack message: %w", err)
	}
	if strings.TrimSpace(msg.Text) == "" {
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.sendTimeout)
	defer cancel()
	channel, err := s.channelOf(ctx, msg)
	if err != nil {
		return core.SendResult{}, err
	}
	posts := textPosts(msg)
	if len(posts) == 0 {
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	return s.post(ctx, api, channel, posts)
}

// channelOf is the conversation to post msg in: its channel thread, or
// the DM with the user it names.
func (s *sender) channelOf(ctx context.Context, msg core.OutboundMessage) (string, error) {
	channel := msg.ChannelThreadID
	if channel == "" && msg.ChannelUserID != "" {
		channel = msg.ChannelUserID
	}
	if !isConversationID(channel) {
		return "", &core.PermanentError{Reason: fmt.Sprintf("channel thread id %q is not a slack conversation id", channel)}
	}
	if isUserID(channel) {
		// Addressed by user: post into the bot's DM with them, the
		// channel their own messages arrive from.
		return s.OpenDM(ctx, channel)
	}
	return channel, nil
}

// post is one chat.postMessage call of a send.
type post struct {
	text string // as given to MsgOptionText: what a grown message shows
	opts []slack.MsgOption
	// instead, for a post in mrkdwn, are the posts to make should Slack
	// refuse its markup: the same text, plain; insteadText their text,
	// escaped.
	instead     [][]slack.MsgOption
	insteadText []string
	// section is the text as Slack stores it (escaped mrkdwn), for the
	// blocks of a post with buttons; buttons is true for that post.
	section string
	buttons bool
}

// textPosts is msg's text as the chat.postMessage calls that deliver it,
// msg's choices as buttons on the last (buttons.go).
func textPosts(msg core.OutboundMessage) []post {
	var posts []post
	if msg.Format == core.FormatRichText {
		for _, p := range markup.SplitSlack(msg.Text, maxMessageLength) {
			if strings.TrimSpace(p.Text) == "" {
				continue
			}
			instead, texts := plainPosts(p.Plain)
			posts = append(posts, post{text: p.Text, opts: []slack.MsgOption{slack.MsgOptionText(p.Text, false)},
				instead: instead, insteadText: texts, section: p.Text})
		}
		return withChoices(posts, msg.Choices)
	}
	for _, p := range textsplit.Split(msg.Text, maxMessageLength) {
		posts = append(posts, post{text: p, opts: []slack.MsgOption{slack.MsgOptionText(p, true)}, section: slackutilsx.EscapeMessage(p)})
	}
	return withChoices(posts, msg.Choices)
}

// plainPosts posts plain text as written: escaped, mrkdwn off so its
// * _ ~ style nothing. texts are the posts' texts, escaped.
func plainPosts(plain string) (posts [][]slack.MsgOption, texts []string) {
	for _, p := range textsplit.Split(plain, maxMessageLength) {
		if strings.TrimSpace(p) != "" {
			posts = append(posts, []slack.MsgOption{slack.MsgOptionText(p, true), slack.MsgOptionDisableMarkdown()})
			texts = append(texts, slackutilsx.EscapeMessage(p))
		}
	}
	return posts, texts
}

// post makes the calls of one logical send in order.
func (s *sender) post(ctx context.Context, api *slack.Client, channel string, posts []post) (core.SendResult, error) {
	ids := make([]string, 0, len(posts))
	for i, p := range posts {
		ts, err := s.postPart(ctx, api, channel, p.opts...)
		switch {
		case err == nil:
			ids = append(ids, ts)
		case len(p.instead) > 0:
			var more []string
			more, err = s.postInstead(ctx, api, channel, p, err, i, len(posts))
			ids = append(ids, more...)
		}
		if err != nil {
			if len(posts) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(posts), err)
			}
			return core.SendResult{PlatformMessageIDs: ids}, err
		}
	}
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// postInstead handles a post in mrkdwn that failed with err: when Slack
// refused its markup, the refusal is logged with what Slack pointed at and
// p.instead is posted. Any other error is returned as it is. part and
// parts number the post for the log.
func (s *sender) postInstead(ctx context.Context, api *slack.Client, channel string, p post, err error, part, parts int) ([]string, error) {
	pointer, refused := markupRefused(err)
	if !refused {
		return nil, err
	}
	s.log.Warn("slack refused a message's markup; posting it again as plain text",
		"channel", channel, "part", part+1, "parts", parts, "error", errorCode(err), "pointer", pointer)
	var ids []string
	for _, opts := range p.instead {
		ts, err := s.postPart(ctx, api, channel, opts...)
		if err != nil {
			return ids, fmt.Errorf("posting the plain text of a refused message: %w", err)
		}
		ids = append(ids, ts)
	}
	return ids, nil
}

// markupRefused reports whether err is Slack refusing a post's markup
// (invalid_blocks, invalid_blocks_format, invalid_arguments), and the JSON
// pointers its response_metadata names ("" when none).
func markupRefused(err error) (string, bool) {
	switch errorCode(err) {
	case "invalid_blocks", "invalid_blocks_format", "invalid_arguments":
	default:
		return "", false
	}
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		return "", true
	}
	return wire.JSONPointers(se.ResponseMetadata.Messages), true
}

// postPart posts one message, retrying what a retry can fix without
// posting it twice. Every attempt waits for the pacer first: each is a
// call Slack counts.
func (s *sender) postPart(ctx context.Context, api *slack.Client, channel string, opts ...slack.MsgOption) (string, error) {
	var ts string
	err := s.call(ctx, "sending slack message", channel, true, func(ctx context.Context) error {
		var err error
		_, ts, err = api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	if err == nil && ts == "" {
		return "", errors.New("sending slack message: no ts in the answer")
	}
	return ts, err
}

// paceError is the pacer's error: final, as it is.
type paceError struct{ error }

// retryPolicy is how the adapter retries a Web API call; a rate limit's
// wait past the send's deadline gives up at once.
func (st *state) retryPolicy() retry.Policy {
	return retry.Policy{RateLimits: st.maxRateLimitRetries, Failures: st.maxServerRetries, Backoff: st.serverBackoff,
		GiveUpPastDeadline: true, Clock: st.clock, Log: st.log, Scrub: st.scrub, Platform: "slack"}
}

// judge reads a failed Web API call: a rate limit waits what Slack asks
// (at least a second), a failure Slack did not act on backs off, anything
// else fails with final.
func (st *state) judge(err, final error) retry.Verdict {
	var limited *slack.RateLimitedError
	switch {
	case errors.As(err, &limited):
		return retry.Verdict{Kind: retry.RateLimited, After: max(limited.RetryAfter, time.Second)}
	case retryable(err):
		return retry.Verdict{Kind: retry.Transient}
	}
	return retry.Verdict{Kind: retry.Fail, Err: final}
}

// retryable reports whether a failed call may be repeated without posting
// twice: Slack answered 5xx or service_unavailable (it did not take the
// message), or the connection could not even be made. internal_error and
// fatal_error are not retried: Slack says part of the call may have
// succeeded.
func retryable(err error) bool {
	var status slack.StatusCodeError
	if errors.As(err, &status) {
		return status.Code >= 500
	}
	if errorCode(err) == "service_unavailable" {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// errorCode is the error code of a Slack Web API answer with ok:false,
// or "" for other errors.
func errorCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

// isAuthError reports whether Slack refused the token.
func isAuthError(err error) bool {
	switch errorCode(err) {
	case "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive", "not_allowed_token_type":
		return true
	}
	return false
}

// apiError explains a Web API error; the ones retrying cannot fix are
// *core.PermanentError. Slack's error code stays in the chain, for
// errorCode.
func (st *state) apiError(what string, err error) error {
	code := errorCode(err)
	// Slack's answer stays whole in the chain (its response_metadata
	// names what a refused post got wrong); it holds no secret.
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		se.Err = code
	}
	if reason := wire.PermanentReason(code); reason != "" {
		return &core.PermanentError{Reason: reason, Err: fmt.Errorf("slack error %w", se)}
	}
	var status slack.StatusCodeError
	switch {
	case isAuthError(err):
		return fmt.Errorf("%s: %s (is bot_token wrong or revoked?)", what, code)
	case code == "missing_scope":
		return fmt.Errorf("%s: missing_scope (the bot token needs chat:write, files:write, im:history, im:write and users:read)", what)
	case code != "":
		return fmt.Errorf("%s: slack error %w", what, se)
	case errors.As(err, &status) && status.Code >= 400 && status.Code < 500 && status.Code != http.StatusRequestTimeout:
		return &core.PermanentError{Reason: fmt.Sprintf("slack rejected the request (HTTP %d)", status.Code), Err: st.scrub(err)}
	default:
		return fmt.Errorf("%s: %w", what, st.scrub(err))
	}
}

// isConversationID reports whether id looks like a Slack conversation or
// user id: an uppercase letter and then uppercase letters and digits.
func isConversationID(id string) bool {
	if len(id) < 2 || len(id) > 32 || id[0] < 'A' || id[0] > 'Z' {
		return false
	}
	return strings.IndexFunc(id, func(r rune) bool { return (r < 'A' || r > 'Z') && (r < '0' || r > '9') }) < 0
}

// isUserID reports whether id is a Slack user id (U… or W… for
// Enterprise Grid) rather than a conversation id.
func isUserID(id string) bool {
	return isConversationID(id) && (id[0] == 'U' || id[0] == 'W')
}

// OpenDM returns the id of the DM with userID, opening it if needed
// (conversations.open), for conversations addressed by user id. An unknown
// or deactivated user is a *core.PermanentError.
func (u *users) OpenDM(ctx context.Context, userID string) (channelID string, err error) {
	api, err := u.live()
	if err != nil {
		return "", fmt.Errorf("opening slack DM: %w", err)
	}
	if !isConversationID(userID) {
		return "", &core.PermanentError{Reason: fmt.Sprintf("user id %q is not a slack user id", userID)}
	}
	ctx, cancel := context.WithTimeout(ctx, u.sendTimeout)
	defer cancel()
	const what = "opening slack DM"
	ch, err := retry.Do(ctx, u.retryPolicy(), what, []any{"user_id", userID}, func(ctx context.Context) (*slack.Channel, error) {
		ch, _, _, err := api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{userID}, ReturnIM: true})
		return ch, err
	}, func(err error) retry.Verdict { return u.judge(err, u.apiError(what, err)) })
	if err != nil {
		return "", err
	}
	if ch == nil || ch.ID == "" {
		return "", errors.New("opening slack DM: no channel in the answer")
	}
	return ch.ID, nil
}
