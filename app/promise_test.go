package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/core/promise"
)

// The note the model's extra round gets begins so (engine/promises.Note).
const promiseNote = "Your reply has not been sent yet. It promises the user a later message"

// lastRun is the conversation's newest run.
func (c *companion) lastRun(t *testing.T) core.Run {
	t.Helper()
	runs, err := c.app.store.Runs(context.Background(), c.conv(t).ID)
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	last := runs[0]
	for _, r := range runs {
		if r.ID > last.ID {
			last = r
		}
	}
	return last
}

// notedRequests counts the model requests that carried the promise note.
func (c *companion) notedRequests() int {
	n := 0
	for _, r := range c.model.Requests() {
		if strings.HasPrefix(r.LastUserMessage(), promiseNote) {
			n++
		}
	}
	return n
}

func TestPromiseInWordsEndsWithAJobAtThePromisedTime(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	said := "Good luck with the interview! I'll check in tomorrow evening to see how it went."
	c.model.Enqueue(
		llmtest.Text(said),
		// The extra round: the model schedules what it promised, and
		// answers with the same reply, now true.
		scheduleCall("keep", "2026-11-24 19:00", "How did the interview go? 🍀", false),
		llmtest.Text(said),
	)
	sent := c.say(t, "my job interview is tomorrow at 10, wish me luck", 1)
	require.Equal(t, said, sent[0].Plain)

	reqs := c.model.Requests()
	require.Len(t, reqs, 3, "the reply, the extra round, its answer after the tool")
	note := reqs[1].LastUserMessage()
	require.True(t, strings.HasPrefix(note, promiseNote), "the extra round's last message is the note: %q", note)
	require.Contains(t, note, `"I'll check in tomorrow evening"`, "the note names the promise")
	require.Contains(t, note, "schedule_private_message")
	require.Equal(t, said, reqs[1].Messages()[len(reqs[1].Messages())-2].Content, "the model sees what it wrote")

	j := c.job(t)
	require.Equal(t, core.JobMessage, j.Kind)
	require.Equal(t, time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC), j.DueAt.UTC(), "19:00 in Berlin")

	rec := c.lastRun(t).Record.Promise
	require.NotNil(t, rec, "the run record shows the promise")
	require.Equal(t, promise.Record{Phrase: "I'll check in tomorrow evening", When: "tomorrow evening", Stage: promise.StagePatterns,
		Said: said, Note: note, Kept: promise.KeptScheduled}, *rec)

	m := scrape(t, c.app.http.Addr())
	require.Contains(t, m, `parley_promises_total{bot="default",outcome="caught"} 1`)
	require.Contains(t, m, `parley_promises_total{bot="default",outcome="scheduled"} 1`)
	require.Contains(t, m, `parley_promises_total{bot="default",outcome="reworded"} 0`)

	// Sent once, at its time; the reply itself was sent once.
	c.advance(t, 33*time.Hour)
	sent = c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "How did the interview go? 🍀", sent[1].Plain)
	require.Len(t, c.fake.Sent(c.user.ID), 2)
}

func TestPromiseReworded(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.Text("Sleep well! I'll text you tomorrow morning to ask how you slept."),
		llmtest.Text("Sleep well! Tell me tomorrow how you slept."),
	)
	sent := c.say(t, "going to bed early, big day", 1)
	require.Equal(t, "Sleep well! Tell me tomorrow how you slept.", sent[0].Plain, "only the reworded reply reaches the user")
	require.Len(t, c.fake.Sent(c.user.ID), 1)
	require.Empty(t, c.jobs(t))
	rec := c.lastRun(t).Record.Promise
	require.NotNil(t, rec)
	require.Equal(t, promise.KeptReworded, rec.Kept)
	require.Equal(t, "Sleep well! I'll text you tomorrow morning to ask how you slept.", rec.Said)
	m := scrape(t, c.app.http.Addr())
	require.Contains(t, m, `parley_promises_total{bot="default",outcome="reworded"} 1`)
	require.Contains(t, m, `parley_promises_total{bot="default",outcome="scheduled"} 0`)
	stored := c.stored(t)
	require.Equal(t, "Sleep well! Tell me tomorrow how you slept.", stored[len(stored)-1].Content, "the transcript holds what was sent")
}

func TestPromiseKeptByFollowUp(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.Text("Fingers crossed! I'll check in on you later."),
		llmtest.Text("Fingers crossed! I'll check in on you later.\n"+`<PROACTIVE>{"delay_seconds":7200,"reason":"ask how the exam went"}`),
	)
	sent := c.say(t, "exam in an hour", 1)
	require.Equal(t, "Fingers crossed! I'll check in on you later.", sent[0].Plain)
	rec := c.lastRun(t).Record.Promise
	require.NotNil(t, rec)
	require.Equal(t, promise.KeptFollowUp, rec.Kept)
	jobs := c.jobs(t)
	require.Len(t, jobs, 1)
	require.Equal(t, core.JobProactive, jobs[0].Kind)
	require.Equal(t, "ask how the exam went", jobs[0].Text)
}

