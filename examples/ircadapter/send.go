package ircadapter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// Send delivers msg.Text to the nick msg.ChannelThreadID and waits until
// the server has taken it (a PING sent after it is answered). A server
// with IRCv3 draft/multiline gets each part of the text as one multiline
// batch; any other gets it line by line. Lines are cut to fit IRC's
// 512-byte limit on word boundaries, never inside a character, and paced
// by send_rate. The result holds one id per message: IRC has none, so
// they are made up.
//
// IRC has no idempotency: when the connection drops before the server
// confirms a send, it goes again once the bot is back, and the user may
// see part of it twice.
func (a *Adapter) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	target := msg.ChannelThreadID
	if !validNick(target) {
		return core.SendResult{}, &core.PermanentError{Reason: "not a nick", Err: fmt.Errorf("%q is not an IRC nick", target)}
	}
	text := msg.Text
	if strings.TrimSpace(scrub.Replace(text)) == "" {
		return core.SendResult{}, nil
	}
	select {
	case a.sendSlot <- struct{}{}:
		defer func() { <-a.sendSlot }()
	case <-ctx.Done():
		return core.SendResult{}, ctx.Err()
	case <-a.stop:
		return core.SendResult{}, errStopped
	}
	for attempt := 1; ; attempt++ {
		c, err := a.currentConn(ctx)
		if err != nil {
			return core.SendResult{}, err
		}
		ids, err := a.sendOn(ctx, c, target, text)
		switch {
		case err == nil:
			return core.SendResult{PlatformMessageIDs: ids}, nil
		case errors.Is(err, errMultilineRefused) && attempt < 3:
			a.log.Warn("the server refused a multiline message; sending line by line", "err", err)
			c.mu.Lock()
			c.mlBytes = 0
			c.mu.Unlock()
			continue
		case errors.Is(err, errConnLost) && attempt < 3:
			continue // on the next connection
		}
		return core.SendResult{PlatformMessageIDs: ids}, err
	}
}

// sendOn writes the text's messages on c, then a PING, and waits for the
// server's answer to it. ids are returned with an error only when the
// lines went out but could not be confirmed.
func (a *Adapter) sendOn(ctx context.Context, c *conn, target, text string) ([]string, error) {
	msgs := c.plan(target, text)
	chk := c.begin(target, a.nextID("ping-"))
	var ids []string
	for _, lines := range msgs {
		for _, l := range lines {
			if err := a.limiter.wait(ctx, a.stop); err != nil {
				return ids, err
			}
			if c.write(l) != nil {
				return nil, fmt.Errorf("%w: %v", errConnLost, c.err())
			}
		}
		ids = append(ids, a.nextID("out"))
	}
	if err := a.limiter.wait(ctx, a.stop); err != nil {
		return ids, err
	}
	if c.write(line("PING", chk.token)) != nil {
		return nil, fmt.Errorf("%w: %v", errConnLost, c.err())
	}
	t := a.clock.NewTimer(a.confirmWait)
	defer t.Stop()
	select {
	case <-chk.done:
		if chk.err != nil {
			return nil, chk.err
		}
		return ids, nil
	case <-c.done:
		return nil, fmt.Errorf("%w: %v", errConnLost, c.err())
	case <-t.C():
		c.closeWith(errors.New("the server did not answer a PING"))
		return nil, errConnLost
	case <-ctx.Done():
		return ids, fmt.Errorf("the server has not confirmed the message: %w", ctx.Err())
	case <-a.stop:
		return ids, errStopped
	}
}

// scrub removes what must not reach the wire from a text: CR (a line
// break is LF alone here), NUL, and the CTCP marker.
var scrub = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\x00", "", "\x01", "")

// plan turns text into the lines to write, grouped by message.
func (c *conn) plan(target, text string) [][]string {
	text = scrub.Replace(text)
	c.mu.Lock()
	maxBytes, maxLines, nick := c.mlBytes, c.mlLines, c.nick
	c.mu.Unlock()
	room := lineRoom(nick, target)
	var msgs [][]string
	if maxBytes == 0 { // line by line
		for _, l := range strings.Split(text, "\n") {
			if strings.TrimSpace(l) == "" {
				continue // IRC cannot send an empty line
			}
			for _, piece := range wrap(l, room, false) {
				msgs = append(msgs, []string{privmsg(target, piece)})
			}
		}
		return msgs
	}
	fits := func(part string) bool {
		pieces, size := pieces(part, room)
		return size <= maxBytes && (maxLines == 0 || len(pieces) <= maxLines)
	}
	for _, part := range splitFit(text, maxBytes, fits) {
		ps, _ := pieces(strings.Trim(part, "\n"), room)
		if len(ps) == 0 {
			continue
		}
		if len(ps) == 1 {
			msgs = append(msgs, []string{privmsg(target, ps[0].text)})
			continue
		}
		ref := c.a.nextID("b")
		lines := []string{line("BATCH", "+"+ref, "draft/multiline", target)}
		for _, p := range ps {
			tags := "@batch=" + ref
			if p.concat {
				tags += ";draft/multiline-concat"
			}
			lines = append(lines, tags+" "+privmsg(target, p.text))
		}
		msgs = append(msgs, append(lines, line("BATCH", "-"+ref)))
	}
	return msgs
}

