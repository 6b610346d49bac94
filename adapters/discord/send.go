package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/discord/nonce"
	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// sender creates messages: it splits and renders replies, paces them
// per channel, retries what Discord did not act on, and shows typing.
type sender struct{ *state }

// Discord's JSON error codes the adapter tells apart.
const (
	codeUnknownChannel   = 10003
	codeUnknownUser      = 10013
	codeCannotSendToUser = 50007
	codeInvalidFormBody  = 50035
)

// nonceWindow is how long Discord is relied on to remember an enforced
// nonce (its documentation says "a few minutes").
const nonceWindow = 2 * time.Minute

// messageBody is POST /channels/{id}/messages. discordgo v0.29's
// MessageSend has no nonce fields, so the adapter sends its own body
// through the session's request path (rate-limit buckets included).
type messageBody struct {
	Content string                    `json:"content"`
	Embeds  []*discordgo.MessageEmbed `json:"embeds,omitempty"`
	Nonce   string                    `json:"nonce,omitempty"`
	// EnforceNonce makes Discord return the message it already created
	// with this nonce instead of creating another.
	EnforceNonce    bool                              `json:"enforce_nonce,omitempty"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	// Components are the message's buttons (the last part of a message
	// with choices).
	Components []discordgo.MessageComponent `json:"components,omitempty"`
	// formatted marks Content as rendered Markdown; plain is its text
	// without markup, sent instead should Discord refuse Content.
	formatted bool
	plain     string
}

// noPings parses no mentions: text from the model never pings anyone.
func noPings() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// Send delivers msg.Text to the DM channel msg.ChannelThreadID, split into
// parts of at most 2000 characters, in order. Rich text
// (core.FormatRichText) is rendered and split with markup.SplitDiscord,
// every part formatted; should Discord refuse a part as invalid (400,
// code 50035), that part alone is sent again as its plain text, escaped so
// Discord shows it as written. Each part carries a nonce derived from
// msg.IdempotencyKey, so Discord drops a part it already has. A part that
// gets 429 is sent again after the delay Discord asks for; 5xx answers
// and broken connections are retried with backoff; the whole send is
// bounded by a deadline. The result holds the ids of the delivered parts
// even when a later part fails. msg.Choices are buttons on the last part
// (buttons.go).
func (sd *sender) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	s, err := sd.sendable(ctx, msg, "sending discord message")
	if err != nil {
		return core.SendResult{}, err
	}
	bodies := withChoices(textBodies(msg), msg.Choices)
	if len(bodies) == 0 {
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	return sd.deliver(ctx, s, msg, bodies)
}

// sendable checks that msg can be sent now and returns the session.
func (sd *sender) sendable(ctx context.Context, msg core.OutboundMessage, what string) (*discordgo.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s, err := sd.live()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !isSnowflake(msg.ChannelThreadID) {
		return nil, &core.PermanentError{Reason: fmt.Sprintf("channel thread id %q is not a discord channel id", msg.ChannelThreadID)}
	}
	return s, nil
}

// textBodies is msg's text as the messages to send.
func textBodies(msg core.OutboundMessage) []*messageBody {
	var out []*messageBody
	if msg.Format != core.FormatRichText {
		for _, p := range textsplit.Split(msg.Text, maxMessageLength) {
			out = append(out, &messageBody{Content: p})
		}
		return out
	}
	for _, p := range markup.SplitDiscord(msg.Text, maxMessageLength) {
		if strings.TrimSpace(p.Text) != "" {
			out = append(out, &messageBody{Content: p.Text, formatted: true, plain: p.Plain})
		}
	}
	return out
}

// escapedParts is plain text as message contents Discord shows as
// written. It is split before escaping, so no escape is cut; a part whose
// escapes take it over the limit is split again at half, which always
// fits.
func escapedParts(plain string) []string {
	var out []string
	for _, p := range textsplit.Split(plain, maxMessageLength) {
		if e := markup.EscapeDiscord(p); utf8.RuneCountInString(e) <= maxMessageLength {
			out = append(out, e)
			continue
		}
		for _, q := range textsplit.Split(p, maxMessageLength/2) {
			out = append(out, markup.EscapeDiscord(q))
		}
	}
	return out
}

// deliver sends the messages of one logical send in order. Message i
// carries the nonce of msg.IdempotencyKey and i, so a resend of the same
// send is dropped by Discord.
func (sd *sender) deliver(ctx context.Context, s *discordgo.Session, msg core.OutboundMessage, bodies []*messageBody) (core.SendResult, error) {
	key := msg.IdempotencyKey
	if key == "" {
		// Still dedupe this call's own retries.
		key = nonce.RandomKey()
	}
	ctx, cancel := context.WithTimeout(ctx, sd.sendTimeout)
	defer cancel()
	ids, err := sd.deliverFrom(ctx, s, msg.ChannelThreadID, key, bodies, 0)
	return core.SendResult{PlatformMessageIDs: ids}, err
}

// deliverFrom sends bodies[from:] as deliver does (a finished stream sends
// the parts that did not grow). It returns the ids of the messages
// delivered, even when a later part fails.
func (sd *sender) deliverFrom(ctx context.Context, s *discordgo.Session, channelID, key string, bodies []*messageBody, from int) ([]string, error) {
	ids := make([]string, 0, len(bodies)-from)
	for i := from; i < len(bodies); i++ {
		body := bodies[i]
		body.Nonce, body.EnforceNonce, body.AllowedMentions = nonce.For(key, i), true, noPings()
		id, err := sd.sendPart(ctx, s, channelID, body)
		switch {
		case err == nil:
			ids = append(ids, id)
		case body.formatted:
			var more []string
			more, err = sd.resendPlain(ctx, s, channelID, body, err, fmt.Sprintf("%s.%dp", key, i), i, len(bodies))
			ids = append(ids, more...)
		}
		if err != nil {
			if len(bodies) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(bodies), err)
			}
			return ids, err
		}
	}
	return ids, nil
}

// resendPlain handles a formatted part that failed with err: when Discord
// refused it as invalid (400, code 50035), the refusal is logged with the
// field Discord named and the part's plain text goes instead, escaped and
// split again should the escapes take it over the limit. Its messages
// carry nonces of their own, derived from key. Any other error is
// returned as it is. part and parts number the part for the log.
func (sd *sender) resendPlain(ctx context.Context, s *discordgo.Session, channelID string, body *messageBody, err error, key string, part, parts int) ([]string, error) {
	field, refused := invalidFormBody(err)
	if !refused {
		return nil, err
	}
	sd.log.Warn("discord refused a message's markup; sending it again as plain text",
		"channel_id", channelID, "part", part+1, "parts", parts, "field", field, "err", err)
	plain := escapedParts(body.plain)
	if len(plain) == 0 {
		return nil, fmt.Errorf("sending the plain text of a refused message: %w", err)
	}
	var ids []string
	for j, p := range plain {
		b := &messageBody{Content: p, Nonce: nonce.For(key, j), EnforceNonce: true, AllowedMentions: noPings()}
		if j == len(plain)-1 {
			b.Components = body.Components // the buttons stay on the last part
		}
		id, err := sd.sendPart(ctx, s, channelID, b)
		if err != nil {
			return ids, fmt.Errorf("sending the plain text of a refused message: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// invalidFormBody reports whether err is Discord's 400 Invalid Form Body
// (code 50035), and the first field its errors name ("content",
// "embeds.0.description"; "" when it names none).
func invalidFormBody(err error) (string, bool) {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil || re.Message.Code != codeInvalidFormBody {
		return "", false
	}
	var body struct {
		Errors map[string]json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(re.ResponseBody, &body) != nil {
		return "", true
	}
	return firstField(body.Errors), true
}

// firstField is the path of the first field in Discord's nested errors
// object, in key order: {"content":{"_errors":[...]}} is "content",
// {"embeds":{"0":{"description":{"_errors":[...]}}}} "embeds.0.description".
func firstField(errs map[string]json.RawMessage) string {
	keys := make([]string, 0, len(errs))
	for k := range errs {
		if k != "_errors" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	var inner map[string]json.RawMessage
	if json.Unmarshal(errs[keys[0]], &inner) != nil {
		return keys[0]
	}
	if rest := firstField(inner); rest != "" {
		return keys[0] + "." + rest
	}
	return keys[0]
}

// sendPart sends one message, retrying what a retry can fix. Retrying is
// safe even when the first attempt may have been delivered: the nonce
// makes Discord return that message instead of creating another.
func (sd *sender) sendPart(ctx context.Context, s *discordgo.Session, channelID string, body *messageBody) (string, error) {
	const what = "sending discord message"
	endpoint := discordgo.EndpointChannelMessages(channelID)
	raw, err := retrying(ctx, sd.state, s, endpoint, channelID, what, []any{"channel_id", channelID}, func(ctx context.Context) ([]byte, error) {
		return s.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint,
			discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	})
	if err != nil {
		return "", err
	}
	var m discordgo.Message
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		return "", errors.New("sending discord message: no message in the answer")
	}
	// The nonce may return a message that shows other text (the first
	// words of a reply that grew by edits), or a grown reply's whole text
	// without the question's buttons: it gets this part's text and
	// buttons.
	if body.Content != "" && (!sameText(m.Content, body.Content) || len(body.Components) > 0 && len(m.Components) == 0) {
		_, err := sd.editFinal(ctx, s, channelID, m.ID, body.Content, body.Components)
		switch {
		case unknownMessage(err):
			// That message is gone (the reply was abandoned): a new one,
			// under a nonce of its own.
			again := *body
			again.Nonce = nonce.For(body.Nonce+"/n", 0)
			return sd.sendPart(ctx, s, channelID, &again)
		case err != nil:
			return "", err
		}
	}
	return m.ID, nil
}

// retrying makes a REST call on bucket's route, retrying what a retry can
// fix: it first waits out a bucket Discord reported exhausted, a 429 waits
// what Discord asks, a 5xx or a lost request backs off; a wait past ctx's
// deadline gives up at once (bucket "": call waits for its bucket
// itself). Anything else fails as requestError says. A
// call that creates a message in channel (not "") waits for the pacer
// first, every attempt: each is a request Discord counts.
func retrying[T any](ctx context.Context, st *state, s *discordgo.Session, bucket, channel, what string, attrs []any, call func(context.Context) (T, error)) (T, error) {
	p := retry.Policy{RateLimits: st.maxRateLimitRetries, Failures: st.maxServerRetries, Backoff: st.serverBackoff,
		GiveUpPastDeadline: true, Clock: st.clock, Log: st.log, Scrub: st.scrub, Platform: "discord"}
	return retry.Do(ctx, p, what, attrs, func(ctx context.Context) (T, error) {
		var zero T
		if channel != "" {
			if err := st.pace(ctx, channel); err != nil {
				return zero, waitError{fmt.Errorf("%s: %w", what, err)}
			}
		}
		// After the pacer's wait, which may be long, so that the bucket
		// is read as it is when the request goes ("": call waits itself).
		if bucket == "" {
			return call(ctx)
		}
		if err := st.waitBucket(ctx, s, bucket, what); err != nil {
			return zero, waitError{err}
		}
		return call(ctx)
	}, func(err error) retry.Verdict {
		var limited *discordgo.RateLimitError
		var waited waitError
		switch {
		case errors.As(err, &waited):
			return retry.Verdict{Kind: retry.Fail, Err: waited.error}
		case errors.As(err, &limited):
			return retry.Verdict{Kind: retry.RateLimited, After: max(limited.RetryAfter, time.Millisecond)}
		case retryable(err):
			return retry.Verdict{Kind: retry.Transient}
		}
		return retry.Verdict{Kind: retry.Fail, Err: st.requestError(what, err)}
	})
}

// waitError is the error of a wait before a request (the pacer's or
// waitBucket's): final, as it is.
type waitError struct{ error }

// waitBucket waits, bounded by ctx, until the route's rate-limit bucket
// allows a request. discordgo would wait too, but with time.Sleep, deaf to
// the context; after this wait it finds nothing left to wait for.
func (st *state) waitBucket(ctx context.Context, s *discordgo.Session, bucketID, what string) error {
	b := s.Ratelimiter.GetBucket(bucketID)
	b.Lock()
	wait := s.Ratelimiter.GetWaitTime(b, 1)
	b.Unlock()
	switch {
	case wait <= 0:
		return nil
	case st.pastDeadline(ctx, wait):
		return fmt.Errorf("%s: rate limited for %s, past the deadline", what, wait.Round(time.Millisecond))
	case !st.sleep(ctx, wait):
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	return nil
}

// pastDeadline reports whether waiting d would end after ctx's deadline.
func (st *state) pastDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && st.clock.Now().Add(d).After(deadline)
}

// retryable reports whether a failed request is worth repeating: Discord
// answered 5xx, or the request or its answer was lost on the way.
func retryable(err error) bool {
	var re *discordgo.RESTError
	if errors.As(err, &re) {
		return re.Response != nil && re.Response.StatusCode >= 500
	}
	var ue *url.Error
	return errors.As(err, &ue)
}

// requestError explains a REST error; the ones retrying cannot fix are
// *core.PermanentError.
func (st *state) requestError(what string, err error) error {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return fmt.Errorf("%s: %w", what, st.scrub(err))
	}
	status, code, text := re.Response.StatusCode, 0, ""
	if re.Message != nil {
		code, text = re.Message.Code, re.Message.Message
	}
	permanent := func(reason string) error {
		return &core.PermanentError{Reason: reason, Err: st.scrub(err)}
	}
	switch {
	case code == codeCannotSendToUser:
		return permanent("discord refused delivery: the user does not accept DMs from the bot (blocked it, closed DMs or shares no server with it)")
	case code == codeUnknownChannel:
		return permanent("unknown channel: it does not exist or is not a DM the bot can see")
	case code == codeUnknownUser:
		return permanent("unknown user")
	case code == codeInvalidFormBody:
		return permanent("discord rejected the message as invalid (invalid form body)")
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%s: unauthorized (is the token wrong or reset?)", what)
	case status == http.StatusForbidden:
		return permanent(fmt.Sprintf("discord forbids it (missing access, code %d: %s)", code, text))
	case status == http.StatusNotFound:
		return permanent(fmt.Sprintf("not found (code %d: %s)", code, text))
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		return permanent(fmt.Sprintf("discord rejected the request (HTTP %d, code %d: %s)", status, code, text))
	default:
		return fmt.Errorf("%s: %w", what, st.scrub(err))
	}
}

// sameText reports whether Discord's content of a message is the content
// sent, which Discord may have trimmed.
func sameText(discords, sent string) bool {
	return strings.TrimSpace(discords) == strings.TrimSpace(sent)
}

// Typing shows "typing…" in the DM channel for about 10 seconds; the core
// repeats it while a turn runs.
func (sd *sender) Typing(ctx context.Context, channelThreadID string) error {
	s, err := sd.live()
	if err != nil {
		return fmt.Errorf("sending discord typing indicator: %w", err)
	}
	if !isSnowflake(channelThreadID) {
		return &core.PermanentError{Reason: fmt.Sprintf("channel thread id %q is not a discord channel id", channelThreadID)}
	}
	endpoint := discordgo.EndpointChannelTyping(channelThreadID)
	if err := sd.waitBucket(ctx, s, endpoint, "sending discord typing indicator"); err != nil {
		return err
	}
	if err := s.ChannelTyping(channelThreadID, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false)); err != nil {
		return sd.requestError("sending discord typing indicator", err)
	}
	return nil
}

// OpenDM returns the id of the DM channel with userID, creating it if
// needed, for conversations addressed by user id. A user who does not
// accept DMs from the bot is a *core.PermanentError.
func (op *opener) OpenDM(ctx context.Context, userID string) (channelID string, err error) {
	ch, err := op.dmChannel(ctx, userID)
	if err != nil {
		return "", err
	}
	return ch.ID, nil
}
