package terminal

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

func init() {
	core.RegisterAdapter(core.AdapterInfo{Name: Name, New: func() core.Adapter { return New() }})
}

// Name is the adapter's name: its registry entry, its config section
// (adapters.terminal) and what `parley chat` asks the app for. It was
// "console" before; it is not the platform id (see Platform).
const Name = "terminal"

// Platform is the platform this adapter serves: the core.Platform of its
// conversations and of the API's channel_type "console". It stays
// "console" although the adapter is named "terminal": platform ids are a
// fixed contract (docs/contracts.md) stored in every conversation, so a new id
// would cut every existing terminal conversation off its history. Look the
// adapter up by Name, its conversations by Platform.
const Platform core.Platform = "console"

// Interface guards.
var (
	_ core.Adapter        = (*Adapter)(nil)
	_ core.Provisioner    = (*Adapter)(nil)
	_ core.Validator      = (*Adapter)(nil)
	_ core.PlatformTitler = (*Adapter)(nil)
	_ core.Streamer       = (*Adapter)(nil)
	_ core.StreamModer    = (*Adapter)(nil)
)

const (
	// maxMessageLength is how long one printed part may be, in runes. The
	// terminal has no limit, but the core splits by this number.
	maxMessageLength = 16000
	// maxLineBytes is the longest input line accepted.
	maxLineBytes = 1 << 20
	prompt       = "> "
)

// Adapter is the terminal chat. Create it with New; the host sets In and
// Out before Start.
type Adapter struct {
	// User names the local user: the conversation is "console:<user>",
	// after the platform (default $USER, or "local").
	User string `yaml:"user"`
	// Streaming is how a reply shows while the model writes it: auto or
	// edits (the same here: printed as it arrives) or off (printed whole
	// once written) (default auto).
	Streaming string `yaml:"streaming"`
	// FilesDir is where the files the bot sends are saved, each as its
	// own file whose path is printed (default parley-files in the
	// system's temporary directory).
	FilesDir string `yaml:"files_dir"`

	// In is read line by line for the user's messages. The host owns it:
	// Stop does not close it.
	In io.Reader `yaml:"-"`
	// Out receives the prompt and the bot's replies.
	Out io.Writer `yaml:"-"`

	log     *slog.Logger
	clock   core.Clock
	botName string
	// idPrefix keeps platform message ids unique across runs of the
	// binary, so the store never mistakes a new line for an old one.
	idPrefix string
	seq      atomic.Uint64

	// outMu serialises writes to Out; atPrompt is true when the last thing
	// written was the prompt (so a reply starts on a new line); lineOwner
	// is the streamed reply whose words end the last line, if any (what
	// else prints starts on a new line, and the reply, if it grows on,
	// starts again below).
	outMu     sync.Mutex
	atPrompt  bool
	lineOwner *printStream

	mu       sync.Mutex
	started  bool
	stopped  bool
	stop     chan struct{} // closed by Stop
	done     chan struct{} // closed at end of input or Stop
	doneOnce sync.Once
	cancel   context.CancelFunc
	handling sync.WaitGroup // the goroutine handing lines to the core
}

// New returns a terminal adapter with its defaults set. It has no side
// effects; User defaults to $USER.
func New() *Adapter {
	return newWithLookup(os.LookupEnv)
}

// newWithLookup is New with the environment lookup injected.
func newWithLookup(lookupEnv func(string) (string, bool)) *Adapter {
	user, ok := lookupEnv("USER")
	if user = strings.TrimSpace(user); !ok || user == "" {
		user = "local"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return &Adapter{
		User:      user,
		Streaming: streamAuto,
		FilesDir:  filepath.Join(os.TempDir(), "parley-files"),
		log:       slog.New(slog.DiscardHandler),
		clock:     core.SystemClock{},
		botName:   "Parley",
		idPrefix:  hex.EncodeToString(b[:]),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
}

// Name returns Name, "terminal".
func (a *Adapter) Name() string { return Name }

// Platform returns Platform.
func (a *Adapter) Platform() core.Platform { return Platform }

// PlatformTitle is how the model hears the platform named: "the terminal".
func (a *Adapter) PlatformTitle() string { return "the terminal" }

// Capabilities reports plain text in 16000-rune parts and no typing
// indicator.
func (a *Adapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: maxMessageLength, Markup: "plain", Typing: false}
}

// Provision takes the logger, clock and bot name from the host.
func (a *Adapter) Provision(_ context.Context, env core.Env) error {
	if env.Logger != nil {
		a.log = env.Logger.With("adapter", "terminal")
	}
	if env.Clock != nil {
		a.clock = env.Clock
	}
	if name := strings.TrimSpace(env.BotName); name != "" {
		a.botName = name
	}
	return nil
}

// Validate checks the decoded config.
func (a *Adapter) Validate() error {
	if strings.TrimSpace(a.User) == "" {
		return errors.New("terminal adapter: user must not be empty")
	}
	if strings.IndexFunc(a.User, unicode.IsControl) >= 0 {
		return errors.New("terminal adapter: user must not contain control characters")
	}
	if strings.TrimSpace(a.FilesDir) == "" {
		return errors.New("terminal adapter: files_dir must not be empty")
	}
	return validStreaming(a.Streaming)
}

// Start prints the prompt and begins handing each non-empty line of In to
// h. It returns at once; the reading stops at end of input or on Stop.
func (a *Adapter) Start(ctx context.Context, h core.Host) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting terminal adapter: %w", err)
	}
	if h == nil {
		return errors.New("starting terminal adapter: nil inbound handler")
	}
	if a.In == nil || a.Out == nil {
		return errors.New("starting terminal adapter: In and Out must be set")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.stopped:
		return errors.New("starting terminal adapter: already stopped")
	case a.started:
		return errors.New("starting terminal adapter: already started")
	}
	a.started = true
	// Turns outlive Start's ctx (often a start-up timeout) but not Stop.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel

	lines := make(chan string)
	go a.read(lines)
	a.handling.Add(1)
	go a.handle(runCtx, h, lines)
	a.printPrompt()
	return nil
}

