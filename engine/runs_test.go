package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// userContents lists the user messages a model request carried.
func userContents(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestDebounceAnswersABurstInOneTurn(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, debounce: 1500 * time.Millisecond})
	b.model.Enqueue(llmtest.Text("got all ten"))

	var want []string
	for i := range 10 {
		text := fmt.Sprintf("part %d", i+1)
		want = append(want, text)
		require.NoError(t, b.adapter.Deliver(b.ctx, "burst", text))
		if i < 9 {
			clock.Advance(100 * time.Millisecond) // well inside the window
		}
	}
	last := clock.Now()
	require.Empty(t, b.model.Requests(), "nothing is asked before the debounce ends")

	// The claim loop sleeps until the last message's debounce ends.
	clock.WaitForTimer(t, last.Add(1500*time.Millisecond), waitFor)
	clock.Advance(1500 * time.Millisecond)
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "got all ten", sent[0].Text)

	reqs := b.model.Requests()
	require.Len(t, reqs, 1, "one model call for the burst")
	require.Equal(t, want, userContents(reqs[0]))
	run := b.waitRun(t, "burst")
	require.Equal(t, core.RunSucceeded, run.Status)
	require.Equal(t, last.Add(1500*time.Millisecond), run.RunAfter)
}

// slowFirst holds the first model answer until release is closed.
func slowFirst(b *testBundle, first, second string) chan struct{} {
	release := make(chan struct{})
	b.model.Enqueue(llmtest.Text(first).WithHold(release), llmtest.Text(second))
	return release
}

func sentTexts(a *coretest.Adapter) []string {
	var out []string
	for _, s := range a.Sent() {
		out = append(out, s.Text)
	}
	return out
}

func TestDuringGenerationReject(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{policy: core.BusyReject})
	release := slowFirst(b, "answer to one", "unused")
	require.NoError(t, b.adapter.Deliver(b.ctx, "rj", "one"))
	b.model.WaitRequests(t, 1, waitFor)

	require.NoError(t, b.adapter.Deliver(b.ctx, "rj", "two"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, config.DefaultBusyMessage, sent[0].Text, "the user is told at once")

	close(release)
	b.adapter.WaitSent(t, 2, waitFor)
	run := b.waitRun(t, "rj")
	require.Equal(t, core.RunSucceeded, run.Status)
	require.Equal(t, []string{config.DefaultBusyMessage, "answer to one"}, sentTexts(b.adapter))

	reqs := b.model.Requests()
	require.Len(t, reqs, 1, "no new run starts")
	require.Equal(t, []string{"one"}, userContents(reqs[0]))
	msgs := b.messages(t, "rj")
	var stored []string
	for _, m := range msgs {
		stored = append(stored, string(m.Role)+":"+m.Content)
	}
	require.Equal(t, []string{"user:one", "user:two", "assistant:" + config.DefaultBusyMessage, "assistant:answer to one"}, stored,
		"the rejected message is stored")
	hasQueued, err := b.store.HasPendingRuns(b.ctx)
	require.NoError(t, err)
	require.False(t, hasQueued)
}

func TestDuringGenerationQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{policy: core.BusyQueue})
	release := slowFirst(b, "answer to one", "answer to two")
	require.NoError(t, b.adapter.Deliver(b.ctx, "qu", "one"))
	b.model.WaitRequests(t, 1, waitFor)
	require.NoError(t, b.adapter.Deliver(b.ctx, "qu", "two"))
	require.Empty(t, b.adapter.Sent(), "nothing is said while the first answer is generated")

	close(release)
	b.adapter.WaitSent(t, 2, waitFor)
	require.Equal(t, []string{"answer to one", "answer to two"}, sentTexts(b.adapter))
	reqs := b.model.WaitRequests(t, 2, waitFor)
	require.Equal(t, []string{"one"}, userContents(reqs[0]))
	var second []string
	for _, m := range reqs[1].Messages()[1:] {
		second = append(second, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{"user:one", "user:two", "assistant:answer to one"}, second,
		"the queued run follows the delivered reply and sees every message, in the order they were stored")
}

