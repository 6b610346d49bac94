package outbox

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

// A reply the model is still writing grows where the user reads it
// (core.Streamer: a Telegram draft, a Discord or Slack message edited as
// it grows, the web chat's event stream). The turn hands the Grower the
// model's raw text as it grows; the Grower keeps only what may be shown
// (Streaming.Visible: never reasoning nor a control token, Markdown safe
// to render half written) and updates the platform from a goroutine of
// its own, at most once per interval, so the model's stream never waits
// on the platform. The finished reply then goes out through Deliver with
// the Grower's adapter (Grower.Adapter), whose Send finishes the stream:
// recorded before it is sent, as every reply.

// FirstHold is how long the first visible words wait before they are
// shown: a reply the model finishes meanwhile goes out whole, with no
// partial (a short answer has nothing to watch grow, and costs the
// platform no draft or edit). It is within the 100 ms the first words may
// take beyond a platform round trip (issue 32).
const FirstHold = 80 * time.Millisecond

// Streaming is the bot's streaming policy (bot.streaming).
type Streaming struct {
	// Enabled streams replies on the adapters that can.
	Enabled bool
	// Interval is the least time between two updates of one reply; an
	// adapter's StreamCapabilities.MinInterval is never undercut.
	Interval time.Duration
	// Visible is what of the model's raw text so far may be shown, in
	// the reply's format (nil: nothing is streamed).
	Visible func(raw string, format core.TextFormat) string
}

