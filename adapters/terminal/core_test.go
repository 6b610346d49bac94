package terminal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/store/storetest"
)

// TestMarkdownReplyPrintsPlain runs a real turn through the core: the
// model answers in Markdown, and the terminal, which cannot show markup,
// prints it as plain text with no marker left. Not parallel: TestMain
// checks for leaked goroutines, and the dispatcher's are stopped at the
// end of the test.
func TestMarkdownReplyPrintsPlain(t *testing.T) {
	model := llmtest.NewServer(t)
	model.Enqueue(llmtest.Text("# Your plan\n\n**First**, run `go test ./...`:\n\n```sh\ngo test ./...\n```\n\n- read the *log*\n- fix ~~nothing~~ it"))
	a, term, thread := newTerminal(t)
	startCore(t, a, term, modelClient(t, model), outbox.Streaming{})

	term.typeLine(t, "what now?")

	var got []adaptertest.Sent
	require.Eventually(t, func() bool {
		got = term.sent(thread)
		return len(got) > 0
	}, 10*time.Second, 5*time.Millisecond, "no reply was printed")
	require.Len(t, got, 1)
	reply := got[0].Text
	for _, marker := range []string{"**", "`", "#", "~~", "*log*"} {
		require.NotContains(t, reply, marker, "the terminal shows no Markdown")
	}
	for _, text := range []string{"Your plan", "First, run go test ./...:", "go test ./...", "• read the log", "fix nothing it"} {
		require.Contains(t, reply, text)
	}
}

// newTerminal is ada's terminal, provisioned, with a screen of its own,
// and its thread.
func newTerminal(t *testing.T) (*terminal.Adapter, *screen, string) {
	t.Helper()
	a := terminal.New()
	a.User = "ada"
	require.NoError(t, a.Provision(context.Background(), core.Env{BotName: botName}))
	require.NoError(t, a.Validate())
	thread := "console:ada"
	term := newScreen(t, thread)
	a.In, a.Out = term.inR, term.outW
	return a, term, thread
}

// modelClient is an llm client of model.
func modelClient(t *testing.T, model *llmtest.Server) *llm.Client {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: model.URL(), APIKey: "sk-test", Model: "test-model", Timeout: 10 * time.Second})
	require.NoError(t, err)
	return client
}

// startCore runs a dispatcher with m and streaming st over a fresh SQLite
// store behind the terminal a, stopped with a and its screen at the end
// of the test.
func startCore(t *testing.T, a *terminal.Adapter, term *screen, m core.LLM, st outbox.Streaming) {
	t.Helper()
	ctx := context.Background()
	db := storetest.OpenSQLite(t)
	require.NoError(t, db.Migrate(ctx))
	d, err := engine.New(engine.Config{Store: db, LLM: m, Adapters: []core.Adapter{a},
		Debounce: time.Millisecond, PollInterval: 50 * time.Millisecond, Streaming: st})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx, d))
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, d.Stop(stop))
		term.closeInput()
		require.NoError(t, a.Stop(stop))
	})
}
