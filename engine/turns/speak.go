package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/engine/typing"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/modeltext"
)

// speaker makes one turn: it loads the conversation, asks the model with
// the prompter's prompt and tools, reads the answer and has the courier
// deliver the reply (or the failure notice) while the typing indicator
// shows.
type speaker struct {
	cfg     *Config
	log     *slog.Logger
	prompts *prompter
	courier *courier
	// busy counts the typing indicator's calls in flight with the turns:
	// Stop waits for them. runCtx ends at shutdown.
	busy   *sync.WaitGroup
	runCtx context.Context
	typing typing.Indicator
}

// conversation is run's conversation: known when the caller read it
// already, in the transaction that claimed run, or else from the store.
func (s *speaker) conversation(ctx context.Context, run *core.Run, known *core.Conversation) (core.Conversation, error) {
	if known != nil && known.ID == run.ConversationID {
		return *known, nil
	}
	conv, err := s.cfg.Store.Conversation(ctx, run.ConversationID)
	if err != nil {
		return core.Conversation{}, fmt.Errorf("loading conversation: %w", err)
	}
	return conv, nil
}

// prepare loads the conversation and its history and finds its adapter; a
// cron turn first stores its trigger event.
func (s *speaker) prepare(ctx context.Context, run *core.Run, known *core.Conversation) (*core.Turn, core.Adapter, error) {
	conv, err := s.conversation(ctx, run, known)
	if err != nil {
		return nil, nil, err
	}
	var job *core.Job
	if run.JobID != nil {
		j, err := s.cfg.Store.Job(ctx, *run.JobID)
		if err != nil {
			return nil, nil, fmt.Errorf("loading job: %w", err)
		}
		job = &j
	}
	var cron *core.CronTurn
	if run.Kind == core.RunCronTurn && job != nil {
		if cron, conv, err = s.startCron(ctx, run, job, conv); err != nil {
			return nil, nil, err
		}
		if cron == nil {
			job = nil // cancelled: the user's message is answered alone
		}
	}
	adapter, ok := s.cfg.Outbox.Adapter(conv.Platform)
	if !ok {
		return nil, nil, fmt.Errorf("no adapter enabled for platform %s", conv.Platform)
	}
	if run.Kind == core.RunUserTurn && s.cfg.Limits != nil {
		// Planned before the user reached a daily limit (bot.limits): no
		// model call now. A continuation or a follow-up is not stopped
		// half way.
		now := s.cfg.Clock.Now()
		limit, err := s.cfg.Limits.LimitReached(ctx, conv, now)
		if err != nil {
			return nil, nil, fmt.Errorf("checking per-user limits: %w", err)
		}
		if limit != "" {
			s.cfg.Limits.TellLimit(ctx, conv, limit, now)
			return nil, nil, skipRun{"skipped: the per-user limit " + limit + " is reached"}
		}
	}
	history, err := s.cfg.History.Window(ctx, s.cfg.Store, conv)
	if err != nil {
		return nil, nil, fmt.Errorf("loading history: %w", err)
	}
	t := &core.Turn{
		Conversation:  conv,
		PlatformTitle: core.PlatformTitle(adapter),
		Run:           *run,
		History:       history,
		Now:           s.cfg.Clock.Now(),
		Location:      core.LocationOf(conv, s.cfg.Location),
		Job:           job,
		Cron:          cron,
		React:         reactor(adapter, conv, history),
	}
	if rec := turnRecord(conv, history); rec != nil {
		if t.Record, err = s.prompts.sessionRecord(ctx, *rec); err != nil {
			return nil, nil, fmt.Errorf("loading session record: %w", err)
		}
	}
	return t, adapter, nil
}

// generate asks the model, processes its output and delivers the reply
// (and, when it asked to say more, one continuation). It returns the
// outcome for observers and the completion to store.
func (s *speaker) generate(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) (core.Outcome, core.RunCompletion) {
	o, c, silent := s.speak(ctx, log, t, a)
	c.JobOutcome = s.jobOutcome(t, c, silent)
	return o, c
}

