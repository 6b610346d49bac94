package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
)

// deadReply plays a process that claimed the turn answering "are you
// there?", stored its reply as sending and died; sentFirst says whether
// the platform took the send before it died. It returns the dead run and
// the reply as the dead process stored it.
func deadReply(t *testing.T, b *testBundle, thread string, sentFirst bool) (core.Run, core.Message) {
	return deadReplyOf(t, b, "dead-process", thread, sentFirst)
}

func deadReplyOf(t *testing.T, b *testBundle, owner, thread string, sentFirst bool) (core.Run, core.Message) {
	t.Helper()
	require.NoError(t, b.adapter.Deliver(b.ctx, thread, "are you there?"))
	dead, err := b.store.ClaimRun(b.ctx, owner, t0)
	require.NoError(t, err)
	require.NotNil(t, dead)
	reply := core.Message{ConversationID: dead.ConversationID, Role: core.RoleAssistant, Content: "here I am",
		Source: core.SourceReply, RunID: &dead.ID, Delivery: core.DeliverySending, CreatedAt: t0,
		// As a turn marks its reply: the newest message it saw, the
		// user's, seq 1 of a new conversation.
		Metadata: map[string]any{"answered_seq": 1}}
	require.NoError(t, b.store.AppendMessage(b.ctx, &reply))
	if sentFirst {
		_, err := b.adapter.Send(b.ctx, core.OutboundMessage{ConversationID: dead.ConversationID, ChannelThreadID: thread,
			Text: reply.Content, IdempotencyKey: reply.IdempotencyKey()})
		require.NoError(t, err)
	}
	return *dead, reply
}

// startAndReap starts the dispatcher and moves the clock until the dead
// run is reaped, checking that the model is not asked before the run is
// stale.
func startAndReap(t *testing.T, b *testBundle, clock *coretest.Clock, stale time.Duration, dead core.Run) {
	t.Helper()
	require.NoError(t, b.disp.Start(b.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.disp.Stop(ctx))
	})
	isReaped := func() bool {
		r, err := b.store.Run(b.ctx, dead.ID)
		require.NoError(t, err)
		return r.Status == core.RunFailed
	}
	for !isReaped() {
		require.Less(t, clock.Now().Sub(t0), stale+5*time.Minute, "the dead run was never reaped")
		if clock.Now().Sub(t0) < stale {
			require.Empty(t, b.model.Requests(), "nothing runs while the dead run is not stale")
		}
		// Both loops that sleep on the clock (claim, maintenance) are
		// armed: the maintenance loop has acted on the time so far.
		clock.WaitForTimers(t, 2, waitFor)
		clock.Advance(10 * time.Second)
		clock.WaitForTimers(t, 2, waitFor)
	}
}

// storedReply waits until the reply's delivery is settled and returns it.
func storedReply(t *testing.T, b *testBundle, thread string, id int64) core.Message {
	t.Helper()
	var got core.Message
	require.Eventually(t, func() bool {
		for _, m := range b.messages(t, thread) {
			if m.ID == id {
				got = m
				return m.Delivery != core.DeliverySending
			}
		}
		return false
	}, waitFor, 5*time.Millisecond)
	return got
}

// A reply its process stored but never sent reaches the user once, after
// the process is found dead, and the model is not asked again.
func TestAReplyADeadProcessNeverSentGoesOutOnce(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	const stale = 2 * time.Minute
	b := setup(t, setupOpts{clock: clock, staleAfter: stale, noStart: true})
	dead, reply := deadReply(t, b, "lost", false)
	startAndReap(t, b, clock, stale, dead)

	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "here I am", sent[0].Text)
	require.Equal(t, reply.IdempotencyKey(), sent[0].IdempotencyKey)
	got := storedReply(t, b, "lost", reply.ID)
	require.Equal(t, core.DeliverySent, got.Delivery)
	require.NotEmpty(t, got.PlatformMessageID)

	run := b.waitRun(t, "lost")
	require.Equal(t, core.RunSkipped, run.Status)
	require.Contains(t, run.Error, "sent again")
	require.Empty(t, b.model.Requests(), "the stored reply is sent, not made again")
	require.Len(t, b.adapter.Sent(), 1)
	require.Len(t, b.messages(t, "lost"), 2, "the user's message and the one reply")
}

// On a platform that drops a repeated key (Discord's nonce), a reply the
// dead process did send is not seen twice.
func TestAReplySentAgainAfterACrashIsDroppedByANonce(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	const stale = 2 * time.Minute
	b := setup(t, setupOpts{clock: clock, staleAfter: stale, noStart: true})
	b.adapter.IdempotencyWindow = 10 * time.Minute
	dead, reply := deadReply(t, b, "nonce", true)
	startAndReap(t, b, clock, stale, dead)

	got := storedReply(t, b, "nonce", reply.ID)
	require.Equal(t, core.DeliverySent, got.Delivery)
	require.Equal(t, core.RunSkipped, b.waitRun(t, "nonce").Status)
	require.Len(t, b.adapter.Sent(), 1, "the user saw the reply once")
	require.Empty(t, b.model.Requests())
}

