package promises_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/promise"
	"github.com/parleybot/parley/engine/promises"
)

// light is a light model in the process: it answers answer, or fails
// with err, or waits for the caller to give up, and counts its calls.
type light struct {
	mu     sync.Mutex
	calls  []llm.Request
	answer string
	err    error
	hang   bool
}

func (l *light) Complete(ctx context.Context, req llm.Request) (llm.Result, error) {
	l.mu.Lock()
	l.calls = append(l.calls, req)
	l.mu.Unlock()
	if l.hang {
		<-ctx.Done()
		return llm.Result{}, ctx.Err()
	}
	return llm.Result{Content: l.answer}, l.err
}

// counter is the metrics, counted by outcome.
type counter map[string]int

func (c counter) PromiseCounted(outcome string) { c[outcome]++ }

const offer = "I can remind you tomorrow if you like."

func TestCheckUsesThePatternsFirst(t *testing.T) {
	l := &light{answer: "yes"}
	m := counter{}
	c := promises.New(promises.Config{Light: l, LightModel: "mini", Metrics: m})
	ctx := context.Background()

	rec, note := c.Check(ctx, "Sounds lovely. Enjoy the concert!")
	require.Nil(t, rec)
	require.Empty(t, note)

	rec, note = c.Check(ctx, "Good luck! I'll check in tomorrow evening to see how it went.")
	require.Equal(t, &promise.Record{Phrase: "I'll check in tomorrow evening", When: "tomorrow evening", Stage: promise.StagePatterns}, rec)
	require.Empty(t, note)
	require.Empty(t, l.calls, "the patterns decided both: no model call")
	require.Equal(t, counter{"caught": 1}, m)
}

func TestCheckAsksTheLightModelWhenUnsure(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		light  *light
		caught bool
		note   string
	}{
		{"yes", &light{answer: "Yes."}, true, ""},
		{"yes in bold", &light{answer: "**yes**"}, true, ""},
		{"no", &light{answer: "no"}, false, "the light model judged it does not"},
		{"neither", &light{answer: "It depends on the user."}, false, `mini answered "It depends on the user.", not yes or no`},
		{"fails", &light{err: errors.New("status 503")}, false, "could not judge it (asking mini: status 503), sent as it is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := promises.New(promises.Config{Light: tc.light, LightModel: "mini"})
			rec, note := c.Check(ctx, offer)
			require.Len(t, tc.light.calls, 1)
			req := tc.light.calls[0]
			require.Equal(t, "mini", req.Model)
			require.Empty(t, req.Tools)
			require.Equal(t, offer, req.Messages[len(req.Messages)-1].Content)
			if tc.caught {
				require.Equal(t, &promise.Record{Phrase: "I can remind you tomorrow", When: "tomorrow", Stage: promise.StageLightModel}, rec)
				require.Empty(t, note)
				return
			}
			require.Nil(t, rec)
			require.Contains(t, note, tc.note)
		})
	}
}

func TestCheckWithoutALightModelLeavesUnsureAlone(t *testing.T) {
	c := promises.New(promises.Config{})
	rec, note := c.Check(context.Background(), offer)
	require.Nil(t, rec)
	require.Contains(t, note, "no light model to ask")
}

func TestCheckDoesNotWaitLongOnTheLightModel(t *testing.T) {
	l := &light{hang: true}
	c := promises.New(promises.Config{Light: l, LightModel: "mini", Timeout: 50 * time.Millisecond})
	done := make(chan string, 1)
	go func() {
		_, note := c.Check(context.Background(), offer)
		done <- note
	}()
	select {
	case note := <-done:
		require.Contains(t, note, "context deadline exceeded")
	case <-time.After(10 * time.Second):
		t.Fatal("Check still waits on a light model that does not answer")
	}
}

func TestScheduled(t *testing.T) {
	call := func(name string, isErr bool) llm.ToolCallResult {
		return llm.ToolCallResult{Call: llm.ToolCall{Name: name}, IsError: isErr}
	}
	require.False(t, promises.Scheduled(nil))
	require.False(t, promises.Scheduled([]llm.ToolCallResult{call("retrieve_history", false)}))
	require.False(t, promises.Scheduled([]llm.ToolCallResult{call("schedule_private_message", true)}), "a refused call scheduled nothing")
	require.True(t, promises.Scheduled([]llm.ToolCallResult{call("retrieve_history", false), call("schedule_private_message", false)}))
	require.True(t, promises.Scheduled([]llm.ToolCallResult{call("schedule_recurring_turn", false)}))
	require.False(t, promises.CanSchedule([]llm.Tool{{Name: "react"}}))
	require.True(t, promises.CanSchedule([]llm.Tool{{Name: "react"}, {Name: "schedule_private_message"}}))
}

func TestNote(t *testing.T) {
	rec := &promise.Record{Phrase: "I'll text you at 9"}
	n := promises.Note(rec, true)
	require.Contains(t, n, `("I'll text you at 9")`)
	require.Contains(t, n, "schedule_private_message")
	n = promises.Note(rec, false)
	require.NotContains(t, n, "schedule_private_message", "no tool to name")
	require.Contains(t, n, "reword the reply")
}

func TestKept(t *testing.T) {
	m := counter{}
	c := promises.New(promises.Config{Metrics: m})
	sched := []llm.ToolCallResult{{Call: llm.ToolCall{Name: "schedule_private_message"}}}
	kept, why := c.Kept(sched, false, "I'll check in tomorrow evening.")
	require.Equal(t, promise.KeptScheduled, kept)
	require.Empty(t, why)
	kept, _ = c.Kept(nil, true, "I'll check in later.")
	require.Equal(t, promise.KeptFollowUp, kept)
	kept, _ = c.Kept(nil, false, "Tell me tomorrow how it went.")
	require.Equal(t, promise.KeptReworded, kept)
	kept, why = c.Kept(nil, false, "Sure! I'll check in tomorrow evening.")
	require.Equal(t, promise.Unkept, kept)
	require.True(t, strings.Contains(why, "still promises"), why)
	rec := &promise.Record{}
	c.Failed(rec, errors.New("status 400"))
	require.Equal(t, promise.Unkept, rec.Kept)
	require.Equal(t, "the extra round failed: status 400", rec.Why)
	require.Equal(t, counter{promise.KeptScheduled: 1, promise.KeptFollowUp: 1, promise.KeptReworded: 1, promise.Unkept: 2}, m)
}

func TestLogSaysWhatBecameOfThePromise(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	promises.Log(log, &promise.Record{Phrase: "I'll text you at 9", Stage: promise.StagePatterns, Kept: promise.KeptScheduled})
	promises.Log(log, &promise.Record{Phrase: "I'll text you at 9", Stage: promise.StagePatterns, Kept: promise.Unkept, Why: "the extra round failed: status 400"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], `level=INFO msg="the reply promised a later message without scheduling it; in one more round the model scheduled it" phrase="I'll text you at 9"`)
	require.Contains(t, lines[1], `level=WARN`)
	require.Contains(t, lines[1], `why="the extra round failed: status 400"`)
}