// speak asks the model and delivers what it says: the reply, a chosen
// silence, a cron turn's "nothing to report", or the failure notice. It
// reports whether the turn chose silence.
func (s *speaker) speak(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) (core.Outcome, core.RunCompletion, bool) {
	ask, record, err := s.prompts.build(ctx, log, t, a)
	if err != nil {
		o, c := s.fail(ctx, log, t, a, err, record)
		return o, c, false
	}
	voice := voicer{s.cfg.Voice}.wanted(t, a)
	var g *outbox.Grower
	if !voice {
		g = s.grow(ctx, t, a)
	}
	res, err := s.callModel(ctx, llm.Request{Messages: ask.prompt, Tools: ask.tools, MaxToolRounds: s.cfg.MaxToolRounds,
		OnPartial: g.OnRaw()})
	record.ToolCalls = toolRecords(res.ToolCalls)
	record.Rounds = res.Rounds
	failed := func(cause error) (core.Outcome, core.RunCompletion, bool) {
		g.Abandon(ctx)
		o, c := s.fail(ctx, log, t, a, cause, record)
		addUsage(&c, res)
		return o, c, false
	}
	if err != nil {
		return failed(err)
	}
	reply, ans, err := s.answer(ctx, t, res, &record)
	if err != nil {
		return failed(err)
	}
	c := core.RunCompletion{Status: core.RunSucceeded, Record: record}
	addUsage(&c, res)
	reply, ans = s.keepPromise(ctx, log, t, ask, res, reply, ans, &c)
	o := core.Outcome{Status: core.RunSucceeded, Usage: res.Usage}
	s.followUp(log, t, reply, &c)
	if reply.Silent {
		g.Abandon(ctx)
		return s.silence(ctx, log, t, a, o, c)
	}
	if stopped(ctx) {
		// The user wrote meanwhile (restart): this answer is stale.
		return failed(context.Cause(ctx))
	}
	msg := s.replyMessage(t, reply)
	if len(t.Files) > 0 {
		msg.AttachFiles(t.Files)
	}
	if voice {
		voicer{s.cfg.Voice}.speak(ctx, log, msg)
	}
	if err := s.courier.deliver(ctx, g.Via(a), t, msg); err != nil {
		g.Abandon(ctx) // when the send never began (no send slot); else a no-op
		if stopped(ctx) && len(msg.PlatformMessageID) == 0 {
			// Stopped mid-send and nothing reached the user: as if the
			// answer had never been made, but for its stored row.
			o, c, silent := failed(context.Cause(ctx))
			if msg.ID != 0 {
				outbox.Dropped(msg, context.Cause(ctx))
				c.Messages = append(c.Messages, msg)
			}
			return o, c, silent
		}
		log.Error("sending reply", "err", err)
		c.Status, c.Error = core.RunFailed, fmt.Sprintf("sending reply: %v", err)
		o.Status, o.Err = core.RunFailed, err
		c.Messages = []*core.Message{msg}
		o.Reply = msg
		return o, c, false
	}
	if len(msg.Metadata) == 0 {
		msg.Metadata = nil
	}
	c.Messages = []*core.Message{msg}
	o.Reply = msg
	s.ask(ctx, log, t, a, &c)
	if reply.Continue && !t.Continuation {
		s.goOn(ctx, log, t, a, ask, msg, ans, &c)
	}
	return o, c, false
}

// grow starts the reply growing on a's platform while the model writes
// it (bot.streaming), nil when it is sent whole: a user turn's or a
// continuation's reply, not a cron turn's (whose answer may be "nothing
// to report", which must not flash).
func (s *speaker) grow(ctx context.Context, t *core.Turn, a core.Adapter) *outbox.Grower {
	if t.Cron != nil {
		return nil
	}
	msg := s.replyMessage(t, &core.Reply{})
	note := func(ctx context.Context, ids []string) error {
		return s.cfg.Store.NoteGrown(ctx, t.Run.ID, s.cfg.Owner, ids)
	}
	return s.cfg.Outbox.Grow(ctx, a, outbox.OutboundOf(t.Conversation, *msg, fmt.Sprintf("run-%d-stream", t.Run.ID)), note)
}

