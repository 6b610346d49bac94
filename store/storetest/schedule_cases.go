package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// testTwoSchedulersSendEachJobOnce: two schedulers claim 2,000 due
// message jobs at once (on PostgreSQL, truly concurrent transactions);
// every job is completed exactly once, and every conversation's messages
// land with gap-free seqs.
func testTwoSchedulersSendEachJobOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	const convs, perConv = 40, 50
	var convIDs []int64
	for c := range convs {
		conv := b.inbound(t, fmt.Sprintf("chat-%d", c), "hi", b.t0, false).Conversation
		convIDs = append(convIDs, conv.ID)
		for i := range perConv {
			j := &core.Job{ConversationID: conv.ID, Text: fmt.Sprintf("c%d-%d", c, i), DueAt: b.t0.Add(time.Duration(i) * time.Millisecond)}
			_, err := b.st.ScheduleMessage(b.ctx, j, false, 1000)
			require.NoError(t, err)
		}
	}
	now := b.at(time.Minute)
	kinds := []core.JobKind{core.JobMessage}
	var mu sync.Mutex
	sentBy := map[int64]string{}
	var dup []string
	var wg sync.WaitGroup
	for _, owner := range []string{"scheduler-a", "scheduler-b"} {
		wg.Go(func() {
			for {
				jobs, err := b.st.ClaimDueJobs(b.ctx, owner, now, now.Add(time.Minute), kinds, 16)
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				for _, j := range jobs {
					ok, err := b.st.CompleteMessageJob(b.ctx, j.ID, owner, &core.Message{Role: core.RoleAssistant,
						Content: j.Text, Source: core.SourceScheduledSend, CreatedAt: now})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, seen := sentBy[j.ID]; seen || !ok {
						dup = append(dup, fmt.Sprintf("job %d: sent by %s and %s (ours=%v)", j.ID, prev, owner, ok))
					}
					sentBy[j.ID] = owner
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, dup)
	require.Len(t, sentBy, convs*perConv, "every job sent")
	require.EqualValues(t, convs*perConv, b.count(t, "jobs", "status = 'sent'"))
	for _, id := range convIDs {
		msgs, err := b.st.Messages(b.ctx, id)
		require.NoError(t, err)
		require.Len(t, msgs, perConv+1)
		for i, m := range msgs {
			require.Equal(t, int64(i+1), m.Seq, "seqs gap-free and unique")
		}
	}
}

// testClaimDueJobsScopedToPlatforms: a process serving only some
// platforms (parley chat: the terminal) never claims another's jobs.
func testClaimDueJobsScopedToPlatforms(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "tg", "hi", b.t0, false).Conversation // telegram
	_, err := b.st.ScheduleMessage(b.ctx, &core.Job{ConversationID: conv.ID, Text: "x", DueAt: b.t0}, false, 50)
	require.NoError(t, err)
	kinds := []core.JobKind{core.JobMessage}
	now := b.at(time.Minute)
	next, err := b.st.NextJobDue(b.ctx, kinds, console)
	require.NoError(t, err)
	require.Nil(t, next, "nothing for the console")
	got, err := b.st.ClaimDueJobs(b.ctx, "chat", now, now.Add(time.Minute), kinds, 10, console)
	require.NoError(t, err)
	require.Empty(t, got)
	next, err = b.st.NextJobDue(b.ctx, kinds, telegram, web)
	require.NoError(t, err)
	require.NotNil(t, next)
	got, err = b.st.ClaimDueJobs(b.ctx, "run", now, now.Add(time.Minute), kinds, 10, telegram, web)
	require.NoError(t, err)
	require.Len(t, got, 1)
}

// testScheduledMessageKeepsItsFormat: a message the model scheduled is
// Markdown, and is sent as such when it is due.
func testScheduledMessageKeepsItsFormat(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "fmt", "hi", b.t0, false).Conversation
	rich := &core.Job{ConversationID: conv.ID, Text: "**bread**", DueAt: b.t0, Format: core.FormatRichText}
	_, err := b.st.ScheduleMessage(b.ctx, rich, false, 50)
	require.NoError(t, err)
	plain := &core.Job{ConversationID: conv.ID, Text: "as written", DueAt: b.t0}
	_, err = b.st.ScheduleMessage(b.ctx, plain, false, 50)
	require.NoError(t, err)
	got, err := b.st.Job(b.ctx, rich.ID)
	require.NoError(t, err)
	require.Equal(t, core.FormatRichText, got.Format)
	got, err = b.st.Job(b.ctx, plain.ID)
	require.NoError(t, err)
	require.Equal(t, core.FormatText, got.Format)
}
