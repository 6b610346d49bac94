package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/core/prompts"
	"github.com/parleybot/parley/core/recurrence"
)

// recurringCall is the model asking for a recurring turn.
func recurringCall(id, schedule, instruction, name string) llmtest.Response {
	args, _ := json.Marshal(map[string]any{"schedule": schedule, "instruction": instruction, "name": name})
	return llmtest.ToolCalls(llmtest.Call(id, "schedule_recurring_turn", string(args)))
}

// conv is the test user's conversation.
func (c *companion) conv(t *testing.T) core.Conversation {
	t.Helper()
	conv, err := c.app.store.ConversationByThread(context.Background(), telegram.Platform, fmt.Sprint(c.user.ID))
	require.NoError(t, err)
	return conv
}

// recurringDirect stores a recurring job as the tool would, in zone,
// which becomes the conversation's.
func (c *companion) recurringDirect(t *testing.T, name, schedule, instruction, zone string, catchUp core.CatchUp) core.Job {
	t.Helper()
	ctx := context.Background()
	conv := c.conv(t)
	require.NoError(t, c.app.store.SetTimeZone(ctx, conv.ID, zone))
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	s, err := recurrence.Parse(schedule)
	require.NoError(t, err)
	first, err := s.Next(c.clock.Now(), loc)
	require.NoError(t, err)
	j := &core.Job{ConversationID: conv.ID, Name: name, Text: instruction, Recurrence: schedule, DueAt: first, CatchUp: catchUp, Origin: "tool"}
	require.NoError(t, c.app.store.CreateRecurringJob(ctx, j, 10))
	return *j
}

// cronRuns are the conversation's cron turns, oldest first.
func (c *companion) cronRuns(t *testing.T) []core.Run {
	t.Helper()
	runs, err := c.app.store.Runs(context.Background(), c.conv(t).ID)
	require.NoError(t, err)
	var out []core.Run
	for _, r := range runs {
		if r.Kind == core.RunCronTurn {
			out = append(out, r)
		}
	}
	return out
}

