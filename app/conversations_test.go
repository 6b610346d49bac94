package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// seedBound stores a conversation on thread with a message, a one-shot
// reminder and the given recurring jobs ("name" or "name!" for a cancelled
// one), and returns its id and the jobs' ids.
func seedBound(t *testing.T, st *store.Store, thread string, recurring ...string) (int64, []int64) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web.Platform, ChannelThreadID: thread,
		ChannelUserID: "u-" + thread, DisplayName: "Ada", TimeZone: "Europe/Berlin", Text: "hi", Now: at})
	require.NoError(t, err)
	convID := res.Conversation.ID
	// Far ahead: a running bot's scheduler must leave the jobs alone.
	due := time.Date(2099, 1, 1, 9, 0, 0, 0, time.UTC)
	require.NoError(t, st.CreateJob(ctx, &core.Job{ConversationID: convID, Kind: core.JobMessage, Status: core.JobPending,
		Text: "the dentist", DueAt: due}))
	var ids []int64
	for _, name := range recurring {
		status := core.JobPending
		if n, ok := strings.CutSuffix(name, "!"); ok {
			name, status = n, core.JobCancelled
		}
		j := &core.Job{ConversationID: convID, Kind: core.JobAgentTurn, Status: status, Name: name,
			Text: "ask how the day went", DueAt: due, Recurrence: "0 9 * * *"}
		require.NoError(t, st.CreateJob(ctx, j))
		ids = append(ids, j.ID)
	}
	return convID, ids
}

