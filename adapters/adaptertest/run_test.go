package adaptertest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// TestMain also catches goroutines the suite itself would leave behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun runs the suite against a small reference adapter whose fake
// platform supports every optional case, so each case is seen to pass on a
// correct adapter. It is not parallel: the Stop case checks goroutines.
func TestRun(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
		p := newPlatform()
		a := &refAdapter{p: p, limit: 500}
		return &adaptertest.Rig{
			Adapter: a,
			DM: func(t *testing.T, u adaptertest.User, text string) string {
				p.push(update{kind: "dm", user: u, text: text})
				return u.ID
			},
			ThreadOf: func(_ *testing.T, u adaptertest.User) string { return u.ID },
			Sent:     func(_ *testing.T, thread string) []adaptertest.Sent { return p.sentTo(thread) },
			Group: func(_ *testing.T, u adaptertest.User, text string) {
				p.push(update{kind: "group", user: u, text: text})
			},
			Channel: func(_ *testing.T, text string) { p.push(update{kind: "channel", text: text}) },
			Own:     func(_ *testing.T, text string) { p.push(update{kind: "own", text: text}) },
			Edit: func(_ *testing.T, u adaptertest.User, text string) {
				p.push(update{kind: "edit", user: u, text: text})
			},
			RateLimitNextSend: func(_ *testing.T, d time.Duration) { p.limitAfter(0, d) },
			RateLimitAfter:    func(_ *testing.T, n int, d time.Duration) { p.limitAfter(n, d) },
			RefuseNextMarkup:  func(*testing.T) { p.refuseAfter(0) },
			RefuseMarkupAfter: func(_ *testing.T, n int) { p.refuseAfter(n) },
			Block:             func(_ *testing.T, u adaptertest.User) { p.block(u.ID) },
			UnknownThread:     "999999999",
			TypingShown:       func(_ *testing.T, thread string) int { return p.typingIn(thread) },
			FilesSent:         func(_ *testing.T, thread string) []adaptertest.SentFile { return p.filesTo(thread) },
		}
	})
}

// update is one event the fake platform hands the adapter.
type update struct {
	kind string // "dm", "group", "channel", "own", "edit"
	user adaptertest.User
	text string
	id   string
	at   time.Time
}

// errRateLimited and errForbidden are the fake platform's send failures.
type errRateLimited struct{ retryAfter time.Duration }

func (e errRateLimited) Error() string { return "rate limited" }

var errForbidden = errors.New("forbidden: bot was blocked or chat not found")

// errMalformed is the fake platform refusing a message's markup.
var errMalformed = errors.New("malformed markup")

// platform is an in-memory chat service.
type platform struct {
	updates chan update

	mu      sync.Mutex
	known   map[string]bool
	blocked map[string]bool
	sent    []adaptertest.Sent
	files   map[string][]adaptertest.SentFile // by thread
	typing  map[string]int
	seq     int
	okLeft  int           // sends to allow before limiting
	retry   time.Duration // 0: no limit armed
	// refuse are the formatted sends to let through before refusing one,
	// in order.
	refuse []int
}

func newPlatform() *platform {
	return &platform{
		updates: make(chan update, 16),
		known:   map[string]bool{},
		blocked: map[string]bool{},
		typing:  map[string]int{},
		files:   map[string][]adaptertest.SentFile{},
	}
}

func (p *platform) push(u update) {
	p.mu.Lock()
	p.seq++
	u.id, u.at = strconv.Itoa(p.seq), time.Now()
	if u.kind == "dm" {
		p.known[u.user.ID] = true
	}
	p.mu.Unlock()
	p.updates <- u
}

func (p *platform) limitAfter(n int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.okLeft, p.retry = n, d
}

func (p *platform) refuseAfter(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = append(p.refuse, n)
}

func (p *platform) block(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked[id] = true
}

// message is what the bot posts: text, read as Discord-style markdown
// when markdown is set, and an image. plain is a markdown message's text
// without markup, posted instead should the platform refuse it.
type message struct {
	text     string
	markdown bool
	plain    string
	imageURL string
	file     *core.OutboundFile
}

func (p *platform) post(thread string, m message) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.known[thread] || p.blocked[thread] {
		return "", errForbidden
	}
	if p.retry > 0 {
		if p.okLeft == 0 {
			d := p.retry
			p.retry = 0
			return "", errRateLimited{d}
		}
		p.okLeft--
	}
	if m.markdown && len(p.refuse) > 0 {
		if p.refuse[0] == 0 {
			p.refuse = p.refuse[1:]
			return "", errMalformed
		}
		p.refuse[0]--
	}
	p.seq++
	id := strconv.Itoa(p.seq)
	shown := markuptest.Rendered{Text: m.text}
	if m.markdown {
		shown = markuptest.Discord(m.text)
	}
	p.sent = append(p.sent, adaptertest.Sent{
		ChannelThreadID: thread, Text: m.text, Shown: &shown, ImageURL: m.imageURL, PlatformMessageID: id, At: time.Now(),
	})
	if f := m.file; f != nil {
		p.files[thread] = append(p.files[thread], adaptertest.SentFile{Kind: f.Kind, Name: f.Name, MIME: f.MIME,
			Data: f.Data, Caption: shown.Text, CaptionShown: &shown, PlatformMessageID: id})
	}
	return id, nil
}