// answer reads the model's result into the reply to send, noting on
// record what it said; an answer that cannot be sent is an error.
func (s *speaker) answer(ctx context.Context, t *core.Turn, res llm.Result, record *core.RunRecord) (*core.Reply, answer, error) {
	ans := readAnswer(res)
	record.Output, record.Reasoning = ans.text, ans.reasoning
	if stopped(ctx) {
		return nil, ans, context.Cause(ctx)
	}
	if ans.refused != "" {
		return nil, ans, &answerError{ans.refused}
	}
	reply, err := s.processOutput(ctx, t, ans.text)
	if err != nil {
		return nil, ans, err
	}
	record.Notes = reply.Notes
	if q := t.Question; q != nil && !reply.Silent && reply.Text == "" {
		// The model asked and said nothing more: the question is the
		// reply.
		reply.Text, t.Question = q.Text, nil
		if reply.Metadata == nil {
			reply.Metadata = map[string]any{}
		}
		reply.Metadata[core.ChoicesKey] = q.Choices
	}
	if !reply.Silent && reply.Text == "" {
		// Only <SILENCE> is silence: nothing to show is a failure the
		// user hears about.
		return nil, ans, &answerError{emptyAnswer(ans, res.Content)}
	}
	if ans.cut && !reply.Silent {
		// Cut at llm.max_tokens: what came is sent, marked, and the
		// model is asked once to go on.
		reply.Text += cutMark
		reply.Continue = true
		record.Notes = append(record.Notes, "the answer was cut at llm.max_tokens (finish_reason length); asked the model to go on")
	}
	return reply, ans, nil
}

// silence ends a turn that chose to say nothing: kept, undelivered, so
// that the next turn knows; a cron turn tells the user it ran all the
// same.
func (s *speaker) silence(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, o core.Outcome, c core.RunCompletion) (core.Outcome, core.RunCompletion, bool) {
	if t.Cron != nil {
		// A cron turn never ends unseen.
		msg := s.cronNothingToReport(ctx, log, t, a)
		c.Messages = []*core.Message{msg}
		o.Reply = msg
		return o, c, false
	}
	log.Debug("turn ended silent")
	c.Messages = []*core.Message{{
		ConversationID:  t.Conversation.ID,
		Role:            core.RoleAssistant,
		Source:          sourceFor(t.Run.Kind),
		SessionRecordID: recordID(t),
		Metadata:        markAnswered(map[string]any{"silent": true}, t),
	}}
	return o, c, true
}

// goOn makes the one continuation of a delivered reply that asked to say
// more (or was cut at llm.max_tokens), once the reply's state is stored.
func (s *speaker) goOn(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, ask request, msg *core.Message, ans answer, c *core.RunCompletion) {
	from := continued{said: msg.Content, nudge: s.cfg.ContinueNudge}
	if ans.cut {
		// The model goes on from exactly what it wrote.
		from = continued{said: ans.text, nudge: DefaultLengthNudge}
	}
	// The reply's state is stored before the model is asked again: a
	// crash meanwhile must not send it twice.
	if msg.ID != 0 {
		if err := s.cfg.Store.SettleDelivery(context.WithoutCancel(ctx), *msg); err != nil {
			log.Error("recording the reply's delivery", "err", err)
		} else {
			s.courier.releaseDoubt(t.Run.ID)
		}
	}
	if more := s.continueTurn(ctx, log, t, a, ask.prompt, ask.tools, from, c); more != nil {
		c.Messages = append(c.Messages, more)
	}
}

// callModel runs one model call of a turn and reports it to the metrics.
func (s *speaker) callModel(ctx context.Context, req llm.Request) (llm.Result, error) {
	start := time.Now()
	res, err := s.cfg.LLM.Run(ctx, req)
	s.cfg.Metrics.ModelCalled(time.Since(start), res.Usage, err)
	return res, err
}

// processOutput runs the output processors (control tokens) over the
// model's text, its reasoning already out. Whatever they did, no control
// token or token-like text is left in the reply: with the control_tokens
// plugin disabled the core strips them and nothing acts on them.
func (s *speaker) processOutput(ctx context.Context, t *core.Turn, text string) (*core.Reply, error) {
	reply := &core.Reply{Text: text, Metadata: map[string]any{}}
	for _, p := range s.cfg.Plugins {
		op, ok := p.(core.OutputProcessor)
		if !ok {
			continue
		}
		if err := op.ProcessOutput(ctx, t, reply); err != nil {
			return nil, fmt.Errorf("plugin %s processing output: %w", p.Name(), err)
		}
	}
	if modeltext.ContainsTokenLike(reply.Text) {
		parsed := modeltext.ParseTokens(reply.Text)
		reply.Text = parsed.Text
		reply.Notes = append(reply.Notes, parsed.Notes...)
	}
	reply.Text = strings.TrimSpace(reply.Text)
	return reply, nil
}