func countRows(t *testing.T, st *store.Store, table string, convID int64) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB().Raw(fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE conversation_id = ?`, table), convID).Row().Scan(&n))
	return n
}

func TestConversationsListAndDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.writeConfig(t, "")
	st := b.openStoreFile(t)
	require.NoError(t, st.Migrate(context.Background()))
	bound, jobs := seedBound(t, st, "c1", "daily check-in", "weekly review!")
	free, _ := seedBound(t, st, "c2")

	run := func(args ...string) (int, string, string) { return b.cli(cfg, args...) }
	code, out, _ := run("conversations", "list")
	require.Equal(t, 0, code)
	require.Equal(t, strings.Join([]string{
		"ID  PLATFORM  THREAD  USER  NAME  TIME ZONE      LAST MESSAGE (UTC)",
		"1   web       c1      u-c1  Ada   Europe/Berlin  2026-11-23 09:00:00",
		"2   web       c2      u-c2  Ada   Europe/Berlin  2026-11-23 09:00:00",
		""}, "\n"), out)
	code, out, _ = run("conversations", "list", "--limit", "1", "--offset", "1")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "c1")
	require.Contains(t, out, "c2")
	code, _, errOut := run("conversations", "list", "--limit", "0")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--limit must be at least 1")

	// Blocked: nothing is deleted, and the user is told what --confirm takes.
	code, out, errOut = run("conversations", "delete", fmt.Sprint(bound))
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, fmt.Sprintf(`parley: conversation %d has recurring jobs bound to it: `+
		`job %d "daily check-in" (enabled), job %d "weekly review" (disabled); `+
		`run again with --confirm to delete them with the conversation`, bound, jobs[0], jobs[1]))
	require.Equal(t, int64(3), countRows(t, st, "jobs", bound))
	require.Equal(t, int64(1), countRows(t, st, "messages", bound))

	code, out, _ = run("conversations", "delete", fmt.Sprint(bound), "--confirm")
	require.Equal(t, 0, code)
	require.Equal(t, fmt.Sprintf("conversation %d deleted with 3 jobs\n", bound), out)
	for _, table := range []string{"jobs", "messages", "runs", "session_records"} {
		require.Zero(t, countRows(t, st, table, bound), table)
	}

	// Only a one-shot job: no confirmation needed.
	code, out, _ = run("conversations", "delete", fmt.Sprint(free))
	require.Equal(t, 0, code)
	require.Equal(t, fmt.Sprintf("conversation %d deleted with 1 job\n", free), out)
	require.Zero(t, countRows(t, st, "jobs", free))

	code, out, _ = run("conversations", "list")
	require.Equal(t, 0, code)
	require.Equal(t, "ID  PLATFORM  THREAD  USER  NAME  TIME ZONE  LAST MESSAGE (UTC)\n", out)

	code, _, errOut = run("conversations", "delete", "99")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "conversation 99: not found")
	code, _, errOut = run("conversations", "delete", "x")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `conversation id "x" is not a number`)
	code, _, _ = run("conversations", "delete")
	require.Equal(t, 2, code)
}

// TestDeleteConversationOverTheAPI drives DELETE /api/v1/conversations/{id}
// against a running bot.
func TestDeleteConversationOverTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfgPath := b.writeConfig(t, "")
	st := b.openStoreFile(t)
	require.NoError(t, st.Migrate(context.Background()))
	convID, jobs := seedBound(t, st, "c1", "daily check-in")
	r := b.start(t, cfgPath)

	del := func(query, auth string) (int, string) {
		req, err := http.NewRequest(http.MethodDelete, fmt.Sprintf("http://%s/api/v1/conversations/%d%s", r.addr, convID, query), nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body bytes.Buffer
		_, err = body.ReadFrom(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, body.String()
	}
	code, _ := del("", "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = del("?confirm=true", "not-the-token")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, int64(2), countRows(t, st, "jobs", convID), "refused requests delete nothing")

	token := b.env["PARLEY_API_TOKEN"]
	code, body := del("", token)
	require.Equal(t, http.StatusConflict, code)
	want, err := json.Marshal(map[string]any{"deleted": false, "blocked_by_automations": true,
		"automations": []map[string]any{{"id": jobs[0], "name": "daily check-in", "enabled": true}}})
	require.NoError(t, err)
	require.JSONEq(t, string(want), body)
	require.Equal(t, int64(2), countRows(t, st, "jobs", convID))
	require.Equal(t, int64(1), countRows(t, st, "messages", convID))

	code, body = del("?confirm=true", token)
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, fmt.Sprintf(`{"deleted":true,"id":%d}`, convID), body)
	for _, table := range []string{"jobs", "messages", "runs", "session_records"} {
		require.Zero(t, countRows(t, st, table, convID), table)
	}
	_, err = st.Conversation(context.Background(), convID)
	require.ErrorIs(t, err, core.ErrNotFound)

	code, body = del("?confirm=true", token)
	require.Equal(t, http.StatusNotFound, code)
	require.JSONEq(t, fmt.Sprintf(`{"error":"conversation %d not found"}`, convID), body)

	r.stop(t)
	require.NotContains(t, r.stderr.String(), token)
}

// With several bots the lists show each row's bot and take --bot; a bot
// the config does not run is a usage error naming those it does.
func TestConversationsListWithSeveralBots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.writeConfig(t, `bots:
  - id: ada
    adapters: {web: {enabled: false}, telegram: {token: "111:ada-token"}}
  - id: bob
    adapters: {web: {enabled: false}, telegram: {token: "222:bob-token"}}
`)
	st := b.openStoreFile(t)
	require.NoError(t, st.Migrate(context.Background()))
	for _, bot := range []string{"ada", "bob"} {
		_, err := st.ForBot(bot).RecordInbound(context.Background(), core.InboundRecord{Platform: "telegram", ChannelThreadID: "42",
			ChannelUserID: "42", DisplayName: "Kim", TimeZone: "UTC", Text: "hi", Now: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)})
		require.NoError(t, err)
	}
	code, out, errOut := b.cli(cfg, "conversations", "list")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, strings.Join([]string{
		"BOT  ID  PLATFORM  THREAD  USER  NAME  TIME ZONE  LAST MESSAGE (UTC)",
		"ada  1   telegram  42      42    Kim   UTC        2026-11-23 09:00:00",
		"bob  2   telegram  42      42    Kim   UTC        2026-11-23 09:00:00",
		""}, "\n"), out)
	code, out, _ = b.cli(cfg, "conversations", "list", "--bot", "bob")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "ada")
	require.Contains(t, out, "bob  2")
	code, _, errOut = b.cli(cfg, "jobs", "list", "--bot", "carol")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `--bot "carol": the config runs ada, bob`)
}