func (p *platform) filesTo(thread string) []adaptertest.SentFile {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]adaptertest.SentFile(nil), p.files[thread]...)
}

func (p *platform) sentTo(thread string) []adaptertest.Sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []adaptertest.Sent
	for _, s := range p.sent {
		if s.ChannelThreadID == thread {
			out = append(out, s)
		}
	}
	return out
}

func (p *platform) typingIn(thread string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.typing[thread]
}

// refAdapter is the smallest adapter that honours the whole contract.
type refAdapter struct {
	p     *platform
	limit int

	stop chan struct{}
	done chan struct{}
}

var (
	_ core.Adapter         = (*refAdapter)(nil)
	_ core.TypingIndicator = (*refAdapter)(nil)
	_ core.ImageSender     = (*refAdapter)(nil)
	_ core.FileSender      = (*refAdapter)(nil)
)

func (a *refAdapter) Name() string            { return "ref" }
func (a *refAdapter) Platform() core.Platform { return "ref" }
func (a *refAdapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: a.limit, Markup: "markdown", Typing: true, RichText: true}
}

func (a *refAdapter) Start(_ context.Context, h core.Host) error {
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(a.done)
		for {
			select {
			case <-a.stop:
				return
			case u := <-a.p.updates:
				if u.kind != "dm" {
					continue
				}
				_ = h.HandleInbound(context.Background(), core.InboundMessage{
					Platform: "ref", ChannelThreadID: u.user.ID, ChannelUserID: u.user.ID,
					DisplayName: u.user.Name, Text: u.text, PlatformMessageID: u.id,
					SentAt: u.at, Direct: true,
				})
			}
		}
	}()
	return nil
}

func (a *refAdapter) Stop(ctx context.Context) error {
	close(a.stop)
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send renders rich text as markdown split to the limit, every part
// formatted, and text as it is.
func (a *refAdapter) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	var msgs []message
	if msg.Format == core.FormatRichText {
		for _, part := range markup.SplitDiscord(msg.Text, a.limit) {
			msgs = append(msgs, message{text: part.Text, markdown: true, plain: part.Plain})
		}
	} else {
		for _, part := range textsplit.Split(msg.Text, a.limit) {
			msgs = append(msgs, message{text: part})
		}
	}
	return a.post(ctx, msg.ChannelThreadID, msgs)
}

// SendImage posts the image with its caption, or, when the caption is
// over 200 characters, alone and the caption after it.
func (a *refAdapter) SendImage(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	img := message{text: msg.Text, imageURL: msg.ImageURL}
	if msg.Format == core.FormatRichText {
		img.text, img.markdown = markup.Discord(msg.Text), true
	}
	if utf8.RuneCountInString(img.text) <= 200 {
		return a.post(ctx, msg.ChannelThreadID, []message{img})
	}
	res, err := a.post(ctx, msg.ChannelThreadID, []message{{imageURL: msg.ImageURL}})
	if err != nil {
		return res, err
	}
	more, err := a.Send(ctx, msg)
	res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
	return res, err
}

// SendFiles posts a message per file, the text (rendered as Send
// renders it) with the first.
func (a *refAdapter) SendFiles(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	msgs := make([]message, len(msg.Files))
	for i := range msg.Files {
		msgs[i].file = &msg.Files[i]
	}
	msgs[0].text = msg.Text
	if msg.Format == core.FormatRichText {
		msgs[0].text, msgs[0].markdown = markup.Discord(msg.Text), true
	}
	return a.post(ctx, msg.ChannelThreadID, msgs)
}

func (a *refAdapter) post(ctx context.Context, thread string, msgs []message) (core.SendResult, error) {
	var res core.SendResult
	for _, m := range msgs {
		for {
			id, err := a.p.post(thread, m)
			var rl errRateLimited
			switch {
			case err == nil:
				res.PlatformMessageIDs = append(res.PlatformMessageIDs, id)
			case errors.As(err, &rl):
				select {
				case <-time.After(rl.retryAfter):
					continue
				case <-ctx.Done():
					return res, fmt.Errorf("waiting out a rate limit: %w", ctx.Err())
				}
			case errors.Is(err, errMalformed) && m.markdown:
				// Refused markup: the part goes again as plain text.
				var plain []message
				for _, part := range textsplit.Split(m.plain, a.limit) {
					plain = append(plain, message{text: part})
				}
				more, err := a.post(ctx, thread, plain)
				res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
				if err != nil {
					return res, err
				}
			case errors.Is(err, errForbidden):
				return res, &core.PermanentError{Reason: "forbidden", Err: err}
			default:
				return res, err
			}
			break
		}
	}
	return res, nil
}

func (a *refAdapter) Typing(_ context.Context, thread string) error {
	a.p.mu.Lock()
	defer a.p.mu.Unlock()
	a.p.typing[thread]++
	return nil
}