func TestRecurringTurnRunsDailyAtNineInShanghai(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("tz", "set_timezone", `{"iana_name":"Asia/Shanghai"}`)),
		recurringCall("r1", "0 9 * * *", "Ask how they slept and wish them a good day.", "daily check-in"),
		llmtest.Text("Every morning at 9, then!"),
	)
	c.say(t, "check on me every morning at 9, I'm in Shanghai", 1)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.toolResult(t, 2, "r1")), &out))
	require.Equal(t, "2026-11-24T01:00:00Z", out["next_run_utc"], "09:00 in Shanghai is 01:00 UTC")
	require.Equal(t, "Tuesday 2026-11-24 09:00 CST", out["next_run_local"])
	require.Equal(t, "latest", out["catch_up"])
	j := c.job(t)
	require.Equal(t, core.JobAgentTurn, j.Kind)
	require.Equal(t, "0 9 * * *", j.Recurrence)
	require.Equal(t, "2026-11-24T01:00:00Z", j.NextRunAt.Format(time.RFC3339), "next_run_at is stored")
	require.Equal(t, "r1", j.CreatedByToolCallID)

	// companionT0 is 09:00 UTC; the first occurrence is 16 hours later.
	c.model.Enqueue(llmtest.Text("Good morning! How did you sleep?"))
	c.advance(t, 16*time.Hour-time.Minute)
	require.Len(t, c.model.Requests(), 3, "nothing before 09:00 Shanghai")
	c.advance(t, time.Minute)
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Good morning! How did you sleep?", sent[1].Plain)

	runs := c.cronRuns(t)
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, core.RunSucceeded, run.Status)
	require.Equal(t, "2026-11-24T01:00:00Z", run.OccurrenceAt.Format(time.RFC3339))
	trigger := fmt.Sprintf("Scheduled job triggered: daily check-in\n(job %d, run %d, prompt cron.agent_turn.reminder@v1)", j.ID, run.ID)
	req := c.model.Requests()[3]
	require.Equal(t, []string{"user:" + trigger + "\n\n" + run.Record.Template.Rendered}, roles(req),
		"a new session record: the trigger, with the execution prompt, is all of L5")
	require.Contains(t, run.Record.Template.Rendered, "Ask how they slept and wish them a good day.")
	require.Contains(t, run.Record.Template.Rendered, "This is the occurrence of Tuesday 24 November 2026, 09:00.")
	require.Equal(t, prompts.CronAgentTurn.ID(), run.Record.Template.ID)
	require.Equal(t, 1, run.Record.Template.Version)
	require.Equal(t, prompts.CronAgentTurn.SHA256(), run.Record.Template.SHA256)
	require.Equal(t, "Asia/Shanghai", run.Record.Template.Variables["time_zone"])
	require.Empty(t, run.Record.Template.Errors)

	msgs := c.stored(t)
	got := msgs[len(msgs)-2:]
	require.Equal(t, core.RoleUser, got[0].Role)
	require.Equal(t, core.SourceCronTurn, got[0].Source)
	require.Equal(t, trigger, got[0].Content, "the transcript has the readable event only")
	require.EqualValues(t, j.ID, got[0].Metadata["job_id"])
	require.EqualValues(t, run.ID, got[0].Metadata["run_id"])
	require.Equal(t, "cron.agent_turn.reminder@v1", got[0].Metadata["prompt_ref"])
	require.Equal(t, *got[0].RunID, run.ID)
	require.Equal(t, core.SourceCronTurn, got[1].Source)
	require.Equal(t, "Good morning! How did you sleep?", got[1].Content)
	var leaks int64
	require.NoError(t, c.app.store.DB().Raw(`SELECT (SELECT COUNT(*) FROM messages WHERE content LIKE '%started by a scheduled job%')
		+ (SELECT COUNT(*) FROM jobs WHERE text LIKE '%started by a scheduled job%' OR name LIKE '%started by%')`).Row().Scan(&leaks))
	require.Zero(t, leaks, "the rendered prompt is in the run record only")

	j = c.job(t)
	require.Equal(t, core.JobPending, j.Status)
	require.Equal(t, "2026-11-25T01:00:00Z", j.NextRunAt.Format(time.RFC3339), "moved on to tomorrow")

	c.model.Enqueue(llmtest.Text("Morning again!"))
	c.advance(t, 24*time.Hour)
	sent = c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	require.Equal(t, "Morning again!", sent[2].Plain)
	require.Contains(t, c.model.Requests()[4].LastUserMessage(), "This is the occurrence of Wednesday 25 November 2026, 09:00.")
	c.advance(t, time.Hour)
	require.Len(t, c.fake.Sent(c.user.ID), 3, "once a day")
	require.Len(t, c.cronRuns(t), 2)
}

