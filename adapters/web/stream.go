package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

// Streaming modes (adapters.web.streaming). The page has one way to show
// a reply growing, its event stream, so auto and edits both mean it.
const (
	streamAuto  = "auto"
	streamEdits = "edits"
	streamOff   = "off"
)

// errStreamingOff is Stream's error when adapters.web.streaming is off:
// the core then sends each reply whole.
var errStreamingOff = errors.New("web adapter: streaming is off (adapters.web.streaming)")

// validStreaming checks adapters.web.streaming, naming the key.
func validStreaming(mode string) error {
	switch mode {
	case "", streamAuto, streamEdits, streamOff:
		return nil
	}
	return fmt.Errorf("web adapter: adapters.web.streaming is %q; it must be auto, edits or off", mode)
}

// streamer grows the bot's replies on the client's open pages: the text
// so far goes as "partial" events, the finished reply as the "message"
// Send would push, with the partials' id, so the page swaps one for the
// other.
type streamer struct{ *sender }

// StreamCapabilities reports Mode "events" (the page's event stream, no
// platform limit between updates), or no mode when streaming is off.
func (sm *streamer) StreamCapabilities() core.StreamCapabilities {
	if sm.cfg.Streaming == streamOff {
		return core.StreamCapabilities{}
	}
	return core.StreamCapabilities{Mode: "events"}
}

// Stream prepares a reply growing on the open pages of the client
// msg.ChannelThreadID. A page opened while it grows shows it from the
// next partial on; one that opens after it finished shows it from the
// history.
func (sm *streamer) Stream(ctx context.Context, msg core.OutboundMessage) (core.Stream, error) {
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("streaming to web client: %w", ctx.Err())
	case sm.cfg.Streaming == streamOff:
		return nil, errStreamingOff
	case sm.isStopped():
		return nil, fmt.Errorf("streaming to web client: %w", errStopped)
	case msg.ChannelThreadID == "":
		return nil, &core.PermanentError{Reason: "no channel thread id"}
	}
	return &pageStream{
		sd:     sm.sender,
		thread: msg.ChannelThreadID,
		id:     sm.nextID(),
		rich:   msg.Format == core.FormatRichText,
		at:     sm.clock.Now().UTC().Format(time.RFC3339),
	}, nil
}

// pageStream is one reply growing on a client's pages.
type pageStream struct {
	sd     *sender
	thread string
	// id is the reply's: every partial's and the finished message's
	// first part's.
	id   string
	rich bool
	at   string

	mu    sync.Mutex
	shown bool // a partial went out
	ended bool // Finish or Abandon was called
}

// Update pushes text, the whole reply so far, as a "partial" event. Rich
// text carries its sanitised HTML, as a message does. A page too far
// behind misses it (a later partial carries the whole text); text that
// shows nothing yet is not pushed.
func (ps *pageStream) Update(ctx context.Context, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("streaming to web client: %w", err)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ended {
		return errors.New("streaming to web client: the reply is already finished")
	}
	if ps.sd.isStopped() {
		return fmt.Errorf("streaming to web client: %w", errStopped)
	}
	p := wireMessage{ID: ps.id, Role: string(core.RoleAssistant), Text: text, At: ps.at}
	if ps.rich {
		p.HTML = markup.HTML(text)
		if strings.TrimSpace(p.HTML) == "" {
			return nil
		}
	} else if strings.TrimSpace(text) == "" {
		return nil
	}
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding web partial: %w", err)
	}
	ps.sd.hub.publishPartial(ps.thread, event{name: "partial", data: data, key: ps.id})
	ps.shown = true
	return nil
}

// Finish pushes msg as Send does, its first part carrying the reply's id:
// the page puts it in place of the partial. If it cannot go, the partial
// is taken back, so no page keeps half a reply as if it were whole.
func (ps *pageStream) Finish(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	shown, err := ps.end()
	if err != nil {
		return core.SendResult{}, err
	}
	res, err := ps.sd.push(ctx, msg, ps.id)
	if err != nil && shown {
		ps.discard()
	}
	return res, err
}

// Abandon takes the partial back from the pages: a "discard" event.
func (ps *pageStream) Abandon(context.Context) error {
	shown, err := ps.end()
	if err != nil {
		return err
	}
	if shown {
		ps.discard()
	}
	return nil
}

// Grown is empty: a partial lives on the pages only, never in the store
// or the history, and a page that reconnects drops it.
func (ps *pageStream) Grown() []string { return nil }

// end marks the stream ended, once, and reports whether a partial went
// out.
func (ps *pageStream) end() (bool, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ended {
		return false, errors.New("streaming to web client: the reply is already finished")
	}
	ps.ended = true
	return ps.shown, nil
}

// discard tells the pages to drop the reply's partial. It drops a stream
// too slow to take it, as a message does: that page reconnects and
// drops its partials itself.
func (ps *pageStream) discard() {
	data, _ := json.Marshal(struct {
		ID string `json:"id"`
	}{ps.id}) // a struct of one string always encodes
	ps.sd.hub.publish(ps.thread, []event{{name: "discard", data: data}}, true)
}
