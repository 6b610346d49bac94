package terminal_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/core"
)

const botName = "Subaru"

// TestConformance runs the adapter conformance suite with a terminal as the
// fake platform: the suite types on In and reads the replies off Out. Not
// parallel: the suite's Stop case checks goroutines.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
		a := terminal.New()
		a.User = adaptertest.Alice.Name
		a.FilesDir = t.TempDir()
		require.NoError(t, a.Provision(context.Background(), core.Env{BotName: botName}))
		require.NoError(t, a.Validate())
		user := adaptertest.User{ID: "console:" + a.User, Name: a.User}
		term := newScreen(t, user.ID)
		a.In, a.Out = term.inR, term.outW
		return &adaptertest.Rig{
			Adapter: a,
			DM: func(t *testing.T, u adaptertest.User, text string) string {
				require.Equal(t, user, u, "the terminal has one user")
				term.typeLine(t, text)
				return user.ID
			},
			ThreadOf: func(t *testing.T, u adaptertest.User) string {
				require.Equal(t, user, u, "the terminal has one user")
				return user.ID
			},
			Sent:         func(_ *testing.T, thread string) []adaptertest.Sent { return term.sent(thread) },
			Users:        []adaptertest.User{user},
			SingleUser:   true,
			NoMessageIDs: true, // a terminal shows text, not ids
			Quiesce:      func(*testing.T) { term.closeInput() },
			FilesSent: func(t *testing.T, thread string) []adaptertest.SentFile {
				return savedFiles(t, a.FilesDir, term.sent(thread))
			},
			// The rest is nil: a terminal has no groups, channels, echoes,
			// edits, rate limits, blocking, unknown chats or typing.
		}
	})
}

// savedLine is how the terminal prints a file it saved: its kind, its
// path and its size.
var savedLine = regexp.MustCompile(`^\[(\w+) saved: (.+) \(([^()]+)\)\]$`)

// savedFiles reads the files the printed messages say were saved in dir,
// in order, as the user would open them: the kind printed, the name the
// file was saved under less the prefix that keeps it apart from others,
// its bytes. A message's other lines are its first file's caption.
func savedFiles(t *testing.T, dir string, messages []adaptertest.Sent) []adaptertest.SentFile {
	t.Helper()
	var out []adaptertest.SentFile
	for _, m := range messages {
		var caption []string
		first := len(out)
		for _, line := range strings.Split(m.Text, "\n") {
			saved := savedLine.FindStringSubmatch(line)
			if saved == nil {
				caption = append(caption, line)
				continue
			}
			require.Equal(t, dir, filepath.Dir(saved[2]), "the file is saved in files_dir")
			data, err := os.ReadFile(saved[2])
			require.NoError(t, err, "the printed path opens")
			require.Equal(t, core.ByteSize(int64(len(data))), saved[3], "the printed size is the file's")
			name := uniquePrefix.ReplaceAllString(filepath.Base(saved[2]), "")
			out = append(out, adaptertest.SentFile{Kind: core.AttachmentKind(saved[1]), Name: name, Data: data})
		}
		if first < len(out) {
			out[first].Caption = strings.TrimSpace(strings.Join(caption, "\n"))
		}
	}
	return out
}

// uniquePrefix is what the terminal puts before a saved file's name.
var uniquePrefix = regexp.MustCompile(`^c-[0-9a-f]+-[0-9]+-`)

// screen plays the user at a terminal: lines typed go to the adapter's
// In, and what the adapter prints on Out is parsed back into messages.
type screen struct {
	thread string
	inR    *io.PipeReader
	inW    *io.PipeWriter
	outR   *io.PipeReader
	outW   *io.PipeWriter
	parsed chan struct{} // closed when the output reader has finished

	mu       sync.Mutex
	messages []adaptertest.Sent
	open     []string // lines of the message being printed
	isOpen   bool
}

func newScreen(t *testing.T, thread string) *screen {
	term := &screen{thread: thread, parsed: make(chan struct{})}
	term.inR, term.inW = io.Pipe()
	term.outR, term.outW = io.Pipe()
	go term.readOutput()
	// Runs after the suite's Stop: the host closes the terminal.
	t.Cleanup(func() {
		term.closeInput()
		_ = term.outW.Close()
		<-term.parsed
	})
	return term
}

// closeInput ends the input, as a host closing stdin at exit does; the
// adapter's blocked read returns.
func (term *screen) closeInput() { _ = term.inW.Close() }

// typeLine types text and Enter. It fails if the adapter does not take the
// line (a write on a pipe waits for the reader).
func (term *screen) typeLine(t *testing.T, text string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := io.WriteString(term.inW, text+"\n")
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal did not read the typed line")
	}
}

// readOutput parses Out until it is closed. The adapter prints each part
// as "<bot>: <text>" (text may span lines) and then the "> " prompt; the
// prompt, or the next part, ends a message.
func (term *screen) readOutput() {
	defer close(term.parsed)
	buf := make([]byte, 32<<10)
	partial := ""
	for {
		n, err := term.outR.Read(buf)
		partial += string(buf[:n])
		term.mu.Lock()
		for {
			i := strings.IndexByte(partial, '\n')
			if i < 0 {
				break
			}
			term.line(partial[:i])
			partial = partial[i+1:]
		}
		if strings.HasPrefix(partial, "> ") {
			term.finish() // the prompt after the last part
		}
		term.mu.Unlock()
		if err != nil { // closed: the rig is done
			return
		}
	}
}

// line takes one complete output line; term.mu is held.
func (term *screen) line(s string) {
	prompted := false
	for strings.HasPrefix(s, "> ") {
		s, prompted = s[len("> "):], true
	}
	if prompted {
		term.finish()
	}
	switch {
	case strings.HasPrefix(s, botName+": "):
		term.finish()
		term.open, term.isOpen = []string{strings.TrimPrefix(s, botName+": ")}, true
	case term.isOpen:
		term.open = append(term.open, s)
	}
}

// finish records the message being printed, if any; term.mu is held.
func (term *screen) finish() {
	if !term.isOpen {
		return
	}
	term.messages = append(term.messages, adaptertest.Sent{
		ChannelThreadID: term.thread,
		Text:            strings.Join(term.open, "\n"),
		At:              time.Now(),
	})
	term.open, term.isOpen = nil, false
}

func (term *screen) sent(thread string) []adaptertest.Sent {
	if thread != term.thread {
		return nil
	}
	term.mu.Lock()
	defer term.mu.Unlock()
	return append([]adaptertest.Sent(nil), term.messages...)
}
