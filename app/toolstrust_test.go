package app

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/mcp/mcptest"
)

// Tools by trust, through parley run: a server marked owners_only and a
// tool allowed to owners and one user are offered in those users'
// conversations and never in anyone else's (not offered at all, not only
// refused).
func TestToolsByTrustThroughParleyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tool := func(name string) mcptest.Tool {
		return mcptest.Tool{Name: name, Description: "A tool.", Handler: func(context.Context, map[string]any) (*sdkmcp.CallToolResult, error) {
			return mcptest.Text("done"), nil
		}}
	}
	admin := mcptest.NewHTTPServer(t, tool("shell"))
	files := mcptest.NewHTTPServer(t, tool("read"), tool("write"))
	tg := telegramtest.NewServer(t)
	owner, friend, other := telegramtest.User{ID: 1001, FirstName: "Olga"}, telegramtest.User{ID: 3003, FirstName: "Ben"},
		telegramtest.User{ID: 5005, FirstName: "Eve"}
	r := b.start(t, b.writeConfig(t, telegramConfig(tg, fmt.Sprintf(`bot:
  owners: ["telegram:%d"]
mcp:
  servers:
    admin: {url: %s, owners_only: true}
    files:
      url: %s
      allow: {write: [owners, "telegram:%d"]}
`, owner.ID, admin, files, friend.ID))))
	require.Eventually(t, func() bool {
		_, h := getHealth(t, r.addr)
		return h.Components["mcp:admin"] == "ok" && h.Components["mcp:files"] == "ok"
	}, 60*time.Second, 20*time.Millisecond, "the mcp servers never came up; stderr:\n%s", r.stderr)

	offered := func(u telegramtest.User, n int) []string {
		t.Helper()
		text := fmt.Sprintf("hello from %s", u.FirstName)
		tg.SendPrivate(u, text)
		tg.WaitSent(t, u.ID, n, waitFor)
		for _, req := range b.model.Requests() {
			if req.LastUserMessage() == text {
				names := req.ToolNames()
				slices.Sort(names)
				return names
			}
		}
		t.Fatalf("no request of %s", u.FirstName)
		return nil
	}
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Hi!") })
	ownerTools := offered(owner, 1)
	require.Contains(t, ownerTools, "admin__shell")
	require.Contains(t, ownerTools, "files__write")
	require.Contains(t, ownerTools, "files__read")
	friendTools := offered(friend, 1)
	require.NotContains(t, friendTools, "admin__shell")
	require.Contains(t, friendTools, "files__write", "allowed by name")
	otherTools := offered(other, 1)
	require.NotContains(t, otherTools, "admin__shell", "owners_only: never offered to others")
	require.NotContains(t, otherTools, "files__write")
	require.Contains(t, otherTools, "files__read", "a tool not named in allow is everyone's")
}
