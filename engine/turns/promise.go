package turns

import (
	"context"
	"log/slog"
	"slices"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine/promises"
)

// keepPromise gives a reply that promises a later message, in a turn
// that scheduled nothing, one more round to schedule it or reword the
// reply (bot.promise_check), and returns the reply to send and the answer
// it came from. A cron turn's reply is left alone: its job recurs. The
// user gets one reply either way; when the round fails, the first.
func (s *speaker) keepPromise(ctx context.Context, log *slog.Logger, t *core.Turn, ask request, res llm.Result, reply *core.Reply, ans answer, c *core.RunCompletion) (*core.Reply, answer) {
	pc := s.cfg.Promises
	if pc == nil || reply.Silent || reply.Proactive != nil || t.Cron != nil || promises.Scheduled(res.ToolCalls) {
		return reply, ans
	}
	if _, asks := reply.Metadata[core.ChoicesKey]; asks {
		return reply, ans // a question with buttons offers; it promises nothing
	}
	rec, note := pc.Check(ctx, reply.Text)
	if note != "" {
		c.Record.Notes = append(c.Record.Notes, note)
	}
	if rec == nil {
		return reply, ans
	}
	rec.Said = reply.Text
	rec.Note = promises.Note(rec, promises.CanSchedule(ask.tools))
	c.Record.Promise = rec
	defer promises.Log(log, rec)
	msgs := append(slices.Clip(ask.prompt), llm.Message{Role: llm.RoleAssistant, Content: ans.text}, llm.Message{Role: llm.RoleUser, Content: rec.Note})
	more, err := s.callModel(ctx, llm.Request{Messages: msgs, Tools: ask.tools, MaxToolRounds: s.cfg.MaxToolRounds})
	addUsage(c, more)
	c.Record.ToolCalls = append(c.Record.ToolCalls, toolRecords(more.ToolCalls)...)
	c.Record.Rounds += more.Rounds
	if err != nil {
		pc.Failed(rec, err)
		return reply, ans
	}
	again := readAnswer(more)
	again.reasoning = joinReasoning(ans.reasoning, again.reasoning)
	next, err := s.readKept(ctx, t, again)
	if err == nil && next.Text == "" && next.Proactive == nil && !promises.Scheduled(more.ToolCalls) {
		err = &answerError{"the model answered nothing"}
	}
	if err != nil {
		if promises.Scheduled(more.ToolCalls) {
			// Scheduled, then said nothing usable: the first reply fits.
			rec.Kept, rec.Why = pc.Kept(more.ToolCalls, false, "")
		} else {
			pc.Failed(rec, err)
		}
		return reply, ans
	}
	if next.Text == "" {
		// Scheduled, or asked to follow up, with nothing more to say: the
		// first reply now tells the truth.
		next.Text, next.Metadata = reply.Text, reply.Metadata
	}
	rec.Kept, rec.Why = pc.Kept(more.ToolCalls, next.Proactive != nil, next.Text)
	c.Record.Output, c.Record.Reasoning = again.text, again.reasoning
	c.Record.Notes = append(c.Record.Notes, next.Notes...)
	return next, again
}

// readKept reads the extra round's answer into a reply; a refusal, a cut
// answer or silence is an error (the first reply goes out instead).
func (s *speaker) readKept(ctx context.Context, t *core.Turn, ans answer) (*core.Reply, error) {
	switch {
	case ans.refused != "":
		return nil, &answerError{ans.refused}
	case ans.cut:
		return nil, &answerError{"the answer was cut at llm.max_tokens"}
	}
	next, err := s.processOutput(ctx, t, ans.text)
	if err != nil {
		return nil, err
	}
	if next.Silent {
		return nil, &answerError{"the model chose silence"}
	}
	return next, nil
}

func joinReasoning(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n\n" + b
}