func TestRepliesThatOnlySoundLikePromisesAreLeftAlone(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	// The birthday is scheduled first: the later "I will not forget" is
	// no new promise.
	c.model.Enqueue(
		scheduleCall("bday", "2026-12-02 09:00", "Happy birthday, Ada! 🎂", false),
		llmtest.Text("Noted! I'll remind you on your birthday morning."),
	)
	c.say(t, "my birthday is December 2nd, wish me happy birthday that morning", 1)
	replies := []string{
		"I will not forget your birthday! 🎂",
		"I'll keep that in mind.",
		"Tomorrow is Friday, so the weekend is close.",
		"Voy a tenerlo en cuenta.",
		"Ich werde es mir merken.",
		"Je vais y réfléchir.",
		"Я это запомню.",
		"我会记住的。",
	}
	for i, r := range replies {
		c.model.Enqueue(llmtest.Text(r))
		sent := c.say(t, "message "+r, i+2)
		require.Equal(t, r, sent[i+1].Plain)
		require.Nil(t, c.lastRun(t).Record.Promise, "%q caught", r)
	}
	require.Equal(t, 2+len(replies), len(c.model.Requests()), "one model call a turn, none more")
	require.Zero(t, c.notedRequests())
	require.Len(t, c.jobs(t), 1)
}

func TestPromiseWithASchedulingCallIsLeftAlone(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		scheduleCall("call_1", "2026-11-24 09:00", "Dentist at 10 🦷", false),
		llmtest.Text("Done, I'll remind you tomorrow at 9."),
	)
	c.say(t, "remind me tomorrow at 9 about the dentist", 1)
	require.Len(t, c.model.Requests(), 2)
	require.Zero(t, c.notedRequests())
	require.Nil(t, c.lastRun(t).Record.Promise)
}

func TestUnsurePromiseAsksTheLightModel(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	// "I can remind you" is an offer: the patterns are unsure, the light
	// model (here the same fake server) judges.
	offer := "I can remind you tomorrow if you like."
	c.model.Enqueue(llmtest.Text(offer), llmtest.Text("no"))
	sent := c.say(t, "I always forget to water the plants", 1)
	require.Equal(t, offer, sent[0].Plain)
	reqs := c.model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, offer, reqs[1].LastUserMessage(), "the light model reads the reply")
	require.Contains(t, reqs[1].Messages()[0].Content, "Answer with one word: yes or no.")
	require.Empty(t, reqs[1].ToolNames(), "the light model gets no tools")
	run := c.lastRun(t)
	require.Nil(t, run.Record.Promise)
	require.Contains(t, strings.Join(run.Record.Notes, "\n"), "the light model judged it does not")

	// Judged a promise: the extra round follows.
	c.model.Enqueue(llmtest.Text("Happy to, I could remind you on Sunday."), llmtest.Text("yes"),
		llmtest.Text("Shall I remind you on Sunday? Just say yes."))
	sent = c.say(t, "and the balcony ones on Sunday", 2)
	require.Equal(t, "Shall I remind you on Sunday? Just say yes.", sent[1].Plain)
	rec := c.lastRun(t).Record.Promise
	require.NotNil(t, rec)
	require.Equal(t, promise.StageLightModel, rec.Stage)
	require.Equal(t, promise.KeptReworded, rec.Kept)
}

func TestPromiseExtraRoundFailingSendsTheFirstReply(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	said := "I'll message you tomorrow at 8 with the plan."
	c.model.Enqueue(llmtest.Text(said), llmtest.Status(400).WithErrorMessage("context too long"))
	sent := c.say(t, "plan my week", 1)
	require.Equal(t, said, sent[0].Plain, "the user still gets an answer")
	require.Len(t, c.fake.Sent(c.user.ID), 1)
	rec := c.lastRun(t).Record.Promise
	require.NotNil(t, rec)
	require.Equal(t, promise.Unkept, rec.Kept)
	require.Contains(t, rec.Why, "the extra round failed")
	require.Equal(t, core.RunSucceeded, c.lastRun(t).Status)
}

// On Discord the first reply grows while the model writes it, promise
// and all; the extra round's rewording then ends that same message, the
// only one the user gets.
func TestStreamedPromiseEndsAsTheRewordedReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	b.llmTimeout = "20s"
	said := "That sounds like a lot. Try to rest tonight, and I'll message you tomorrow morning to see how you feel."
	final := "That sounds like a lot. Try to rest tonight, and tell me tomorrow how you feel."
	b.model.Enqueue(llmtest.Text(said).WithWordDeltas().WithStreamDelay(time.Second), llmtest.Text(final))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)
	channel, _ := fake.SendDM(lin, "long week, so tired")
	done := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool {
		return len(ms) == 1 && ms[0].Content == final
	}, waitFor)
	m, ok := fake.Message(done[0].MessageID)
	require.True(t, ok)
	require.NotEmpty(t, m.Edits, "the first reply grew by edits")
	for _, s := range fake.AllSent() {
		require.Equal(t, done[0].MessageID, s.MessageID, "one message: %q", s.Content)
	}
	reqs := b.model.WaitRequests(t, 2, waitFor)
	require.True(t, strings.HasPrefix(reqs[1].LastUserMessage(), promiseNote))
	msgs := b.storedMessagesOn(t, discord.Platform, channel)
	require.Equal(t, final, msgs[len(msgs)-1].Content)
}
