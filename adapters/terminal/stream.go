package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

// Streaming modes (adapters.terminal.streaming). A terminal has one way
// to show a reply growing, printing it as it arrives, so auto and edits
// both mean it.
const (
	streamAuto  = "auto"
	streamEdits = "edits"
	streamOff   = "off"
)

// withdrawn ends the line of a reply taken back after it began to print
// (the turn failed or was stopped): quiet, but no half reply is left
// looking whole.
const withdrawn = " (withdrawn)"

// errStreamingOff is Stream's error when adapters.terminal.streaming is
// off: the core then sends each reply whole.
var errStreamingOff = errors.New("terminal adapter: streaming is off (adapters.terminal.streaming)")

// validStreaming checks adapters.terminal.streaming, naming the key.
func validStreaming(mode string) error {
	switch mode {
	case "", streamAuto, streamEdits, streamOff:
		return nil
	}
	return fmt.Errorf("terminal adapter: adapters.terminal.streaming is %q; it must be auto, edits or off", mode)
}

// StreamCapabilities reports Mode "print" (no limit between updates), or
// no mode when streaming is off.
func (a *Adapter) StreamCapabilities() core.StreamCapabilities {
	if a.Streaming == streamOff {
		return core.StreamCapabilities{}
	}
	return core.StreamCapabilities{Mode: "print"}
}

// Stream prepares a reply printed as it arrives: "<bot name>: " and the
// words so far, then each update's new words on the same line, and the
// rest with the prompt at Finish, so that the reply reads once.
func (a *Adapter) Stream(ctx context.Context, msg core.OutboundMessage) (core.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("printing to terminal: %w", err)
	}
	if a.Streaming == streamOff {
		return nil, errStreamingOff
	}
	if err := a.canPrint(); err != nil {
		return nil, err
	}
	return &printStream{a: a, rich: msg.Format == core.FormatRichText}, nil
}

// canPrint says why nothing can be printed now, if so.
func (a *Adapter) canPrint() error {
	a.mu.Lock()
	stopped := a.stopped
	a.mu.Unlock()
	if stopped {
		return errors.New("printing to terminal: terminal adapter is stopped")
	}
	if a.Out == nil {
		return errors.New("printing to terminal: no output")
	}
	return nil
}

// printStream is one reply printing as it arrives.
type printStream struct {
	a    *Adapter
	rich bool
	// printed is the reply's text on the current line (guarded by the
	// adapter's outMu); it counts only while a.lineOwner is this stream.
	printed string
	ended   bool
}

// visibleText is text as the terminal shows it: Markdown made plain, and
// without trailing white space, which the next words may or may not
// follow (a finished reply has none).
func visibleText(text string, rich bool) string {
	if rich {
		text = markup.Plain(text)
	}
	return strings.TrimRightFunc(text, unicode.IsSpace)
}

// Update prints what text adds to what the line shows. When text does not
// extend it (the reply was rewritten, or something else was printed
// since), the reply starts again on a new line.
func (s *printStream) Update(ctx context.Context, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("printing to terminal: %w", err)
	}
	if s.ended {
		return errors.New("printing to terminal: the reply is already finished")
	}
	if err := s.a.canPrint(); err != nil {
		return err
	}
	text = visibleText(text, s.rich)
	if text == "" {
		return nil
	}
	a := s.a
	a.outMu.Lock()
	defer a.outMu.Unlock()
	if _, err := io.WriteString(a.Out, s.continuationLocked(text)); err != nil {
		return fmt.Errorf("printing to terminal: %w", err)
	}
	s.printed, a.lineOwner, a.atPrompt = text, s, false
	return nil
}

// continuationLocked is what to print for the line to show text: the new
// words, or the reply again from its start on a line of its own.
func (s *printStream) continuationLocked(text string) string {
	a := s.a
	if a.lineOwner == s && strings.HasPrefix(text, s.printed) {
		return text[len(s.printed):]
	}
	return a.leadLocked() + a.botName + ": " + text
}

// Finish prints the rest of the finished reply and the prompt. A reply
// that never printed is sent as Send sends it.
func (s *printStream) Finish(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if s.ended {
		return core.SendResult{}, errors.New("printing to terminal: the reply is already finished")
	}
	s.ended = true
	if s.printed == "" {
		return s.a.Send(ctx, msg)
	}
	if err := ctx.Err(); err != nil {
		s.withdraw()
		return core.SendResult{}, fmt.Errorf("printing to terminal: %w", err)
	}
	if err := s.a.canPrint(); err != nil {
		return core.SendResult{}, err
	}
	text := visibleText(msg.Text, msg.Format == core.FormatRichText)
	parts := textParts(msg)
	if text == "" || len(parts) == 0 {
		s.withdraw()
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	a := s.a
	a.outMu.Lock()
	defer a.outMu.Unlock()
	if _, err := io.WriteString(a.Out, s.continuationLocked(text)+"\n"+prompt); err != nil {
		return core.SendResult{}, fmt.Errorf("printing to terminal: %w", err)
	}
	a.lineOwner, a.atPrompt = nil, true
	ids := make([]string, len(parts))
	for i := range parts {
		ids[i] = a.nextID()
	}
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// Abandon ends a reply that began to print with a quiet mark and the
// prompt; one that printed nothing prints nothing.
func (s *printStream) Abandon(context.Context) error {
	if s.ended {
		return errors.New("printing to terminal: the reply is already finished")
	}
	s.ended = true
	s.withdraw()
	return nil
}

// withdraw marks the reply's line as withdrawn, if the reply still ends
// it. A reply something else has printed after is left as it is: what
// follows it already shows it stopped.
func (s *printStream) withdraw() {
	a := s.a
	a.outMu.Lock()
	defer a.outMu.Unlock()
	if a.lineOwner != s {
		return
	}
	if _, err := io.WriteString(a.Out, withdrawn+"\n"+prompt); err != nil {
		a.log.Error("writing to terminal", "err", err)
	}
	a.lineOwner, a.atPrompt = nil, true
}

// Grown is empty: a terminal has no message to edit or delete later.
func (s *printStream) Grown() []string { return nil }
