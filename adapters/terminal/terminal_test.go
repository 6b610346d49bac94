package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// TestMain fails the run if a test leaves a reader or handler goroutine
// behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitFor = 5 * time.Second

// fakeCore records what the adapter hands it.
type fakeCore struct {
	// No history, model health or commands: a host that takes messages.
	core.InboundOnly
	mu      sync.Mutex
	got     []core.InboundMessage
	err     error
	changed chan struct{}
}

func newFakeCore() *fakeCore { return &fakeCore{changed: make(chan struct{}, 1)} }

func (f *fakeCore) HandleInbound(_ context.Context, msg core.InboundMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.got = append(f.got, msg)
	select {
	case f.changed <- struct{}{}:
	default:
	}
	return nil
}

func (f *fakeCore) messages() []core.InboundMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]core.InboundMessage(nil), f.got...)
}

// output is an Out that lets a test wait for what was printed.
type output struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.buf.Write(p)
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the whole output is want.
func (o *output) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(waitFor)
	for o.String() != want {
		select {
		case <-o.changed:
		case <-deadline:
			require.Equal(t, want, o.String(), "output did not become the expected text in time")
			return
		}
	}
}

type testBundle struct {
	adapter *Adapter
	core    *fakeCore
	in      *io.PipeWriter
	out     *output
	now     time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{
		adapter: newWithLookup(func(k string) (string, bool) { return map[string]string{"USER": "ada"}[k], k == "USER" }),
		core:    newFakeCore(),
		out:     newOutput(),
		now:     time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC),
	}
	pr, pw := io.Pipe()
	b.in = pw
	b.adapter.In = pr
	b.adapter.Out = b.out
	require.NoError(t, b.adapter.Provision(context.Background(), core.Env{Clock: coretest.NewClock(b.now), BotName: "Subaru"}))
	require.NoError(t, b.adapter.Validate())
	require.NoError(t, b.adapter.Start(context.Background(), b.core))
	t.Cleanup(func() {
		// Closing the pipe ends a read that Stop cannot interrupt.
		_ = pw.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.adapter.Stop(ctx))
	})
	return b
}

// typeLines writes lines to In as a user would, each ended by Enter.
func (b *testBundle) typeLines(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		_, err := io.WriteString(b.in, l+"\n")
		require.NoError(t, err)
	}
}

func (b *testBundle) waitDone(t *testing.T) {
	t.Helper()
	select {
	case <-b.adapter.Done():
	case <-time.After(waitFor):
		require.FailNow(t, "Done not closed")
	}
}

func (b *testBundle) send(t *testing.T, text string) []string {
	t.Helper()
	res, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Text: text})
	require.NoError(t, err)
	return res.PlatformMessageIDs
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	info, ok := core.Adapters().Lookup("terminal")
	require.True(t, ok)
	require.False(t, info.EnabledByDefault, "the terminal is off unless the config turns it on")
	_, ok = core.Adapters().Lookup("console")
	require.False(t, ok, "the adapter was renamed: no adapter is named console")
	a := info.New()
	require.Equal(t, "terminal", a.Name())
	require.Equal(t, core.Platform("console"), a.Platform(), "the platform id is unchanged: stored conversations keep it")
	require.Equal(t, Platform, a.Platform())
	require.Equal(t, "the terminal", core.PlatformTitle(a), "the model hears the platform named as before")
	require.Equal(t, core.Capabilities{MaxMessageLength: 16000, Markup: "plain", Typing: false}, a.Capabilities())
	_, typing := a.(core.TypingIndicator)
	require.False(t, typing, "Capabilities.Typing is false, so no TypingIndicator")
}

func TestUserDefaultsFromEnvironment(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	require.Equal(t, "ada", newWithLookup(env(map[string]string{"USER": "ada"})).User)
	require.Equal(t, "local", newWithLookup(env(map[string]string{})).User)
	require.Equal(t, "local", newWithLookup(env(map[string]string{"USER": "  "})).User)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	a := New()
	a.User = " "
	require.EqualError(t, a.Validate(), "terminal adapter: user must not be empty")
	a.User = "ada\nlovelace"
	require.EqualError(t, a.Validate(), "terminal adapter: user must not contain control characters")
	a.User = "ada"
	require.NoError(t, a.Validate())
}

func TestStartNeedsInAndOut(t *testing.T) {
	t.Parallel()
	a := New()
	require.EqualError(t, a.Start(context.Background(), newFakeCore()), "starting terminal adapter: In and Out must be set")
	require.NoError(t, a.Stop(context.Background()))
}

func TestLinesBecomeInboundMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)

	b.typeLines(t, "  hello there ", "", "   ", "second line")
	require.NoError(t, b.in.Close())
	b.waitDone(t)

	got := b.core.messages()
	require.Len(t, got, 2, "blank lines are not messages")
	for i, text := range []string{"hello there", "second line"} {
		require.True(t, strings.HasPrefix(got[i].PlatformMessageID, "c-"), got[i].PlatformMessageID)
		require.Equal(t, core.InboundMessage{
			Platform:          Platform,
			ChannelThreadID:   "console:ada",
			ChannelUserID:     "console:ada",
			DisplayName:       "ada",
			Text:              text,
			PlatformMessageID: got[i].PlatformMessageID,
			SentAt:            b.now,
			Direct:            true,
		}, got[i])
	}
	require.NotEqual(t, got[0].PlatformMessageID, got[1].PlatformMessageID)
	// The prompt, then one more for each blank line.
	require.Equal(t, "> > > ", b.out.String())
}

func TestSendPrintsReplyAndPrompt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")

	// A message arriving while the prompt shows starts on its own line.
	ids := b.send(t, "Good morning!")
	require.Len(t, ids, 1)
	b.out.waitFor(t, "> \nSubaru: Good morning!\n> ")

	// After the user pressed Enter the reply follows directly.
	b.typeLines(t, "hi")
	b.waitMessages(t, 1)
	b.send(t, "Hi Ada.\nHow are you?")
	b.out.waitFor(t, "> \nSubaru: Good morning!\n> Subaru: Hi Ada.\nHow are you?\n> ")
}

func (b *testBundle) waitMessages(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitFor)
	for len(b.core.messages()) < n {
		select {
		case <-b.core.changed:
		case <-deadline:
			require.FailNow(t, "the core got too few messages", "got %d, want %d", len(b.core.messages()), n)
		}
	}
}

func TestSendSplitsLongText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	text := strings.Repeat("wörd 😀 ", 5000) + "end" // 40003 runes, no newlines

	ids := b.send(t, text)

	require.Len(t, ids, 3)
	out := strings.TrimSuffix(strings.TrimPrefix(b.out.String(), "> \n"), "\n> ")
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 3)
	var joined strings.Builder
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "Subaru: "), l[:20])
		joined.WriteString(strings.TrimPrefix(l, "Subaru: "))
	}
	require.Equal(t, text, joined.String(), "nothing lost or reordered")
}

func TestConcurrentSendsDoNotInterleave(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("message %02d %s", i, strings.Repeat("x", 500))
			_, errs[i] = b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Text: text})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	var got []string
	for _, l := range strings.Split(b.out.String(), "\n") {
		if l = strings.TrimPrefix(l, "> "); l != "" {
			got = append(got, l)
		}
	}
	sort.Strings(got)
	require.Len(t, got, 20)
	for i, l := range got {
		require.Equal(t, fmt.Sprintf("Subaru: message %02d %s", i, strings.Repeat("x", 500)), l)
	}
}

func TestCoreErrorIsShown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.core.mu.Lock()
	b.core.err = errors.New("database is locked")
	b.core.mu.Unlock()

	b.typeLines(t, "hello")

	b.out.waitFor(t, "> (not delivered: database is locked)\n> ")
}

func TestStopWhileInputIsOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.typeLines(t, "before stop")
	b.waitMessages(t, 1)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	start := time.Now()
	require.NoError(t, b.adapter.Stop(ctx), "Stop does not wait for the blocked read")
	require.Less(t, time.Since(start), time.Second)
	b.waitDone(t)

	// The reader takes this line out of the pipe, then sees the stop.
	b.typeLines(t, "after stop")
	require.NoError(t, b.in.Close())
	require.Len(t, b.core.messages(), 1, "nothing is handed to the core after Stop")
	_, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Text: "late"})
	require.EqualError(t, err, "printing to terminal: terminal adapter is stopped")
}

func TestSendRejectsEmptyText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada"})
	require.True(t, core.IsPermanent(err), "got %v", err)
}

func TestRichTextPrintsWithoutMarkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	const md = "# Plan\n\n**Bold** step: run `go test` and read [the log](https://ci.example.com/1).\n\n- one\n- two"

	res, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Text: md, Format: core.FormatRichText})
	require.NoError(t, err)

	require.Len(t, res.PlatformMessageIDs, 1)
	b.out.waitFor(t, "> \nSubaru: Plan\n\nBold step: run go test and read the log (https://ci.example.com/1).\n\n• one\n• two\n> ")
}
