package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"runtime/debug"
	"sync"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// openSocket connects Socket Mode and waits, bounded by ctx, for Slack's
// hello. The connection then lives in the background until runCtx ends;
// the returned channel is closed when it has. On an error the caller
// cancels runCtx and waits for the channel.
func (in *inbound) openSocket(ctx, runCtx context.Context, api *slack.Client) (chan struct{}, error) {
	opts := []socketmode.Option{socketmode.OptionLog(log.New(io.Discard, "", 0))}
	if in.pingInterval > 0 {
		opts = append(opts, socketmode.OptionPingInterval(in.pingInterval))
	}
	smc := socketmode.New(api, opts...)
	hello := &startSignal{ch: make(chan error, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.superviseSocket(runCtx, smc, hello)
	}()
	select {
	case err := <-hello.ch:
		return done, err
	case <-ctx.Done():
		return done, fmt.Errorf("slack adapter: connecting socket mode: %w", ctx.Err())
	}
}

// startSignal carries the first connection's outcome to Start, once.
type startSignal struct {
	once sync.Once
	ch   chan error // buffered: the first report never blocks
}

// report hands err to Start unless an outcome was reported already; it
// says whether this call was the one.
func (s *startSignal) report(err error) bool {
	first := false
	s.once.Do(func() {
		s.ch <- err
		first = true
	})
	return first
}

// superviseSocket runs slack-go's Socket Mode loop, which reconnects by
// itself after a drop or a disconnect request, and restarts it with
// backoff when it gives up (Slack refused the app token). The first
// connection's outcome goes to hello; a refused token at start-up ends
// the loop, since Start then fails. A token revoked later is retried with
// backoff, and Health reports the connection down meanwhile.
func (in *inbound) superviseSocket(ctx context.Context, smc *socketmode.Client, hello *startSignal) {
	backoff := in.reconnectMin
	for {
		err := in.runSocket(ctx, smc, hello)
		if ctx.Err() != nil {
			return
		}
		if isAuthError(err) && hello.report(fmt.Errorf("slack adapter: opening socket mode with apps.connections.open: %s (is app_token wrong or revoked, and Socket Mode enabled?)", errorCode(err))) {
			// Start was still waiting: it reports this and stops.
			<-ctx.Done()
			return
		}
		in.setConnected(false, "socket mode: "+in.scrub(err).Error())
		in.log.Error("slack socket mode stopped; reconnecting", "err", in.scrub(err), "retry_in", backoff)
		if !in.sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, in.reconnectMax)
	}
}

// runSocket runs one slack-go Socket Mode loop and consumes its events
// until the loop returns.
func (in *inbound) runSocket(ctx context.Context, smc *socketmode.Client, hello *startSignal) error {
	// slack-go's loop gets its own context so that its last events are
	// still read after it returned (it blocks sending them otherwise).
	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	result := make(chan error, 1)
	go func() { result <- smc.RunContext(loopCtx) }()
	for {
		select {
		case err := <-result:
			if err == nil {
				err = errors.New("socket mode loop ended")
			}
			return err
		case evt := <-smc.Events:
			in.onSocketEvent(ctx, smc, evt, hello)
		}
	}
}

// onSocketEvent handles one event of slack-go's Socket Mode client. A
// panic while handling it is logged and the event skipped, unacked, so
// Slack sends it again.
func (in *inbound) onSocketEvent(ctx context.Context, smc *socketmode.Client, evt socketmode.Event, hello *startSignal) {
	defer func() {
		if r := recover(); r != nil {
			in.log.Error("panic while handling a slack socket mode event", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		// Also after a drop or a disconnect request: down until hello.
		in.setConnected(false, "")
		in.log.Debug("slack socket mode connecting")
	case socketmode.EventTypeConnectionError:
		why := "connection error"
		if ce, ok := evt.Data.(*slack.ConnectionErrorEvent); ok && ce.ErrorObj != nil {
			why = in.scrub(ce.ErrorObj).Error()
		}
		in.setConnected(false, why)
		in.log.Warn("slack socket mode connection failed; slack-go retries", "err", why)
		// Start, if it is still waiting, fails with the reason.
		hello.report(fmt.Errorf("slack adapter: connecting socket mode: %s", why))
	case socketmode.EventTypeInvalidAuth:
		in.setConnected(false, "invalid app token")
	case socketmode.EventTypeConnected:
		in.log.Debug("slack socket mode websocket open")
	case socketmode.EventTypeHello:
		in.setConnected(true, "")
		in.log.Info("slack socket mode connected")
		hello.report(nil)
	case socketmode.EventTypeEventsAPI:
		if evt.Request == nil {
			return
		}
		if in.handleCallback(ctx, evt.Request.Payload, evt.Request.RetryAttempt) {
			in.ack(ctx, smc, evt.Request, nil)
		}
	case socketmode.EventTypeSlashCommand:
		if evt.Request == nil {
			return
		}
		in.onSlashCommand(ctx, func(payload any) { in.ack(ctx, smc, evt.Request, payload) }, evt.Data)
	case socketmode.EventTypeInteractive:
		// A tap on a button (taps.go); while stopping it stays unacked,
		// and Slack sends it again.
		if evt.Request != nil {
			in.takeTap(ctx, evt.Request.Payload, func() { in.ack(ctx, smc, evt.Request, nil) })
		}
	case socketmode.EventTypeErrorBadMessage, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		in.log.Warn("slack socket mode reported an error", "type", evt.Type)
	}
}

// ack confirms an envelope to Slack, with a payload for a slash command
// (what Slack shows the user who typed it) or nil.
func (in *inbound) ack(ctx context.Context, smc *socketmode.Client, req *socketmode.Request, payload any) {
	if err := smc.AckCtx(ctx, req.EnvelopeID, payload); err != nil && ctx.Err() == nil {
		in.log.Warn("acknowledging a slack envelope failed; slack will send it again", "envelope_id", req.EnvelopeID, "err", err)
	}
}