// Grower is one reply growing on its platform; see above. Its methods
// are safe to call from the model's goroutine and the turn's.
type Grower struct {
	stream   core.Stream
	adapter  core.Adapter
	format   core.TextFormat
	plain    bool
	visible  func(string, core.TextFormat) string
	interval time.Duration
	refresh  time.Duration // see core.StreamCapabilities.Refresh
	clock    core.Clock
	log      *slog.Logger
	note     func(context.Context, []string) error
	key      string // the stream's idempotency key

	mu       sync.Mutex
	latest   string // the model's raw text so far
	ended    bool   // finished or abandoned
	halted   bool   // no more updates (halt)
	haltOnce sync.Once
	updates  int // the partials the platform took
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

// Grow starts a growing reply through a, when streaming is on and a can
// stream; nil otherwise (the reply is sent whole). msg carries the
// conversation, the reply's format and its idempotency key. note, when
// not nil, records the platform messages the stream grew each time they
// change (core.Store.NoteGrown: a process that dies leaves them to be
// deleted by the next). The Grower's loop ends with Finish (through
// Adapter) or Abandon.
func (o *Outbox) Grow(ctx context.Context, a core.Adapter, msg core.OutboundMessage, note func(context.Context, []string) error) *Grower {
	st := o.cfg.Streaming
	streamer, ok := a.(core.Streamer)
	if !st.Enabled || st.Visible == nil || !ok {
		return nil
	}
	interval := st.Interval
	var refresh time.Duration
	if m, ok := a.(core.StreamModer); ok {
		caps := m.StreamCapabilities()
		if caps.Mode == "" {
			return nil
		}
		interval = max(interval, caps.MinInterval)
		refresh = caps.Refresh
	}
	// An adapter that cannot render rich text gets partials as the
	// finished reply will be: Markdown made plain (render).
	plain := msg.Format == core.FormatRichText && !a.Capabilities().RichText
	format := msg.Format
	if plain {
		msg.Format = core.FormatText
	}
	stream, err := streamer.Stream(ctx, msg)
	if err != nil {
		o.log.Debug("not streaming this reply", "platform", a.Platform(), "err", err)
		return nil
	}
	g := &Grower{stream: stream, adapter: a, format: format, plain: plain, visible: st.Visible, interval: interval, refresh: refresh,
		clock: o.cfg.Clock, log: o.log, note: note, key: msg.IdempotencyKey, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go g.loop(context.WithoutCancel(ctx))
	return g
}

// Raw takes the model's raw text so far (whole, not a delta; "" when the
// model's text restarted). It never blocks on the platform, and costs
// next to nothing: what may be shown is worked out only when an update
// is due (show), not for every delta.
func (g *Grower) Raw(raw string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.ended || g.halted || raw == g.latest {
		g.mu.Unlock()
		return
	}
	g.latest = raw
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// loop updates the stream with the latest visible text, at most once per
// interval, until the Grower ends. An update the platform skips (no slot
// free, a 429) is tried again an interval later, with the text by then.
// A partial left unchanged for refresh is shown again.
func (g *Grower) loop(ctx context.Context) {
	defer close(g.done)
	var shown string
	var last time.Time
	var retry, again core.Timer
	noted := 0 // how many grown messages note recorded
	defer func() {
		for _, t := range []core.Timer{retry, again} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	for {
		var retryC, againC <-chan time.Time
		if retry != nil {
			retryC = retry.C()
		}
		if again != nil {
			againC = again.C()
		}
		select {
		case <-g.stop:
			return
		case <-g.wake:
		case <-retryC:
			retry = nil
		case <-againC:
			again = nil
			shown = "" // shown again, unchanged
		}
		wait := g.interval - g.clock.Now().Sub(last)
		if last.IsZero() {
			wait = FirstHold
		}
		if wait > 0 && !g.sleep(wait) {
			return
		}
		g.mu.Lock()
		raw := g.latest
		g.mu.Unlock()
		text := g.show(raw)
		if text == shown || text == "" {
			continue
		}
		last = g.clock.Now()
		if err := g.stream.Update(ctx, text); err != nil {
			g.log.Debug("a partial reply was skipped", "platform", g.adapter.Platform(), "err", err)
			if retry == nil {
				retry = g.clock.NewTimer(g.interval)
			}
			continue
		}
		shown = text
		g.mu.Lock()
		g.updates++
		g.mu.Unlock()
		noted = g.noteGrown(ctx, noted)
		if g.refresh > 0 {
			if again != nil {
				again.Stop()
			}
			again = g.clock.NewTimer(g.refresh)
		}
	}
}

// noteGrown records the messages grown so far when there are more than
// the noted already recorded, and returns how many are recorded. The
// update waits for it: a message created a moment before a crash is the
// one window left.
func (g *Grower) noteGrown(ctx context.Context, noted int) int {
	ids := g.stream.Grown()
	if g.note == nil || len(ids) == noted {
		return noted
	}
	if err := g.note(ctx, ids); err != nil {
		g.log.Warn("recording a growing reply's messages; a crash now would leave them half written", "err", err)
		return noted
	}
	return len(ids)
}

// show is what of raw may be shown, as the reply's adapter renders it.
func (g *Grower) show(raw string) string {
	v := g.visible(raw, g.format)
	if g.plain {
		v = markup.Plain(v)
	}
	return v
}

// sleep waits d on the Grower's clock, or until it ends (false).
func (g *Grower) sleep(d time.Duration) bool {
	t := g.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-g.stop:
		return false
	}
}

// end stops the loop and waits for an update in flight, so that Finish
// or Abandon is the stream's last call. It reports whether this call
// ended it.
func (g *Grower) end() bool {
	g.mu.Lock()
	if g.ended {
		g.mu.Unlock()
		return false
	}
	g.ended = true
	g.mu.Unlock()
	g.halt()
	return true
}

// halt stops the loop and waits for an update in flight, once: what grew
// is then final, for the reply to record before it is finished.
func (g *Grower) halt() {
	g.haltOnce.Do(func() {
		g.mu.Lock()
		g.halted = true
		g.mu.Unlock()
		close(g.stop)
	})
	<-g.done
}

// Abandon takes back what grew: the reply is not sent (silence, a
// failure, a stop). Safe on a nil Grower and after Finish.
func (g *Grower) Abandon(ctx context.Context) {
	if g == nil || !g.end() {
		return
	}
	if err := g.stream.Abandon(context.WithoutCancel(ctx)); err != nil {
		g.log.Warn("taking back a partial reply", "platform", g.adapter.Platform(), "err", err)
	}
}

// OnRaw is Raw as an llm.Request's OnPartial: nil on a nil Grower, so
// the model is not streamed for nothing.
func (g *Grower) OnRaw() func(string) {
	if g == nil {
		return nil
	}
	return g.Raw
}

// Via is a, or, while the reply grows, a whose next Send finishes the
// stream instead (see Adapter).
func (g *Grower) Via(a core.Adapter) core.Adapter {
	if g == nil {
		return a
	}
	return g.Adapter()
}

// Updates is how many partials the platform took so far.
func (g *Grower) Updates() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.updates
}

// Grown lists the platform messages the stream created so far.
func (g *Grower) Grown() []string { return g.stream.Grown() }

// Adapter is a with its next Send finishing the stream instead: the
// finished reply goes through Deliver with it, recorded before it is
// sent like every reply. Sends after the first are a's.
func (g *Grower) Adapter() core.Adapter { return finisher{Adapter: g.adapter, g: g} }

type finisher struct {
	core.Adapter
	g *Grower
}

func (f finisher) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if !f.g.end() {
		return f.Adapter.Send(ctx, msg)
	}
	return f.g.stream.Finish(ctx, msg)
}

// SendFiles finishes the stream with msg's text, then sends its files
// once, without a caption (the text is above them), through the reply's
// adapter: a streamed reply that ends with files. An adapter that cannot
// send files gets a line per file in the finished text instead.
func (f finisher) SendFiles(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	fs, ok := f.Adapter.(core.FileSender)
	if !ok {
		msg.Text, msg.Files = filesNotShown(msg.Text, msg.Files), nil
		return f.Send(ctx, msg)
	}
	files := msg.Files
	msg.Files = nil
	var res core.SendResult
	if strings.TrimSpace(msg.Text) != "" {
		var err error
		if res, err = f.Send(ctx, msg); err != nil {
			return res, err
		}
	} else if f.g.end() {
		// No text to finish with: what grew goes.
		if err := f.g.stream.Abandon(ctx); err != nil {
			f.g.log.Warn("taking back a partial reply", "platform", f.g.adapter.Platform(), "err", err)
		}
	}
	msg.Text, msg.Files, msg.Choices = "", files, nil
	msg.IdempotencyKey = filesKey(msg.IdempotencyKey)
	more, err := fs.SendFiles(ctx, msg)
	res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
	return res, err
}