func TestDuringGenerationRestart(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{policy: core.BusyRestart})
	release := slowFirst(b, "stale answer to one", "answer to both")
	defer close(release)
	require.NoError(t, b.adapter.Deliver(b.ctx, "rs", "one"))
	b.model.WaitRequests(t, 1, waitFor)
	conv, err := b.store.ConversationByThread(b.ctx, web, "rs")
	require.NoError(t, err)
	first, err := b.store.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, first, 1)

	require.NoError(t, b.adapter.Deliver(b.ctx, "rs", "two"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, []string{"answer to both"}, []string{sent[0].Text})

	reqs := b.model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"one", "two"}, userContents(reqs[1]), "the turn runs again with all the messages")
	for _, m := range reqs[1].Messages() {
		require.NotContains(t, m.Content, "stale answer", "the cancelled reply never existed")
	}
	b.waitRun(t, "rs")
	canceled, err := b.store.Run(b.ctx, first[0].ID)
	require.NoError(t, err)
	require.Equal(t, core.RunCanceled, canceled.Status)
	require.NotNil(t, canceled.CancelRequestedAt)
	require.NotNil(t, canceled.FinishedAt)
	require.Equal(t, []string{"answer to both"}, sentTexts(b.adapter), "nothing was sent from the cancelled run")
}

// echoLLM answers at once with the user messages it saw, so a test can tell
// which messages each turn answered.
type echoLLM struct{}

func (echoLLM) Run(_ context.Context, req llm.Request) (llm.Result, error) {
	var seen []string
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			seen = append(seen, m.Content)
		}
	}
	return llm.Result{Content: "saw " + strings.Join(seen, ","), Rounds: 1}, nil
}

func TestManyConversationsNeverRunTwiceAtOnce(t *testing.T) {
	t.Parallel()
	const convs, perConv = 200, 5
	b := setup(t, setupOpts{model: echoLLM{}, workers: 8})

	// A watcher samples the database while the storm runs.
	stop := make(chan struct{})
	watched := make(chan []string, 1)
	go func() {
		var bad []string
		for {
			var rows []struct {
				ConversationID int64
				N              int
			}
			err := b.store.DB().Raw(`SELECT conversation_id, COUNT(*) AS n FROM runs WHERE status = 'running'
				GROUP BY conversation_id HAVING COUNT(*) > 1`).Scan(&rows).Error
			if err != nil {
				bad = append(bad, err.Error())
			}
			for _, r := range rows {
				bad = append(bad, fmt.Sprintf("conversation %d had %d running runs", r.ConversationID, r.N))
			}
			select {
			case <-stop:
				watched <- bad
				return
			default:
			}
		}
	}()

	var wg sync.WaitGroup
	for c := range convs {
		for m := range perConv {
			wg.Add(1)
			go func() {
				defer wg.Done()
				require.NoError(t, b.adapter.Deliver(b.ctx, fmt.Sprintf("c%03d", c), fmt.Sprintf("c%03d-m%d", c, m)))
			}()
		}
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		pending, err := b.store.HasPendingRuns(b.ctx)
		return err == nil && !pending
	}, 60*time.Second, 10*time.Millisecond)
	close(stop)
	require.Empty(t, <-watched)

	for c := range convs {
		thread := fmt.Sprintf("c%03d", c)
		msgs := b.messages(t, thread)
		// Every user message is answered: a later reply saw it.
		for i, m := range msgs {
			if m.Role != core.RoleUser {
				continue
			}
			answered := false
			for _, r := range msgs[i+1:] {
				if r.Role == core.RoleAssistant && strings.Contains(r.Content, m.Content) {
					answered = true
					break
				}
			}
			require.True(t, answered, "%s: %q was never answered: %+v", thread, m.Content, msgs)
		}
		// Runs of one conversation never overlapped.
		conv, err := b.store.ConversationByThread(b.ctx, web, thread)
		require.NoError(t, err)
		runs, err := b.store.Runs(b.ctx, conv.ID)
		require.NoError(t, err)
		var prevEnd time.Time
		for _, r := range runs {
			// A message that came after a turn was claimed but before it
			// read the history is answered by that turn; the run it
			// queued then finds nothing to answer and is skipped (every
			// message answered is checked above).
			if r.Status == core.RunSkipped {
				require.True(t, strings.HasPrefix(r.Error, "nothing to answer"), "%s: run %d skipped: %s", thread, r.ID, r.Error)
			} else {
				require.Equal(t, core.RunSucceeded, r.Status)
			}
			require.False(t, r.StartedAt.Before(prevEnd), "%s: run %d started before the previous one finished", thread, r.ID)
			prevEnd = *r.FinishedAt
		}
	}
}