// read sends In's lines to lines and closes it at end of input. It exits
// early once Stop is called, but only when its current read returns.
func (a *Adapter) read(lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(a.In)
	sc.Buffer(make([]byte, 0, 4096), maxLineBytes)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-a.stop:
			return
		}
	}
	if err := sc.Err(); err != nil {
		a.log.Error("reading terminal input", "err", err)
	}
}

// handle hands each line to the core, one at a time, in order.
func (a *Adapter) handle(ctx context.Context, h core.InboundHandler, lines <-chan string) {
	defer a.handling.Done()
	defer a.closeDone()
	thread := "console:" + a.User
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-a.stop:
			return
		}
		if !ok {
			return // end of input
		}
		a.noteInput()
		text := strings.TrimSpace(line)
		if text == "" {
			a.printPrompt()
			continue
		}
		att, withFile, isFile, err := attachment(text)
		if err != nil {
			a.printLine("(" + err.Error() + ")")
			a.printPrompt()
			continue
		}
		msg := core.InboundMessage{
			Platform:          Platform,
			ChannelThreadID:   thread,
			ChannelUserID:     thread,
			DisplayName:       a.User,
			Text:              text,
			PlatformMessageID: a.nextID(),
			SentAt:            a.clock.Now(),
			Direct:            true,
		}
		if isFile {
			msg.Text, msg.Attachments = withFile, []core.Attachment{att}
		}
		if err := h.HandleInbound(ctx, msg); err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Error("handing terminal message to the core", "err", err)
			a.printLine("(not delivered: " + err.Error() + ")")
		}
	}
}

// Done is closed when In reaches its end (or fails) and every line before
// it has been handed to the core, or when the adapter stops.
func (a *Adapter) Done() <-chan struct{} { return a.done }

func (a *Adapter) closeDone() { a.doneOnce.Do(func() { close(a.done) }) }

// Stop stops handing lines to the core and returns once the goroutine doing
// so has finished (bounded by ctx). A read blocked on In is not waited for;
// see the package documentation.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	close(a.stop)
	cancel := a.cancel
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	finished := make(chan struct{})
	go func() {
		a.handling.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		return fmt.Errorf("stopping terminal adapter: %w", ctx.Err())
	}
	a.closeDone()
	return nil
}

// Send prints msg.Text as "<bot name>: <text>", one line per part, then the
// prompt, and returns one id per part. A terminal shows no markup: the
// core hands it the model's Markdown already as plain text (Capabilities
// has no RichText), and rich text sent here directly is made plain the
// same way (markup.SplitPlain), so no ** or ` ever shows.
func (a *Adapter) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("printing to terminal: %w", err)
	}
	if err := a.canPrint(); err != nil {
		return core.SendResult{}, err
	}
	parts := textParts(msg)
	if len(parts) == 0 {
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	var b strings.Builder
	ids := make([]string, len(parts))
	for i, p := range parts {
		ids[i] = a.nextID()
		b.WriteString(a.botName)
		b.WriteString(": ")
		b.WriteString(p)
		if !strings.HasSuffix(p, "\n") {
			b.WriteString("\n")
		}
	}
	a.outMu.Lock()
	defer a.outMu.Unlock()
	if _, err := io.WriteString(a.Out, a.leadLocked()+b.String()+prompt); err != nil {
		return core.SendResult{}, fmt.Errorf("printing to terminal: %w", err)
	}
	a.atPrompt, a.lineOwner = true, nil
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// textParts is msg's text as the parts to print.
func textParts(msg core.OutboundMessage) []string {
	if msg.Format != core.FormatRichText {
		return textsplit.Split(msg.Text, maxMessageLength)
	}
	var out []string
	for _, p := range markup.SplitPlain(msg.Text, maxMessageLength) {
		if strings.TrimSpace(p.Text) != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// printPrompt writes the prompt unless it is already showing.
func (a *Adapter) printPrompt() {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	if a.atPrompt {
		return
	}
	if _, err := io.WriteString(a.Out, a.leadLocked()+prompt); err != nil {
		a.log.Error("writing terminal prompt", "err", err)
		return
	}
	a.atPrompt, a.lineOwner = true, nil
}

// noteInput records that the user ended the prompt line with Enter.
func (a *Adapter) noteInput() {
	a.outMu.Lock()
	a.atPrompt, a.lineOwner = false, nil
	a.outMu.Unlock()
}

// printLine writes a note on its own line, then the prompt.
func (a *Adapter) printLine(s string) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	if _, err := io.WriteString(a.Out, a.leadLocked()+s+"\n"+prompt); err != nil {
		a.log.Error("writing to terminal", "err", err)
		return
	}
	a.atPrompt, a.lineOwner = true, nil
}

// leadLocked is what starts a new line of output: a line break when the
// prompt or a growing reply ends the last line.
func (a *Adapter) leadLocked() string {
	if a.atPrompt || a.lineOwner != nil {
		return "\n"
	}
	return ""
}

// nextID returns a fresh platform message id, "c-<instance>-<n>".
func (a *Adapter) nextID() string {
	return "c-" + a.idPrefix + "-" + strconv.FormatUint(a.seq.Add(1), 10)
}