// Where the platform keeps no key, a reply the dead process had sent is a
// duplicate: the documented bound, one per reply in doubt at the crash.
func TestAReplySentAgainWithoutANonceIsOneDuplicate(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	const stale = 2 * time.Minute
	b := setup(t, setupOpts{clock: clock, staleAfter: stale, noStart: true})
	dead, reply := deadReply(t, b, "twice", true)
	startAndReap(t, b, clock, stale, dead)

	storedReply(t, b, "twice", reply.ID)
	sent := b.adapter.WaitSent(t, 2, waitFor)
	require.Equal(t, sent[0], sent[1])
	require.Empty(t, b.model.Requests())
}

// A message the user wrote while the dead run was answering is answered
// after the unsent reply goes out, in that order.
func TestAnUnsentReplyGoesOutBeforeTheNextTurn(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	const stale = 2 * time.Minute
	b := setup(t, setupOpts{clock: clock, staleAfter: stale, noStart: true})
	b.model.Enqueue(llmtest.Text("and hello to you"))
	dead, reply := deadReply(t, b, "next", false)
	require.NoError(t, b.adapter.Deliver(b.ctx, "next", "hello??"))
	startAndReap(t, b, clock, stale, dead)

	sent := b.adapter.WaitSent(t, 2, waitFor)
	require.Equal(t, []string{"here I am", "and hello to you"}, []string{sent[0].Text, sent[1].Text})
	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	last := reqs[0].Messages()
	require.Equal(t, "hello??", last[len(last)-1].Content)
	require.Equal(t, core.DeliverySent, storedReply(t, b, "next", reply.ID).Delivery)
	require.Equal(t, core.RunSucceeded, b.waitRun(t, "next").Status)
}

// recordingAdapter checks, at each send, what the database holds for the
// message being sent.
type recordingAdapter struct {
	*coretest.Adapter
	check func(core.OutboundMessage)
}

func (a *recordingAdapter) Send(ctx context.Context, m core.OutboundMessage) (core.SendResult, error) {
	a.check(m)
	return a.Adapter.Send(ctx, m)
}

// A turn's reply is in the database, as sending, before the platform is
// called, and marked sent after.
func TestAReplyIsStoredBeforeItIsSent(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noStart: true})
	b.model.Enqueue(llmtest.Text("stored first"))
	var during []core.Message
	ra := &recordingAdapter{Adapter: b.adapter}
	ra.check = func(m core.OutboundMessage) {
		conv, err := b.store.ConversationByThread(b.ctx, web, m.ChannelThreadID)
		require.NoError(t, err)
		during, err = b.store.Messages(b.ctx, conv.ID)
		require.NoError(t, err)
	}
	disp, err := engine.New(engine.Config{Store: b.store, LLM: newTestLLM(t, b), Adapters: []core.Adapter{ra},
		PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, b.adapter.Start(b.ctx, disp))
	require.NoError(t, disp.Start(b.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, disp.Stop(ctx))
	})
	require.NoError(t, b.adapter.Deliver(b.ctx, "first", "hi"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Len(t, during, 2)
	require.Equal(t, "stored first", during[1].Content)
	require.Equal(t, core.DeliverySending, during[1].Delivery)
	require.Equal(t, during[1].IdempotencyKey(), sent[0].IdempotencyKey)
	require.Equal(t, core.RunSucceeded, b.waitRun(t, "first").Status)
	after := b.messages(t, "first")
	require.Len(t, after, 2)
	require.Equal(t, core.DeliverySent, after[1].Delivery)
	require.Equal(t, during[1].ID, after[1].ID)
	require.NotEmpty(t, after[1].PlatformMessageID)
}

func newTestLLM(t *testing.T, b *testBundle) core.LLM {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: b.model.URL(), APIKey: "sk-test", Model: "test-model", Timeout: 5 * time.Second})
	require.NoError(t, err)
	return client
}

// A process restarted on the same host fails its predecessor's runs at
// once, not after runs.stale_after: the reply it left goes out while
// Discord still remembers its nonce.
func TestARestartedProcessSendsItsPredecessorsReplyAtOnce(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	require.NoError(t, err)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, staleAfter: time.Hour, noStart: true})
	owner := fmt.Sprintf("%s-%d-0badc0de", host, gone.Process.Pid)
	dead, reply := deadReplyOf(t, b, owner, "restart", false)
	require.NoError(t, b.disp.Start(b.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.disp.Stop(ctx))
	})
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, reply.IdempotencyKey(), sent[0].IdempotencyKey)
	r, err := b.store.Run(b.ctx, dead.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunFailed, r.Status)
	require.Contains(t, r.Error, "process is gone")
	require.Equal(t, t0, clock.Now(), "no time had to pass")
}
