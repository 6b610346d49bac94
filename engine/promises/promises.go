// Package promises keeps the promises a reply makes in words
// (bot.promise_check). After the model's final answer in a turn that
// called no scheduling tool, the turns engine asks a Checker whether the
// reply commits the bot to a later message: core/promise's word patterns
// first, the light model only when they are unsure, so that a reply
// promising nothing costs microseconds and no model call. A caught
// promise gets the model one more round with Note; Kept then says how
// that round kept it.
package promises

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/promise"
)

// The tools whose successful call schedules a later message: a turn that
// called one kept its word already.
const (
	toolScheduleMessage = "schedule_private_message"
	toolScheduleTurn    = "schedule_recurring_turn"
)

// DefaultLightTimeout bounds the light model's judgement of one reply: the
// reply waits for it, and goes out unchanged when it does not come.
const DefaultLightTimeout = 5 * time.Second

// Counter counts promises: "caught" for each reply caught, then how it
// was kept (promise.KeptScheduled, KeptFollowUp, KeptReworded, Unkept).
// The bot's metrics implement it.
type Counter interface {
	PromiseCounted(outcome string)
}

// Config wires a Checker.
type Config struct {
	// Light is the model that judges a reply the patterns are unsure of,
	// with no tools; nil leaves such a reply alone.
	Light core.Completer
	// LightModel is llm.light_model (the main model when empty).
	LightModel string
	// Timeout bounds one judgement (default DefaultLightTimeout).
	Timeout time.Duration
	// Metrics, when set, counts what Check and Kept find.
	Metrics Counter
	Logger  *slog.Logger
}

// Checker decides whether replies promise a later message; safe for
// concurrent use.
type Checker struct {
	cfg Config
}

// New returns a Checker over cfg.
func New(cfg Config) *Checker {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultLightTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Checker{cfg: cfg}
}

// Scheduled reports whether calls hold a scheduling tool's successful
// call: the turn kept its promise, if it made one.
func Scheduled(calls []llm.ToolCallResult) bool {
	for _, c := range calls {
		if (c.Call.Name == toolScheduleMessage || c.Call.Name == toolScheduleTurn) && !c.IsError {
			return true
		}
	}
	return false
}

// CanSchedule reports whether tools offer the model a way to schedule.
func CanSchedule(tools []llm.Tool) bool {
	for _, t := range tools {
		if t.Name == toolScheduleMessage || t.Name == toolScheduleTurn {
			return true
		}
	}
	return false
}

// Check returns the promise reply makes, nil when it makes none, and a
// note for the run record when the light model was asked and found none
// or could not answer ("" otherwise). It counts a caught promise.
func (c *Checker) Check(ctx context.Context, reply string) (*promise.Record, string) {
	rec, note := c.judge(ctx, reply)
	if rec != nil {
		c.count("caught")
	}
	return rec, note
}

// judge is Check without the count.
func (c *Checker) judge(ctx context.Context, reply string) (*promise.Record, string) {
	f := promise.Detect(reply)
	switch f.Verdict {
	case promise.No:
		return nil, ""
	case promise.Yes:
		return &promise.Record{Phrase: f.Phrase, When: f.When, Stage: promise.StagePatterns}, ""
	}
	if c.cfg.Light == nil {
		return nil, fmt.Sprintf("the reply may promise a later message (%q); no light model to ask, sent as it is", f.Phrase)
	}
	yes, err := c.ask(ctx, reply)
	if err != nil {
		c.cfg.Logger.Warn("the light model could not judge whether a reply promises a later message; sent as it is", "err", err)
		return nil, fmt.Sprintf("the reply may promise a later message (%q); the light model could not judge it (%v), sent as it is", f.Phrase, err)
	}
	if !yes {
		return nil, fmt.Sprintf("the reply may promise a later message (%q); the light model judged it does not", f.Phrase)
	}
	return &promise.Record{Phrase: f.Phrase, When: f.When, Stage: promise.StageLightModel}, ""
}

