package slack

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/core"
)

// EditMessage shows msg.Text in the bot's message id, rendered as Send
// renders it, its first 4,000 characters (the caller sends the rest). A
// stream a crash left open is stopped first. A message gone is a
// *core.PermanentError.
func (g *growth) EditMessage(ctx context.Context, id string, msg core.OutboundMessage) error {
	api, err := g.live()
	if err != nil {
		return fmt.Errorf("editing slack message: %w", err)
	}
	posts := textPosts(msg)
	if len(posts) == 0 {
		return &core.PermanentError{Reason: "empty text"}
	}
	ctx, cancel := context.WithTimeout(ctx, g.sendTimeout)
	defer cancel()
	channel, err := g.channelOf(ctx, msg)
	if err != nil {
		return err
	}
	p := posts[0]
	p.instead = p.instead[:min(1, len(p.instead))]
	_, err = g.replace(ctx, api, channel, id, p)
	if errorCode(err) == "streaming_state_conflict" {
		if err := g.stopStream(ctx, api, channel, id); err != nil {
			return err
		}
		_, err = g.replace(ctx, api, channel, id, p)
	}
	return err
}

// DeleteMessage deletes the bot's message id in the DM channelThreadID
// (or with the user it names); one already gone is not an error.
func (g *growth) DeleteMessage(ctx context.Context, channelThreadID, id string) error {
	api, err := g.live()
	if err != nil {
		return fmt.Errorf("deleting slack message: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, g.sendTimeout)
	defer cancel()
	channel, err := g.channelOf(ctx, core.OutboundMessage{ChannelThreadID: channelThreadID})
	if err != nil {
		return err
	}
	return g.deleteMessage(ctx, api, channel, id)
}

// replace shows p in the bot's message ts as Send would post it, paced
// and retried as a post, its plain text should Slack refuse the markup.
// It returns the ids p now lives in.
func (g *growth) replace(ctx context.Context, api *slack.Client, channel, ts string, p post) ([]string, error) {
	const what = "updating slack message"
	update := func(opts []slack.MsgOption) error {
		return g.call(ctx, what, channel, true, func(ctx context.Context) error { return updateCall(ctx, api, channel, ts, opts) })
	}
	err := update(p.opts)
	if pointer, refused := markupRefused(err); refused && len(p.instead) > 0 {
		g.log.Warn("slack refused a message's markup; updating it to the plain text", "channel", channel, "error", errorCode(err), "pointer", pointer)
		if err := update(p.instead[0]); err != nil {
			return nil, fmt.Errorf("updating to the plain text of a refused message: %w", err)
		}
		ids := []string{ts}
		for _, opts := range p.instead[1:] {
			id, err := g.postPart(ctx, api, channel, opts...)
			if err != nil {
				return ids, fmt.Errorf("posting the plain text of a refused message: %w", err)
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	if err != nil {
		return nil, err
	}
	return []string{ts}, nil
}

// stopStream stops the stream of message ts, retried as a send is; one
// already stopped or ended by Slack is not an error.
func (g *growth) stopStream(ctx context.Context, api *slack.Client, channel, ts string) error {
	return g.call(ctx, "stopping slack stream", channel, false, func(ctx context.Context) error {
		return stopCall(ctx, api, channel, ts)
	})
}

// deleteMessage deletes message ts with chat.delete, retried as a send
// is; one already gone is not an error.
func (g *growth) deleteMessage(ctx context.Context, api *slack.Client, channel, ts string) error {
	err := g.call(ctx, "deleting slack message", channel, false, func(ctx context.Context) error {
		_, _, err := api.DeleteMessageContext(ctx, channel, ts)
		return err
	})
	if errorCode(err) == "message_not_found" {
		return nil
	}
	return err
}

// updateCall is one chat.update of message ts to opts. blocks [] clears
// the blocks a streamed message was made of (or a question's buttons), so
// the text shows alone, unless opts bring blocks of their own: slack-go
// appends them to the empty list.
func updateCall(ctx context.Context, api *slack.Client, channel, ts string, opts []slack.MsgOption) error {
	_, _, _, err := api.UpdateMessageContext(ctx, channel, ts, append([]slack.MsgOption{slack.MsgOptionBlocks()}, opts...)...)
	return err
}

// stopCall is one chat.stopStream of message ts; a stream already stopped
// or ended by Slack is not an error.
func stopCall(ctx context.Context, api *slack.Client, channel, ts string) error {
	_, _, err := api.StopStreamContext(ctx, channel, ts)
	if errorCode(err) == "message_not_in_streaming_state" {
		return nil
	}
	return err
}

// call makes one Web API call that changes a message, retried as a post
// is (postPart); a paced call first waits for its pacer slot, as a
// finished send does.
func (st *state) call(ctx context.Context, what, channel string, paced bool, do func(ctx context.Context) error) error {
	_, err := retry.Do(ctx, st.retryPolicy(), what, []any{"channel", channel}, func(ctx context.Context) (struct{}, error) {
		if paced {
			if err := st.pace(ctx, channel); err != nil {
				return struct{}{}, paceError{fmt.Errorf("%s: %w", what, err)}
			}
		}
		return struct{}{}, do(ctx)
	}, func(err error) retry.Verdict {
		var paced paceError
		if errors.As(err, &paced) {
			return retry.Verdict{Kind: retry.Fail, Err: paced.error}
		}
		return st.judge(err, st.apiError(what, err))
	})
	return err
}