// privmsg is the line that sends text to target.
func privmsg(target, text string) string { return "PRIVMSG " + target + " :" + text }

// piece is one PRIVMSG of a multiline batch; concat joins it to the one
// before without a line break.
type piece struct {
	text   string
	concat bool
}

// pieces cuts a message into batch lines that fit room, and returns its
// size as a server counts it against max-bytes (a line break each).
func pieces(text string, room int) (ps []piece, size int) {
	if strings.TrimSpace(text) == "" {
		return nil, 0
	}
	for _, l := range strings.Split(text, "\n") {
		cut := wrap(l, room, true)
		if len(cut) == 0 {
			cut = []string{""} // a blank line inside the message
		}
		for i, w := range cut {
			ps = append(ps, piece{text: w, concat: i > 0})
			size += len(w) + 1
		}
	}
	return ps, size
}

// wrap cuts one line into pieces of at most room bytes, at the last space
// that fits, or else at the last character boundary. keepSpace keeps the
// space at the end of a piece (multiline-concat joins them back exactly);
// otherwise it is dropped, as the pieces show as separate lines.
func wrap(s string, room int, keepSpace bool) []string {
	var out []string
	for len(s) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 { // room is under one character: it goes alone
			_, cut = utf8.DecodeRuneInString(s)
		}
		if keepSpace {
			if sp := strings.LastIndexByte(s[:cut], ' '); sp > 0 {
				cut = sp + 1
			}
		} else if sp := strings.LastIndexByte(s[:min(cut+1, len(s))], ' '); sp > 0 {
			out, s = append(out, s[:sp]), s[sp+1:]
			continue
		}
		out, s = append(out, s[:cut]), s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// splitFit splits text with textsplit.Split (paragraphs first, code blocks
// whole when they fit) into parts of at most limit runes, halving any part
// until fits accepts it.
func splitFit(text string, limit int, fits func(string) bool) []string {
	var out []string
	for _, p := range textsplit.Split(text, limit) {
		if n := utf8.RuneCountInString(p); n > 1 && !fits(p) {
			out = append(out, splitFit(p, n/2, fits)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// lineRoom is the room for text in a line to target as its recipient
// gets it, ":nick!user@host PRIVMSG target :text\r\n", within IRC's 512
// bytes, assuming the longest user (10) and host (63) RFC 2812 allows
// and a nick and target of at least 30 characters.
func lineRoom(nick, target string) int {
	return 512 - len(":!@ PRIVMSG  :\r\n") - max(len(nick), 30) - 10 - 63 - max(len(target), 30)
}

// limiter paces lines as a token bucket (burst lines at once, then one
// every interval), kept as the time the bucket is next empty (GCRA).
type limiter struct {
	mu       sync.Mutex
	clock    core.Clock
	interval time.Duration
	burst    int
	tat      time.Time
}

func newLimiter(r Rate, clock core.Clock) *limiter {
	return &limiter{clock: clock, interval: time.Duration(float64(time.Second) / r.PerSecond), burst: r.Burst}
}

// wait blocks until a line may go.
func (l *limiter) wait(ctx context.Context, stop <-chan struct{}) error {
	for {
		l.mu.Lock()
		now := l.clock.Now()
		tat := l.tat
		if tat.Before(now) {
			tat = now
		}
		at := tat.Add(-time.Duration(l.burst-1) * l.interval)
		if !at.After(now) {
			l.tat = tat.Add(l.interval)
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		t := l.clock.NewTimer(at.Sub(now))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-stop:
			t.Stop()
			return errStopped
		}
	}
}

// inbox queues private messages for the core, so that the reader never
// waits on it (the core may answer a command with a Send, whose
// confirmation the reader must read).
type inbox struct {
	mu    sync.Mutex
	items []core.InboundMessage
	wake  chan struct{}
}

func (b *inbox) push(m core.InboundMessage) {
	b.mu.Lock()
	b.items = append(b.items, m)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// deliverInbound hands queued messages to the core in order until Stop.
func (a *Adapter) deliverInbound() {
	defer a.wg.Done()
	for {
		a.inbox.mu.Lock()
		items := a.inbox.items
		a.inbox.items = nil
		a.inbox.mu.Unlock()
		for _, m := range items {
			a.handle(m)
		}
		select {
		case <-a.inbox.wake:
		case <-a.stop:
			return
		}
	}
}

// handle gives one message to the core; a failure or panic there is
// logged, as IRC cannot deliver the message again.
func (a *Adapter) handle(m core.InboundMessage) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("the core panicked on a private message", "from", m.DisplayName, "panic", fmt.Sprint(p))
		}
	}()
	if err := a.handler.HandleInbound(a.ctx, m); err != nil {
		a.log.Error("the core did not take a private message", "from", m.DisplayName, "err", err)
	}
}