func TestCronTurnWaitsForTheRunningTurnAndIsNeverInjected(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	j := c.recurringDirect(t, "stretch reminder", "every 2h", "Remind them to stretch.", "Europe/Berlin", "")
	require.True(t, j.DueAt.Equal(companionT0.Add(2*time.Hour)))

	// A slow turn is running when the job comes due.
	gate := make(chan struct{})
	c.model.Enqueue(llmtest.Text("Here is a long answer.").WithHold(gate), llmtest.Text("Time to stretch!"))
	c.advance(t, 2*time.Hour-time.Minute)
	c.fake.SendPrivate(c.user, "tell me a long story")
	c.model.WaitRequests(t, 2, waitFor)
	c.clock.Advance(time.Minute)
	require.Eventually(t, func() bool {
		runs := c.cronRuns(t)
		return len(runs) == 1 && runs[0].Status == core.RunQueued
	}, waitFor, 2*time.Millisecond, "the occurrence was queued behind the running turn")
	for _, m := range c.stored(t) {
		require.NotEqual(t, core.SourceCronTurn, m.Source, "no trigger in the transcript before the cron turn starts")
	}
	require.Len(t, c.model.Requests(), 2)

	close(gate)
	sent := c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	c.settle(t)
	require.Equal(t, []string{"Here is a long answer.", "Time to stretch!"}, []string{sent[1].Plain, sent[2].Plain}, "the cron turn came after")
	reqs := c.model.Requests()
	require.Len(t, reqs, 3)
	for _, m := range reqs[1].Messages() {
		require.NotContains(t, m.Content, "Scheduled job", "the running turn never saw the trigger")
	}
	got := roles(reqs[2])
	require.Equal(t, "user:tell me a long story", got[len(got)-3])
	require.Equal(t, "assistant:Here is a long answer.", got[len(got)-2])
	require.True(t, strings.HasPrefix(got[len(got)-1], "user:Scheduled job triggered: stretch reminder\n"), got[len(got)-1])

	msgs := c.stored(t)
	require.Equal(t, "Here is a long answer.", msgs[len(msgs)-3].Content)
	require.Equal(t, core.SourceCronTurn, msgs[len(msgs)-2].Source, "the trigger follows the reply it waited for")
	require.Nil(t, msgs[len(msgs)-2].Metadata["late"], "a wait behind a turn is not lateness")
}

func TestCronTurnAlwaysLeavesAVisibleClosure(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	j := c.recurringDirect(t, "water the plants", "0 18 * * *", "Remind them to water the plants.", "Europe/Berlin", "")

	// The model fails: the user is told, in words about the job.
	c.model.Enqueue(llmtest.Status(400))
	c.advance(t, 8*time.Hour) // 18:00 in Berlin
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, `Scheduled job "water the plants" could not run this time. It runs again Tuesday 24 November, 18:00.`, sent[1].Plain)
	runs := c.cronRuns(t)
	require.Len(t, runs, 1)
	require.Equal(t, core.RunFailed, runs[0].Status)
	require.NotEmpty(t, runs[0].Error)
	require.Equal(t, core.JobPending, c.jobByID(t, j.ID).Status, "the job lives on")

	// The model has nothing to say: the user sees that the job ran.
	c.model.Enqueue(llmtest.Text("<SILENCE>"))
	c.advance(t, 24*time.Hour)
	sent = c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	require.Equal(t, `Scheduled job "water the plants": nothing to report this time.`, sent[2].Plain)
	require.Equal(t, core.RunSucceeded, c.cronRuns(t)[1].Status)
	requireNoTokens(t, sent)

	// A reply goes out as the model wrote it: no second pass decides.
	c.model.Enqueue(llmtest.Text("Plants! 🌱"))
	c.advance(t, 24*time.Hour)
	sent = c.fake.WaitSent(t, c.user.ID, 4, waitFor)
	require.Equal(t, "Plants! 🌱", sent[3].Plain)
	require.Len(t, c.model.Requests(), 4, "one model call per occurrence")

	// The next turn sees the status as silence and the failure not at all.
	c.model.Enqueue(llmtest.Text("You're welcome"))
	c.say(t, "thanks", 5)
	for _, m := range roles(c.model.Requests()[4]) {
		require.NotContains(t, m, "could not run", "the failure note is not put in the model's mouth")
	}
}

