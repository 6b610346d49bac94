package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// scheduleCall is the model asking for a scheduled message.
func scheduleCall(id, sendAt, text string, replace bool) llmtest.Response {
	args, _ := json.Marshal(map[string]any{"send_at": sendAt, "message_text": text, "replace_existing": replace})
	return llmtest.ToolCalls(llmtest.Call(id, "schedule_private_message", string(args)))
}

// toolResult is what the model was told about call id in request n.
func (c *companion) toolResult(t *testing.T, n int, id string) string {
	t.Helper()
	msg, ok := c.model.Requests()[n].ToolMessage(id)
	require.True(t, ok, "no result for %s", id)
	return msg.Content
}

func TestScheduledMessageIsSentVerbatimOnceAtItsTime(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	// 10:00 in Berlin; "tomorrow at 9" is 08:00 UTC.
	c.model.Enqueue(
		scheduleCall("call_1", "2026-11-24 09:00", "Good morning! Don't forget the dentist at 10 🦷", false),
		llmtest.Text("Done, I'll remind you tomorrow at 9."),
	)
	sent := c.say(t, "remind me tomorrow at 9 about the dentist", 1)
	require.Equal(t, "Done, I'll remind you tomorrow at 9.", sent[0].Plain)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.toolResult(t, 1, "call_1")), &out))
	require.Equal(t, "2026-11-24 09:00 CET", out["send_at_local"])
	require.Equal(t, "2026-11-24T08:00:00Z", out["send_at_utc"])
	require.Equal(t, "Europe/Berlin", out["time_zone"])
	require.Equal(t, []any{}, out["cancelled_task_ids"])
	j := c.job(t)
	require.Equal(t, core.JobMessage, j.Kind)
	require.Equal(t, core.JobPending, j.Status)
	require.Equal(t, "call_1", j.CreatedByToolCallID)
	require.Equal(t, int64(out["task_id"].(float64)), j.ID)

	c.advance(t, 22*time.Hour+59*time.Minute) // 08:59 in Berlin
	require.Len(t, c.fake.Sent(c.user.ID), 1, "not before its time")
	c.advance(t, time.Minute)
	sent = c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Good morning! Don't forget the dentist at 10 🦷", sent[1].Plain, "verbatim")
	c.advance(t, 2*time.Minute)
	require.Len(t, c.fake.Sent(c.user.ID), 2, "exactly once")
	require.Len(t, c.model.Requests(), 2, "no model call to send it")

	j = c.job(t)
	require.Equal(t, core.JobSent, j.Status)
	require.Equal(t, fmt.Sprint(sent[1].MessageID), j.PlatformMessageID)
	msgs := c.stored(t)
	last := msgs[len(msgs)-1]
	require.Equal(t, core.SourceScheduledSend, last.Source)
	require.EqualValues(t, j.ID, last.Metadata["job_id"])

	// The next turn sees it (the user answers within the session gap, so
	// the reminder and the answer share a record), and it planned no turn
	// of its own.
	c.model.Enqueue(llmtest.Text("Good luck at the dentist!"))
	c.say(t, "thanks!", 3)
	got := roles(c.model.Requests()[2])
	require.Equal(t, []string{"assistant:Good morning! Don't forget the dentist at 10 🦷", "user:thanks!"}, got[len(got)-2:])
}

func TestScheduleToolErrors(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	long := make([]rune, 1025)
	for i := range long {
		long[i] = 'a'
	}
	cases := []struct {
		args string
		want string
	}{
		{`{"send_at":"2026-11-23 09:59","message_text":"hi"}`, "is in the past"},
		{`{"send_at":"2027-12-01 10:00","message_text":"hi"}`, "more than a year ahead"},
		{`{"send_at":"2026-11-24 10:00","message_text":"   "}`, "message_text is empty"},
		{`{"send_at":"2026-11-24 10:00","message_text":"` + string(long) + `"}`, "has 1025 characters, at most 1024"},
		{`{"send_at":"tomorrow","message_text":"hi"}`, "is not a time"},
		{`{"send_at":"2026-11-24 10:00","message_text":"hi","when":"now"}`, "unknown field"},
	}
	var calls []llmtest.Response
	for i, tc := range cases {
		calls = append(calls, llmtest.ToolCalls(llmtest.Call(fmt.Sprintf("bad_%d", i), "schedule_private_message", tc.args)))
	}
	c.model.Enqueue(calls[:4]...)
	c.model.Enqueue(llmtest.Text("Sorry, something went wrong."))
	c.say(t, "remind me of things", 1)
	c.model.Enqueue(calls[4:]...)
	c.model.Enqueue(llmtest.Text("Still wrong."))
	c.say(t, "again", 2)
	for i, tc := range cases {
		n := i + 1
		if i >= 4 {
			n = i + 2
		}
		require.Contains(t, c.toolResult(t, n, fmt.Sprintf("bad_%d", i)), tc.want, tc.args)
	}
	var count int64
	require.NoError(t, c.app.store.DB().Raw(`SELECT COUNT(*) FROM jobs`).Row().Scan(&count))
	require.Zero(t, count, "no job from a bad call")
}