// judgeSystem is the light model's instruction. It answers one word, so
// that a small model's answer is easy to read and costs a few tokens.
const judgeSystem = `You check one reply a chat assistant is about to send to a user.
Does the reply commit the assistant to send the user a message later, on its own (a reminder, a check-in, news it will pass on at some later time)?
Not a commitment: an offer or a question ("I can remind you", "shall I remind you?"), something it will only remember or keep in mind, something the user will do, a statement about a date.
Answer with one word: yes or no.`

// ask asks the light model about reply.
func (c *Checker) ask(ctx context.Context, reply string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	res, err := c.cfg.Light.Complete(ctx, llm.Request{Model: c.cfg.LightModel, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: judgeSystem},
		{Role: llm.RoleUser, Content: reply},
	}})
	if err != nil {
		return false, fmt.Errorf("asking %s: %w", c.cfg.LightModel, err)
	}
	word := strings.ToLower(strings.TrimSpace(res.Content))
	word = strings.TrimLeft(word, "\"'*`")
	switch {
	case strings.HasPrefix(word, "yes"):
		return true, nil
	case strings.HasPrefix(word, "no"):
		return false, nil
	}
	return false, fmt.Errorf("%s answered %q, not yes or no", c.cfg.LightModel, oneLine(res.Content, 40))
}

// Note is the hidden message the model's extra round gets about rec:
// schedule it (when tools offer a way) or reword the reply.
func Note(rec *promise.Record, canSchedule bool) string {
	what := fmt.Sprintf("Your reply has not been sent yet. It promises the user a later message (%q), but nothing is scheduled, so that message would never come.", rec.Phrase)
	if !canSchedule {
		return what + " Nothing can be scheduled here: reword the reply so that it promises no later message. Answer with the reply to send, and nothing else."
	}
	return what + " Either schedule it now (" + toolScheduleMessage + ", or " + toolScheduleTurn +
		" if it repeats) at the time you promised, or reword the reply so that it promises no later message. Then answer with the reply to send, and nothing else."
}

// Kept says how the extra round kept rec, from its tool calls, whether
// its reply asked to write first later (<PROACTIVE>) and its reply's
// text, and counts it; why says what is left when it was not kept.
func (c *Checker) Kept(calls []llm.ToolCallResult, followUp bool, reply string) (kept, why string) {
	switch {
	case Scheduled(calls):
		kept = promise.KeptScheduled
	case followUp:
		kept = promise.KeptFollowUp
	default:
		// The patterns alone judge the new words: the model was told what
		// was wrong, and a reply they are unsure of is not worth another
		// wait on the light model.
		if again := promise.Detect(reply); again.Verdict == promise.Yes {
			kept, why = promise.Unkept, fmt.Sprintf("the reply still promises (%q) and nothing was scheduled", again.Phrase)
		} else {
			kept = promise.KeptReworded
		}
	}
	c.count(kept)
	return kept, why
}

// Failed records that the extra round could not be made: the reply goes
// out as first written.
func (c *Checker) Failed(rec *promise.Record, err error) {
	rec.Kept, rec.Why = promise.Unkept, "the extra round failed: "+err.Error()
	c.count(promise.Unkept)
}

// Log says in log, in words, what became of rec once its round is over.
func Log(log *slog.Logger, rec *promise.Record) {
	const caught = "the reply promised a later message without scheduling it"
	args := []any{"phrase", rec.Phrase, "stage", rec.Stage}
	switch rec.Kept {
	case promise.KeptScheduled:
		log.Info(caught+"; in one more round the model scheduled it", args...)
	case promise.KeptFollowUp:
		log.Info(caught+"; in one more round the model asked to write first later", args...)
	case promise.KeptReworded:
		log.Info(caught+"; in one more round the model reworded the reply", args...)
	default:
		log.Warn(caught+"; it is not kept", append(args, "why", rec.Why)...)
	}
}

func (c *Checker) count(outcome string) {
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.PromiseCounted(outcome)
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