func TestCatchUpAfterAThreeDayOutageRunsOnce(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	latest := c.recurringDirect(t, "daily check-in", "0 9 * * *", "Ask how their day is going.", "Asia/Shanghai", "")
	none := c.recurringDirect(t, "step count", "0 10 * * *", "Ask for their step count.", "Asia/Shanghai", core.CatchUpNone)

	// Down from before the first occurrence until 11:30 Shanghai, three
	// days later.
	c.down(t)
	c.clock.Advance(3*24*time.Hour + 5*time.Hour + 30*time.Minute) // 2026-11-26 14:30 UTC is 22:30 Shanghai
	c.model.Enqueue(llmtest.Text("Sorry I'm late! How is your day going?"))
	c.up(t)
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Sorry I'm late! How is your day going?", sent[1].Plain)
	c.advance(t, time.Hour)
	require.Len(t, c.fake.Sent(c.user.ID), 2, "one late run, not one per missed day")
	require.Len(t, c.model.Requests(), 2)

	runs := c.cronRuns(t)
	require.Len(t, runs, 1)
	require.Equal(t, *runs[0].JobID, latest.ID)
	require.Equal(t, "2026-11-26T01:00:00Z", runs[0].OccurrenceAt.Format(time.RFC3339), "the most recent missed occurrence")
	prompt := c.model.Requests()[1].LastUserMessage()
	require.Contains(t, prompt, "late: it was due Thursday 26 November 09:00 CST")
	require.Contains(t, prompt, "It runs late, at Thursday 26 November 2026, 22:30")
	msgs := c.stored(t)
	require.Equal(t, true, msgs[len(msgs)-2].Metadata["late"], "marked late")

	j := c.jobByID(t, latest.ID)
	require.Equal(t, "2026-11-27T01:00:00Z", j.NextRunAt.Format(time.RFC3339))
	require.Contains(t, j.LastError, "missed the occurrences from 2026-11-24 09:00 CST while the bot was down; ran the latest, 2026-11-26 09:00 CST, late")

	j = c.jobByID(t, none.ID)
	require.Equal(t, core.JobPending, j.Status)
	require.Equal(t, "2026-11-27T02:00:00Z", j.NextRunAt.Format(time.RFC3339), "catch_up none waits for the next")
	require.Contains(t, j.LastError, "(catch_up: none)")

	c.model.Enqueue(llmtest.Text("Good morning!"), llmtest.Text("Steps?"))
	c.advance(t, 9*time.Hour+30*time.Minute) // 09:00 Shanghai
	c.advance(t, time.Hour)
	sent = c.fake.WaitSent(t, c.user.ID, 4, waitFor)
	require.Equal(t, []string{"Good morning!", "Steps?"}, []string{sent[2].Plain, sent[3].Plain}, "both run on time again")
}