// replyMessage is the assistant message a reply is sent and stored as.
func (s *speaker) replyMessage(t *core.Turn, r *core.Reply) *core.Message {
	meta := r.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	markAnswered(meta, t)
	return &core.Message{
		ConversationID:  t.Conversation.ID,
		Role:            core.RoleAssistant,
		Content:         r.Text,
		Source:          sourceFor(t.Run.Kind),
		SessionRecordID: recordID(t),
		Metadata:        meta,
	}
}

// followUp keeps a reply's request to write first later as a proactive
// job, created with the run's completion. Without a ProactivePolicy plugin
// it is noted and dropped.
func (s *speaker) followUp(log *slog.Logger, t *core.Turn, r *core.Reply, c *core.RunCompletion) {
	p := r.Proactive
	if p == nil {
		return
	}
	if s.cfg.Proactive == nil || t.Record.ID == 0 {
		c.Record.Notes = append(c.Record.Notes, "ignored a follow-up request: proactive messages are off")
		return
	}
	rec := t.Record.ID
	c.Jobs = append(c.Jobs, &core.Job{
		Kind:            core.JobProactive,
		Text:            p.Reason,
		Name:            "follow-up",
		DueAt:           s.cfg.Clock.Now().UTC().Add(p.Delay),
		Origin:          "control_token",
		SessionRecordID: &rec,
	})
	log.Debug("proactive follow-up requested", "delay", p.Delay, "reason", p.Reason)
}

// continueTurn makes the one continuation of a reply that asked to say
// more: the model is called again with its reply and a hidden nudge, and
// what it adds is sent, unless the user wrote meanwhile (the conversation
// moved on) or it has nothing more to say.
// continued is what a continuation goes on from: the reply as the model
// said it and the hidden nudge that asks for more.
type continued struct {
	said, nudge string
}

func (s *speaker) continueTurn(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, prompt []llm.Message, tools []llm.Tool, from continued, c *core.RunCompletion) *core.Message {
	rec := &core.ContinuationRecord{Nudge: from.nudge}
	c.Record.Continuation = rec
	msgs := make([]llm.Message, 0, len(prompt)+2)
	msgs = append(msgs, prompt...)
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: from.said}, llm.Message{Role: llm.RoleUser, Content: from.nudge})
	// Files the continuation's tools make go with what it adds: the reply
	// before it has gone with its own.
	filesBefore := len(t.Files)
	res, err := s.callModel(ctx, llm.Request{Messages: msgs, Tools: tools, MaxToolRounds: s.cfg.MaxToolRounds})
	addUsage(c, res)
	ans := readAnswer(res)
	rec.Output, rec.Reasoning, rec.ToolCalls = ans.text, ans.reasoning, len(res.ToolCalls)
	if err != nil {
		rec.Dropped = "the model failed: " + err.Error()
		log.Warn("continuation failed; the reply stands alone", "err", err)
		return nil
	}
	if ans.refused != "" {
		rec.Dropped = ans.refused
		log.Warn("continuation refused; the reply stands alone", "why", ans.refused)
		return nil
	}
	ct := *t
	ct.Continuation = true
	reply, err := s.processOutput(ctx, &ct, ans.text)
	if err != nil {
		rec.Dropped = err.Error()
		return nil
	}
	c.Record.Notes = append(c.Record.Notes, reply.Notes...)
	s.followUp(log, t, reply, c)
	newFiles := t.Files[filesBefore:]
	if reply.Silent || (reply.Text == "" && len(newFiles) == 0) {
		rec.Dropped = "nothing more to say"
		return nil
	}
	if ans.cut {
		// Cut again: sent as it is, marked; there is no third call.
		reply.Text += cutMark
		c.Record.Notes = append(c.Record.Notes, "the continuation was cut at llm.max_tokens too")
	}
	moved, err := s.movedOn(ctx, t.Conversation, t.Run.ID)
	switch {
	case err != nil:
		rec.Dropped = "could not check the conversation: " + err.Error()
		return nil
	case moved || stopped(ctx):
		rec.Dropped = "the user wrote meanwhile"
		return nil
	}
	msg := s.replyMessage(t, reply)
	if msg.Metadata == nil {
		msg.Metadata = map[string]any{}
	}
	msg.Metadata["continuation"] = true
	if len(newFiles) > 0 {
		msg.AttachFiles(newFiles)
	}
	if err := s.courier.deliver(ctx, a, t, msg); err != nil {
		log.Error("sending continuation", "err", err)
		if len(msg.PlatformMessageID) == 0 && stopped(ctx) {
			rec.Dropped = "stopped while sending"
			if msg.ID == 0 {
				return nil
			}
			outbox.Dropped(msg, context.Cause(ctx))
		}
	}
	return msg
}