func TestCrashedRunIsReapedAndTheQueuedRunExecutes(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	const stale = 2 * time.Minute
	b := setup(t, setupOpts{clock: clock, staleAfter: stale, noStart: true})
	b.model.Enqueue(llmtest.Text("sorry for the wait"))

	// A process claimed a run of this conversation and died.
	require.NoError(t, b.adapter.Deliver(b.ctx, "crash", "are you there?"))
	dead, err := b.store.ClaimRun(b.ctx, "dead-process", t0)
	require.NoError(t, err)
	require.NotNil(t, dead)
	clock.Advance(30 * time.Second)
	require.NoError(t, b.adapter.Deliver(b.ctx, "crash", "hello??"))

	// This process starts while the dead run is not stale yet: the queued
	// run waits behind it until the reaper fails the dead run.
	startAndReap(t, b, clock, stale, *dead)
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "sorry for the wait", sent[0].Text)
	require.Equal(t, []string{"are you there?", "hello??"}, userContents(b.model.Requests()[0]))

	reaped, err := b.store.Run(b.ctx, dead.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunFailed, reaped.Status)
	require.Contains(t, reaped.Error, "stale")
	require.Equal(t, core.RunSucceeded, b.waitRun(t, "crash").Status)
}

// A user's turn whose process died, with no message after it, is queued
// again by the reaper and answered here: the message is not left
// unanswered.
func TestATurnWhoseProcessDiedIsAnsweredByAnother(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	const stale = 2 * time.Minute
	b := setup(t, setupOpts{clock: clock, staleAfter: stale, noStart: true})
	b.model.Enqueue(llmtest.Text("here I am"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "lone", "are you there?"))
	dead, err := b.store.ClaimRun(b.ctx, "dead-process", t0)
	require.NoError(t, err)
	require.NotNil(t, dead)
	// Time passes until the reaper fails the dead run; the turn queued
	// again then runs in real time (the clock stands still meanwhile).
	startAndReap(t, b, clock, stale, *dead)
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "here I am", sent[0].Text)
	require.Equal(t, []string{"are you there?"}, userContents(b.model.Requests()[0]))
	runs, err := b.store.Runs(b.ctx, dead.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, core.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "stale")
	require.Equal(t, core.RunSucceeded, b.waitRun(t, "lone").Status)
}

func TestRunLeftRunningByACrashIsRecoveredOnStart(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, staleAfter: time.Minute, noStart: true})
	b.model.Enqueue(llmtest.Text("back online"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "boot", "ping"))
	_, err := b.store.ClaimRun(b.ctx, "dead-process", t0)
	require.NoError(t, err)
	require.NoError(t, b.adapter.Deliver(b.ctx, "boot", "ping again"))
	clock.Advance(2 * time.Minute) // the process was down a while

	require.NoError(t, b.disp.Start(b.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.disp.Stop(ctx))
	})
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "back online", sent[0].Text)
}

func TestRestartRequestedByAnotherProcessStopsAtTheNextHeartbeat(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, policy: core.BusyRestart, staleAfter: 20 * time.Second})
	release := slowFirst(b, "stale answer", "answer to both")
	defer close(release)
	require.NoError(t, b.adapter.Deliver(b.ctx, "xp", "one"))
	b.model.WaitRequests(t, 1, waitFor)

	// Another process receives the user's next message and asks for the
	// restart through the database only.
	res, err := b.store.RecordInbound(b.ctx, core.InboundRecord{
		Platform: web, ChannelThreadID: "xp", ChannelUserID: "xp", Text: "two",
		Now: clock.Now(), PlanRun: true, WhileRunning: core.BusyRestart,
	})
	require.NoError(t, err)
	require.NotNil(t, res.Running)
	require.NotNil(t, res.Running.CancelRequestedAt)

	// This process learns of it at its next heartbeat (every 5s here).
	clock.WaitForTimer(t, clock.Now().Add(5*time.Second), waitFor)
	clock.Advance(5 * time.Second)
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "answer to both", sent[0].Text)
	require.Equal(t, []string{"one", "two"}, userContents(b.model.Requests()[1]))
	first, err := b.store.Run(b.ctx, res.Running.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunCanceled, first.Status)
	require.Equal(t, []string{"answer to both"}, sentTexts(b.adapter))
}