func TestRecurringToolErrorsListCancelAndZone(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	bad := []struct{ args, want string }{
		{`{"schedule":"0 25 * * *","instruction":"x","name":"n"}`, "not a 5-field cron expression"},
		{`{"schedule":"0 0 30 2 *","instruction":"x","name":"n"}`, "no occurrence in the next five years"},
		{`{"schedule":"*/2 * * * *","instruction":"x","name":"n"}`, "occurrences must be at least 5m0s apart"},
		{`{"schedule":"every 2 parsecs","instruction":"x","name":"n"}`, "not a duration"},
		{`{"schedule":"every 1h","instruction":"  ","name":"n"}`, "instruction is empty"},
		{`{"schedule":"every 1h","instruction":"x","name":""}`, "name is empty"},
		{`{"schedule":"every 1h","instruction":"x","name":"n","catch_up":"all"}`, `catch_up \"all\": want \"latest\" or \"none\"`}, // as JSON escapes it
		{`{"schedule":"every 1h","instruction":"x"}`, "name is empty"},
	}
	var calls []llmtest.ToolCall
	for i, b := range bad {
		calls = append(calls, llmtest.Call(fmt.Sprintf("bad_%d", i), "schedule_recurring_turn", b.args))
	}
	okArgs, _ := json.Marshal(map[string]any{"schedule": "30 7 * * 1-5", "instruction": "Wish them a good start of the day.", "name": "weekday morning"})
	calls = append(calls, llmtest.Call("ok", "schedule_recurring_turn", string(okArgs)))
	c.model.Enqueue(
		llmtest.ToolCalls(calls...),
		llmtest.ToolCalls(llmtest.Call("list", "list_scheduled_private_messages", `{}`)),
		llmtest.Text("Set."),
	)
	c.say(t, "set up my reminders", 1)
	for i, b := range bad {
		require.Contains(t, c.toolResult(t, 1, fmt.Sprintf("bad_%d", i)), b.want, b.args)
	}
	n := 1
	var created struct {
		TaskID       int64  `json:"task_id"`
		NextRunLocal string `json:"next_run_local"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.toolResult(t, n, "ok")), &created))
	require.Equal(t, "Tuesday 2026-11-24 07:30 CET", created.NextRunLocal, "Monday 10:00 in Berlin: the next weekday 07:30 is Tuesday")
	var listed struct {
		Recurring []struct {
			TaskID       int64  `json:"task_id"`
			Name         string `json:"name"`
			Schedule     string `json:"schedule"`
			NextRunLocal string `json:"next_run_local"`
		} `json:"recurring"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.toolResult(t, n+1, "list")), &listed))
	require.Len(t, listed.Recurring, 1)
	require.Equal(t, created.TaskID, listed.Recurring[0].TaskID)
	require.Equal(t, "weekday morning", listed.Recurring[0].Name)
	require.Equal(t, "30 7 * * 1-5", listed.Recurring[0].Schedule)

	// They move to New York: 07:30 is read there from now on.
	c.model.Enqueue(llmtest.ToolCalls(llmtest.Call("tz", "set_timezone", `{"iana_name":"America/New_York"}`)), llmtest.Text("ok"))
	c.say(t, "I moved to New York", 2)
	j := c.jobByID(t, created.TaskID)
	require.Equal(t, "2026-11-23T12:30:00Z", j.NextRunAt.Format(time.RFC3339), "07:30 in New York, where it is 04:00 now")
	require.True(t, j.DueAt.Equal(*j.NextRunAt))

	c.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("cancel", "cancel_scheduled_private_message", fmt.Sprintf(`{"task_id":%d}`, created.TaskID))),
		llmtest.Text("Cancelled."),
	)
	c.say(t, "stop the morning messages", 3)
	require.Equal(t, fmt.Sprintf(`{"cancelled":%d,"recurring_job":"weekday morning"}`, created.TaskID), c.toolResult(t, n+5, "cancel"))
	require.Equal(t, core.JobCancelled, c.jobByID(t, created.TaskID).Status)
	c.advance(t, 48*time.Hour)
	require.Empty(t, c.cronRuns(t), "a cancelled job never runs")
	require.Len(t, c.fake.Sent(c.user.ID), 3)
}

func TestDeletingAConversationWithARecurringJobNeedsConfirm(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(recurringCall("r1", "0 9 * * *", "Say good morning.", "good morning"), llmtest.Text("Every day!"))
	c.say(t, "say good morning every day", 1)
	conv := c.conv(t)
	j := c.job(t)
	c.scheduleDirect(t, "a one-off", companionT0.Add(time.Hour))

	run := func(args ...string) (int, string, string) { return c.cli(c.cfgPath, args...) }
	code, _, errOut := run("conversations", "delete", fmt.Sprint(conv.ID))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, fmt.Sprintf(`job %d "good morning" (enabled)`, j.ID))
	require.Contains(t, errOut, "--confirm")
	require.Len(t, c.stored(t), 2, "nothing was deleted")

	code, out, _ := run("conversations", "delete", fmt.Sprint(conv.ID), "--confirm")
	require.Equal(t, 0, code)
	require.Contains(t, out, fmt.Sprintf("conversation %d deleted", conv.ID))
	var left int64
	require.NoError(t, c.app.store.DB().Raw(`SELECT (SELECT COUNT(*) FROM jobs) + (SELECT COUNT(*) FROM messages)
		+ (SELECT COUNT(*) FROM conversations) + (SELECT COUNT(*) FROM session_records) + (SELECT COUNT(*) FROM runs)`).Row().Scan(&left))
	require.Zero(t, left, "the jobs, then the conversation and all its memory, are gone")
	c.advance(t, 25*time.Hour)
	require.Len(t, c.fake.Sent(c.user.ID), 1, "no job runs for a deleted conversation")
}