// turnRecord is the session record a turn belongs to: the conversation's
// current one or, when /new has just ended it and no message has started
// the next, the record of the newest message the turn answers.
func turnRecord(conv core.Conversation, history []core.Message) *int64 {
	if conv.CurrentRecordID != nil {
		return conv.CurrentRecordID
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].SessionRecordID != nil {
			return history[i].SessionRecordID
		}
	}
	return nil
}

// movedOn reports whether anything but chat commands and run's own
// messages was said in conv since the turn read it: a continuation then
// no longer fits.
func (s *speaker) movedOn(ctx context.Context, conv core.Conversation, run int64) (bool, error) {
	now, err := s.cfg.Store.Conversation(ctx, conv.ID)
	if err != nil || now.LastSeq == conv.LastSeq {
		return false, err
	}
	since, err := s.cfg.Store.MessagesAfter(ctx, conv.ID, conv.LastSeq, int(now.LastSeq-conv.LastSeq))
	if err != nil {
		return false, err
	}
	for _, m := range since {
		own := m.RunID != nil && *m.RunID == run
		if !isCommandMessage(m) && !own {
			return true, nil
		}
	}
	return false, nil
}

// recordID is the turn's session record id for the messages it stores.
func recordID(t *core.Turn) *int64 {
	if t.Record.ID == 0 {
		return nil
	}
	id := t.Record.ID
	return &id
}

// fail tells the user, in the configured words, that no answer is coming and
// returns a failed completion that keeps the error.
func (s *speaker) fail(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, cause error, rec core.RunRecord) (core.Outcome, core.RunCompletion) {
	if stopped(ctx) {
		// A newer message restarted the turn, or the run is no longer
		// ours: say nothing, the run says why.
		log.Info("turn stopped", "cause", context.Cause(ctx))
		return core.Outcome{Status: core.RunCanceled, Err: context.Cause(ctx)}, core.RunCompletion{Status: core.RunCanceled, Error: "canceled: " + context.Cause(ctx).Error(), Record: rec}
	}
	if s.runCtx.Err() != nil {
		// Shutdown cut the turn short: no notice, the run says why.
		log.Warn("turn interrupted by shutdown", "err", cause)
		c := core.RunCompletion{Status: core.RunCanceled, Error: "interrupted by shutdown: " + cause.Error(), Record: rec}
		if t.Cron == nil {
			return core.Outcome{Status: core.RunCanceled, Err: cause}, c
		}
		// The occurrence is spent and its trigger is in the transcript:
		// the user still hears that it did not run (the adapters stop
		// after the dispatcher).
		msg := s.failureNotice(ctx, log, t, a, cronFailureNote(t), 5*time.Second)
		c.Messages = []*core.Message{msg}
		return core.Outcome{Status: core.RunCanceled, Err: cause, Reply: msg}, c
	}
	log.Error("turn failed", "err", cause)
	c := core.RunCompletion{Status: core.RunFailed, Error: cause.Error(), Record: rec}
	if t.Run.Kind == core.RunProactive || t.Run.Kind == core.RunContinue {
		// Nobody asked: a follow-up that failed says nothing.
		return core.Outcome{Status: core.RunFailed, Err: cause}, c
	}
	text := s.cfg.FailureMessage
	if t.Cron != nil {
		text = cronFailureNote(t)
	}
	msg := s.failureNotice(ctx, log, t, a, text, 30*time.Second)
	c.Messages = []*core.Message{msg}
	return core.Outcome{Status: core.RunFailed, Err: cause, Reply: msg}, c
}

