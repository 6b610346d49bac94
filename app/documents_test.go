package app

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// notesPlugin is a plugin as an author would write one that sends files:
// its tool write_notes puts a text document on the turn's reply. It is
// off unless a config names it (plugins.test_notes).
type notesPlugin struct{}

func (*notesPlugin) Name() string { return "test_notes" }

func (*notesPlugin) Tools(_ context.Context, t *core.Turn) ([]llm.Tool, error) {
	return []llm.Tool{{
		Name:        "write_notes",
		Description: "Write notes and send them as a document.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Call: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			t.Files = append(t.Files, core.OutboundFile{Kind: core.AttachDocument, Name: "notes.txt", MIME: "text/plain", Data: []byte(a.Text)})
			return "The notes go with your reply.", nil
		},
	}}, nil
}

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "test_notes", New: func() core.Plugin { return &notesPlugin{} }, OffByDefault: true})
}

// Through parley run on Telegram and Discord: a document a plugin's tool
// makes goes with the reply, its text the caption: Telegram's
// sendDocument, a Discord attachment, the bytes as made, once.
func TestDocumentFromAPluginReachesTheUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tg := telegramtest.NewServer(t)
	dc := discordtest.NewServer(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		if _, ok := r.ToolMessage("n1"); ok {
			return llmtest.Text("Your shopping list.")
		}
		return llmtest.ToolCalls(llmtest.Call("n1", "write_notes", `{"text":"flour\nmilk\neggs\n"}`))
	})
	dcSection := fmt.Sprintf("  discord:\n    token: %q\n    api_url: %q\n", dc.Token(), dc.URL())
	r := b.start(t, b.writeConfig(t, telegramConfig(tg, dcSection)+"plugins:\n  test_notes: {enabled: true}\n"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("parley's log:\n%s", r.stderr)
		}
	})

	tg.SendPrivate(ada, "my list as a file, please")
	files := tg.WaitFiles(t, ada.ID, 1, waitFor)
	require.Equal(t, "sendDocument", files[0].Method)
	require.Equal(t, "notes.txt", files[0].Name)
	require.Equal(t, []byte("flour\nmilk\neggs\n"), files[0].Data)
	tg.WaitSent(t, ada.ID, 1, waitFor)

	channel, _ := dc.SendDM(lin, "my list as a file, please")
	shown := dc.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool {
		return len(ms) > 0 && len(ms[len(ms)-1].Attachments) == 1
	}, waitFor)
	att := shown[len(shown)-1].Attachments[0]
	require.Equal(t, "notes.txt", att.Filename)
	require.Equal(t, []byte("flour\nmilk\neggs\n"), att.Data)
	require.Len(t, tg.Files(ada.ID), 1, "once")
}