func TestScheduleReplaceListCancelAndTheCap(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	require.NoError(t, c.app.store.DB().Exec(`UPDATE conversations SET time_zone = 'UTC'`).Error) // no conversation yet: nothing
	c.model.Enqueue(
		scheduleCall("s1", "2026-11-24T09:00:00+01:00", "first", false),
		scheduleCall("s2", "2026-11-24T10:00:00+01:00", "second", false),
		scheduleCall("s3", "2026-11-25T10:00:00+01:00", "only this one", true),
		llmtest.ToolCalls(llmtest.Call("l1", "list_scheduled_private_messages", `{}`)),
		llmtest.Text("ok"),
	)
	c.say(t, "schedule stuff", 1)
	var out struct {
		Cancelled []int64 `json:"cancelled_task_ids"`
		TaskID    int64   `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.toolResult(t, 3, "s3")), &out))
	require.Len(t, out.Cancelled, 2, "replace_existing cancelled the two before")
	list := c.toolResult(t, 4, "l1")
	require.Contains(t, list, "only this one")
	require.NotContains(t, list, "first")

	c.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "cancel_scheduled_private_message", fmt.Sprintf(`{"task_id":%d}`, out.TaskID))),
		llmtest.ToolCalls(llmtest.Call("c2", "cancel_scheduled_private_message", fmt.Sprintf(`{"task_id":%d}`, out.TaskID))),
		llmtest.ToolCalls(llmtest.Call("c3", "cancel_scheduled_private_message", `{"task_id":999999}`)),
		llmtest.Text("cancelled"),
	)
	c.say(t, "cancel it", 2)
	require.Contains(t, c.toolResult(t, 6, "c1"), `"cancelled"`)
	require.Contains(t, c.toolResult(t, 7, "c2"), "is already cancelled")
	require.Contains(t, c.toolResult(t, 8, "c3"), "there is no task 999999 for this person")
	var cancelledBy string
	require.NoError(t, c.app.store.DB().Raw(`SELECT cancelled_by_tool_call_id FROM jobs WHERE id = ?`, out.TaskID).Row().Scan(&cancelledBy))
	require.Equal(t, "c1", cancelledBy)

	// The cap: max_pending_per_conversation (50).
	conv, err := c.app.store.ConversationByThread(context.Background(), telegram.Platform, fmt.Sprint(c.user.ID))
	require.NoError(t, err)
	for i := range 50 {
		j := &core.Job{ConversationID: conv.ID, Text: fmt.Sprint(i), DueAt: companionT0.Add(48 * time.Hour)}
		_, err := c.app.store.ScheduleMessage(context.Background(), j, false, 1000)
		require.NoError(t, err)
	}
	c.model.Enqueue(scheduleCall("s51", "2026-11-26 10:00", "one too many", false), llmtest.Text("no room"))
	c.say(t, "one more", 3)
	require.Contains(t, c.toolResult(t, 10, "s51"), "already has 50 messages scheduled")
}

func TestSetTimezoneMovesTheUsersClock(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("tz1", "set_timezone", `{"iana_name":"Mars/Olympus"}`),
			// The system's zoneinfo opens it; no zone is named so.
			llmtest.Call("tz0", "set_timezone", `{"iana_name":"Europe//Paris"}`)),
		llmtest.ToolCalls(llmtest.Call("tz2", "set_timezone", `{"iana_name":"Asia/Tokyo"}`)),
		scheduleCall("s1", "2026-11-24 09:00", "おはよう", false),
		llmtest.Text("Noted: Tokyo."),
	)
	c.say(t, "I moved to Tokyo", 1)
	require.Contains(t, c.toolResult(t, 1, "tz1"), "is not an IANA time zone name")
	require.Contains(t, c.toolResult(t, 1, "tz0"), "is not an IANA time zone name")
	require.Contains(t, c.toolResult(t, 2, "tz2"), `"time_zone":"Asia/Tokyo"`)
	require.Contains(t, c.toolResult(t, 3, "s1"), `"send_at_utc":"2026-11-24T00:00:00Z"`, "09:00 in Tokyo")
	c.model.Enqueue(llmtest.Text("ok"))
	c.say(t, "what time is it?", 2)
	msgs := c.model.Requests()[4].Messages()
	require.True(t, strings.HasSuffix(msgs[0].Content, "\n\nNow for them: Monday 23 November 2026, 18:00 (Asia/Tokyo)."), msgs[0].Content)
	require.Equal(t, "user", msgs[len(msgs)-1].Role, "no system message amid the conversation")
}

// scheduleDirect stores a scheduled message as the tool would.
func (c *companion) scheduleDirect(t *testing.T, text string, due time.Time) core.Job {
	t.Helper()
	conv, err := c.app.store.ConversationByThread(context.Background(), telegram.Platform, fmt.Sprint(c.user.ID))
	require.NoError(t, err)
	j := &core.Job{ConversationID: conv.ID, Text: text, DueAt: due, Origin: "tool"}
	_, err = c.app.store.ScheduleMessage(context.Background(), j, false, 50)
	require.NoError(t, err)
	return *j
}

func (c *companion) jobByID(t *testing.T, id int64) core.Job {
	t.Helper()
	j, err := c.app.store.Job(context.Background(), id)
	require.NoError(t, err)
	return j
}

func TestScheduledMessagesAfterDowntime(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	soon := c.scheduleDirect(t, "first, an hour later", companionT0.Add(time.Hour))
	later := c.scheduleDirect(t, "second, two hours later", companionT0.Add(2*time.Hour))
	old := c.scheduleDirect(t, "too old to send", companionT0.Add(30*time.Minute))

	// Down for 24h15m: the first two are late but within late_grace (24h)
	// of... only the ones due within the last 24 hours are sent.
	c.down(t)
	c.clock.Advance(24*time.Hour + 45*time.Minute)
	c.up(t)
	sent := c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	require.Equal(t, []string{"first, an hour later", "second, two hours later"}, []string{sent[1].Plain, sent[2].Plain}, "in due order")
	c.advance(t, time.Minute)
	require.Len(t, c.fake.Sent(c.user.ID), 3, "each once; the oldest not at all")

	j := c.jobByID(t, old.ID)
	require.Equal(t, core.JobFailed, j.Status)
	require.Contains(t, j.LastError, "missed")
	for _, id := range []int64{soon.ID, later.ID} {
		require.Equal(t, core.JobSent, c.jobByID(t, id).Status)
	}
	msgs := c.stored(t)
	require.EqualValues(t, (23*time.Hour + 45*time.Minute).Seconds(), msgs[len(msgs)-2].Metadata["late_by_seconds"], "recorded as late")
}

func TestScheduledMessagesSurviveARestartAndAnExpiredLease(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	pending := c.scheduleDirect(t, "still pending", companionT0.Add(time.Hour))
	stuck := c.scheduleDirect(t, "left sending by a dead process", companionT0.Add(30*time.Minute))
	c.down(t)
	// A process claimed the second job and died while sending it.
	require.NoError(t, c.openStoreFile(t).DB().Exec(`UPDATE jobs SET status = 'sending', owner = 'dead-process', lease_until = ?
		WHERE id = ?`, companionT0.Add(35*time.Minute).Format("2006-01-02T15:04:05.000000Z"), stuck.ID).Error)

	c.clock.Advance(31 * time.Minute)
	c.up(t)
	c.advance(t, 3*time.Minute)
	require.Len(t, c.fake.Sent(c.user.ID), 1, "the lease still holds")
	c.advance(t, 2*time.Minute) // the lease ran out at +35m
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "left sending by a dead process", sent[1].Plain)
	c.advance(t, 25*time.Minute)
	sent = c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	require.Equal(t, "still pending", sent[2].Plain)
	c.advance(t, time.Hour)
	require.Len(t, c.fake.Sent(c.user.ID), 3, "each exactly once")
	require.Equal(t, core.JobSent, c.jobByID(t, pending.ID).Status)
	require.Equal(t, core.JobSent, c.jobByID(t, stuck.ID).Status)
}

func TestScheduledMessageToABlockedUserFails(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	j := c.scheduleDirect(t, "will not arrive", companionT0.Add(time.Minute))
	c.fake.Block(c.user.ID) // the user blocked the bot: permanent
	c.advance(t, time.Minute)
	got := c.jobByID(t, j.ID)
	require.Equal(t, core.JobFailed, got.Status, "a permanent error is not retried")
	require.Equal(t, 1, got.Attempts)
	require.Contains(t, got.LastError, "permanent")

	require.Empty(t, c.fake.Sent(c.user.ID)[1:], "nothing went out")
}

// TestScheduledMessageTextIsCleanedAndFormatted: what the model writes
// into message_text is sent later as written, but never with a control
// token or its reasoning in it, and its Markdown is shown formatted.
func TestScheduledMessageTextIsCleanedAndFormatted(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		scheduleCall("call_1", "2026-11-23 11:00", "<think>they will be busy</think>Time to take the **bread** out!\n<WANT_MORE>", false),
		scheduleCall("call_2", "2026-11-23 12:00", "<SILENCE>", false),
		llmtest.Text("Both noted."),
	)
	c.say(t, "remind me about the bread in an hour", 1)
	require.Contains(t, c.toolResult(t, 2, "call_2"), "only control tokens or reasoning", "the model is told why")
	j := c.job(t)
	require.Equal(t, "Time to take the **bread** out!", j.Text, "stored without token or reasoning")
	require.Equal(t, core.FormatRichText, j.Format)

	c.advance(t, time.Hour)
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Time to take the bread out!", sent[1].Plain)
	requireNoTokens(t, sent)
	shown, err := markuptest.TelegramV2(sent[1].Text)
	require.NoError(t, err)
	require.True(t, shown.Has(markuptest.Bold, "bread"), "formatted: %+v", shown)
}