// failureNotice sends text as a notice (kept out of the model's mouth in
// later prompts), within limit even if the turn's own context is done.
func (s *speaker) failureNotice(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, text string, limit time.Duration) *core.Message {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	msg := &core.Message{
		ConversationID:  t.Conversation.ID,
		Role:            core.RoleAssistant,
		Content:         text,
		Source:          core.SourceSystem,
		SessionRecordID: recordID(t),
		Metadata:        map[string]any{"failure_notice": true},
	}
	if err := s.courier.deliver(ctx, a, t, msg); err != nil {
		log.Error("sending failure notice", "err", err)
	}
	return msg
}

func (s *speaker) observe(ctx context.Context, t *core.Turn, o core.Outcome) {
	for _, p := range s.cfg.Plugins {
		if ob, ok := p.(core.TurnObserver); ok {
			ob.TurnFinished(ctx, t, o)
		}
	}
}

func sourceFor(k core.RunKind) core.Source {
	switch k {
	case core.RunCronTurn:
		return core.SourceCronTurn
	case core.RunProactive:
		return core.SourceProactive
	default:
		return core.SourceReply
	}
}

// addUsage adds a model call's tokens to the run's, and names the model
// that answered (the last one, when a continuation asked again).
func addUsage(c *core.RunCompletion, res llm.Result) {
	u := res.Usage
	if res.Model != "" {
		c.Model = res.Model
	}
	c.PromptTokens += u.PromptTokens
	c.CompletionTokens += u.CompletionTokens
	c.TotalTokens += u.TotalTokens
}

func layerNames(ls []core.PromptLayer) string {
	names := make([]string, 0, len(ls))
	for _, l := range ls {
		names = append(names, fmt.Sprintf("L%d:%s", l.Level, l.Name))
	}
	return strings.Join(names, ",")
}

func recordMessages(ms []llm.Message) []core.RecordMessage {
	out := make([]core.RecordMessage, len(ms))
	for i, m := range ms {
		out[i] = core.RecordMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	}
	return out
}

func toolRecords(calls []llm.ToolCallResult) []core.ToolCallRecord {
	if len(calls) == 0 {
		return nil
	}
	out := make([]core.ToolCallRecord, len(calls))
	for i, c := range calls {
		out[i] = core.ToolCallRecord{ID: c.Call.ID, Name: c.Call.Name, Arguments: c.Call.Arguments, Result: c.Result, IsError: c.IsError}
	}
	return out
}

// stopped reports whether the turn was told to stop (restart, taken over).
func stopped(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errStopRequested)
}

// ask sends the question the model asked with offer_choices during the
// turn (core.Turn.Question), after its reply: a message of its own with a
// button per choice, recorded before it is sent like the reply. A
// failure is logged: the reply went out, the user can still answer in
// words.
func (s *speaker) ask(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, c *core.RunCompletion) {
	q := t.Question
	if q == nil {
		return
	}
	t.Question = nil
	msg := &core.Message{
		ConversationID:  t.Conversation.ID,
		Role:            core.RoleAssistant,
		Content:         q.Text,
		Source:          sourceFor(t.Run.Kind),
		SessionRecordID: recordID(t),
		Metadata:        map[string]any{core.ChoicesKey: q.Choices},
	}
	if err := s.courier.deliver(ctx, a, t, msg); err != nil {
		log.Error("sending the question the model asked", "err", err)
	}
	c.Messages = append(c.Messages, msg)
}

// reactor is how the turn's tool react reacts to the user's latest
// message, nil when the platform has no reactions or the message no
// platform id.
func reactor(a core.Adapter, conv core.Conversation, history []core.Message) func(context.Context, string) error {
	r, ok := a.(core.Reactor)
	if !ok {
		return nil
	}
	for i := len(history) - 1; i >= 0; i-- {
		// A tap's id ("tap:…") names no message to react to.
		if m := history[i]; m.Role == core.RoleUser && m.PlatformMessageID != "" && !m.Deleted() && !strings.HasPrefix(m.PlatformMessageID, "tap:") {
			id := m.PlatformMessageID
			return func(ctx context.Context, emoji string) error {
				return r.React(ctx, conv.ChannelThreadID, id, emoji)
			}
		}
	}
	return nil
}
