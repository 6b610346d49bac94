package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
)

// failingCompletions refuses the completions fail picks, as a store on a
// full disk or one that rejects what was written would.
type failingCompletions struct {
	*store.Store
	mu    sync.Mutex
	fail  func(c core.RunCompletion, calls int) error
	calls int
}

func (f *failingCompletions) CompleteRunAndClaim(ctx context.Context, runID int64, owner string, c core.RunCompletion,
	platforms ...core.Platform) (*core.Run, error) {
	f.mu.Lock()
	f.calls++
	err := f.fail(c, f.calls)
	f.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("completing run %d: %w", runID, err)
	}
	return f.Store.CompleteRunAndClaim(ctx, runID, owner, c, platforms...)
}

// twoTurnsThrough runs two turns of thread on a store whose completions
// go through wrap, "two" queued while "one" is with the model (runs.stale_after
// an hour: the reaper cannot help). It returns once both replies were sent
// and the second run succeeded.
func twoTurnsThrough(t *testing.T, wrap *failingCompletions, thread string) (*testBundle, []coretest.Sent, core.Conversation) {
	t.Helper()
	b := setup(t, setupOpts{policy: core.BusyQueue, staleAfter: time.Hour,
		wrapStore: func(st *store.Store) core.Store { wrap.Store = st; return wrap }})
	release := slowFirst(b, "answer to one", "answer to two")
	require.NoError(t, b.adapter.Deliver(b.ctx, thread, "one"))
	b.model.WaitRequests(t, 1, waitFor)
	require.NoError(t, b.adapter.Deliver(b.ctx, thread, "two"))
	close(release)
	sent := b.adapter.WaitSent(t, 2, waitFor)
	conv, err := b.store.ConversationByThread(b.ctx, web, thread)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		runs, err := b.store.Runs(b.ctx, conv.ID)
		return err == nil && len(runs) == 2 && runs[1].Status == core.RunSucceeded
	}, waitFor, 5*time.Millisecond)
	return b, sent, conv
}

// The first turn's outcome cannot be recorded once (the database's disk
// was full): it is recorded on the next try, and the message queued
// behind it is answered at once, not after runs.stale_after (an hour
// here), when the reaper would have failed the run left running.
func TestARunOutcomeThatFailsToRecordIsRecordedAgain(t *testing.T) {
	t.Parallel()
	full := fmt.Errorf("sqlite /data/parley.db: the disk holding /data is full: %w", core.ErrStoreUnavailable)
	wrap := &failingCompletions{fail: func(_ core.RunCompletion, calls int) error {
		if calls == 1 {
			return full
		}
		return nil
	}}
	b, sent, conv := twoTurnsThrough(t, wrap, "oc")
	require.Equal(t, []string{"answer to one", "answer to two"}, []string{sent[0].Text, sent[1].Text})
	runs, err := b.store.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunSucceeded, runs[0].Status, "recorded on the second try")
	var replies []string
	for _, m := range b.messages(t, "oc") {
		if m.Role == core.RoleAssistant {
			replies = append(replies, m.Content)
			require.Equal(t, core.DeliverySent, m.Delivery)
		}
	}
	require.Equal(t, []string{"answer to one", "answer to two"}, replies, "each reply stored once")
	require.Len(t, b.adapter.Sent(), 2, "and sent once")
}

// A completion the store refuses for what it holds, however often it is
// tried, does not hold the conversation until the reaper either: after a
// few tries the run is recorded as failed without it, and the next turn
// goes ahead.
func TestARunOutcomeTheStoreRefusesEndsTheRunAllTheSame(t *testing.T) {
	t.Parallel()
	wrap := &failingCompletions{fail: func(c core.RunCompletion, _ int) error {
		for _, m := range c.Messages {
			if m.Content == "answer to one" {
				return errors.New("value too long for type character varying(10)")
			}
		}
		return nil
	}}
	b, sent, conv := twoTurnsThrough(t, wrap, "rf")
	require.Equal(t, "answer to two", sent[1].Text)
	runs, err := b.store.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "recording the outcome failed: ")
	require.Contains(t, runs[0].Error, "value too long")
}

// failingFreeze cannot keep a session's prompt stack, as on a full disk.
type failingFreeze struct{ *store.Store }

func (failingFreeze) FreezePrompt(context.Context, int64, string) (string, error) {
	return "", fmt.Errorf("freezing the prompt: %w", core.ErrStoreUnavailable)
}

// A turn whose session prompt cannot be kept (the disk is full) still
// answers: the stack is kept by a later turn, and the user gets no
// failure notice for it.
func TestATurnAnswersThoughItsPromptCannotBeKept(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{wrapStore: func(st *store.Store) core.Store { return failingFreeze{st} }})
	b.model.Enqueue(llmtest.Text("hello there"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "fz", "hi"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "hello there", sent[0].Text)
	require.Equal(t, core.RunSucceeded, b.waitRun(t, "fz").Status)
}
