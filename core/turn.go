package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/parleybot/parley/core/llm"
)

// execute runs one claimed run to its end and records the outcome; it
// returns the next run it claimed while recording, if any. Nothing here may
// crash the process: every failure ends as a failed run.
func (d *Dispatcher) execute(ctx context.Context, run *Run) (next *Run) {
	log := d.log.With("run", run.ID, "conversation", run.ConversationID, "kind", run.Kind)
	ctx, cancel := context.WithTimeout(ctx, d.cfg.TurnTimeout)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	untrack := d.track(run.ID, stop)
	defer untrack()
	defer func() {
		if p := recover(); p != nil {
			log.Error("turn panicked", "panic", p)
			next, _ = d.complete(ctx, log, run, nil, RunCompletion{Status: RunFailed, Error: fmt.Sprintf("panic: %v", p)})
		}
	}()

	turn, adapter, err := d.prepare(ctx, run)
	if err != nil {
		log.Error("preparing turn", "err", err)
		next, _ = d.complete(ctx, log, run, nil, RunCompletion{Status: RunFailed, Error: err.Error()})
		return next
	}
	stopTyping := d.typing(ctx, adapter, turn.Conversation.ChannelThreadID)
	outcome, completion := d.generate(ctx, log, turn, adapter)
	stopTyping()
	next, ok := d.complete(ctx, log, run, &turn.Conversation, completion)
	if ok {
		d.observe(ctx, turn, outcome)
	}
	return next
}

// prepare loads the conversation and its history and finds its adapter.
func (d *Dispatcher) prepare(ctx context.Context, run *Run) (*Turn, Adapter, error) {
	conv, err := d.cfg.Store.Conversation(ctx, run.ConversationID)
	if err != nil {
		return nil, nil, fmt.Errorf("loading conversation: %w", err)
	}
	adapter, ok := d.adapters[conv.Platform]
	if !ok {
		return nil, nil, fmt.Errorf("no adapter enabled for platform %s", conv.Platform)
	}
	history, err := d.history.window(ctx, d.cfg.Store, conv)
	if err != nil {
		return nil, nil, fmt.Errorf("loading history: %w", err)
	}
	loc := d.cfg.Location
	if conv.TimeZone != "" {
		if l, err := time.LoadLocation(conv.TimeZone); err == nil {
			loc = l
		}
	}
	return &Turn{
		Conversation: conv,
		Run:          *run,
		History:      history,
		Now:          d.cfg.Clock.Now(),
		Location:     loc,
	}, adapter, nil
}

// generate asks the model, processes its output and delivers the reply. It
// returns the outcome for observers and the completion to store.
func (d *Dispatcher) generate(ctx context.Context, log *slog.Logger, t *Turn, a Adapter) (Outcome, RunCompletion) {
	prompt, historyLen, layers, err := d.renderPrompt(ctx, t)
	if err != nil {
		return d.fail(ctx, log, t, a, fmt.Errorf("building prompt: %w", err), RunRecord{})
	}
	record := RunRecord{PromptID: "stack", PromptVersion: layerNames(layers), Prompt: recordMessages(prompt[:len(prompt)-historyLen])}
	if n := len(t.History); n > 0 {
		record.History = &HistoryRef{FromSeq: t.History[0].Seq, ToSeq: t.History[n-1].Seq, Count: historyLen}
	}
	tools, err := d.tools(ctx, t)
	if err != nil {
		return d.fail(ctx, log, t, a, fmt.Errorf("collecting tools: %w", err), record)
	}
	res, err := d.cfg.LLM.Run(ctx, llm.Request{Messages: prompt, Tools: tools, MaxToolRounds: d.cfg.MaxToolRounds})
	record.ToolCalls = toolRecords(res.ToolCalls)
	record.Rounds = res.Rounds
	if err != nil {
		o, c := d.fail(ctx, log, t, a, err, record)
		addUsage(&c, res.Usage)
		return o, c
	}
	record.Output = res.Content
	if stopped(ctx) {
		o, c := d.fail(ctx, log, t, a, context.Cause(ctx), record)
		addUsage(&c, res.Usage)
		return o, c
	}
	reply := &Reply{Text: res.Content, Metadata: map[string]any{}}
	for _, p := range d.cfg.Plugins {
		op, ok := p.(OutputProcessor)
		if !ok {
			continue
		}
		if err := op.ProcessOutput(ctx, t, reply); err != nil {
			o, c := d.fail(ctx, log, t, a, fmt.Errorf("plugin %s processing output: %w", p.Name(), err), record)
			addUsage(&c, res.Usage)
			return o, c
		}
	}
	c := RunCompletion{Status: RunSucceeded, Record: record}
	addUsage(&c, res.Usage)
	o := Outcome{Status: RunSucceeded, Usage: res.Usage}
	if reply.Silent || strings.TrimSpace(reply.Text) == "" {
		log.Debug("turn ended silent")
		return o, c
	}
	if stopped(ctx) {
		// The user wrote meanwhile (restart): this answer is stale.
		o, c := d.fail(ctx, log, t, a, context.Cause(ctx), record)
		addUsage(&c, res.Usage)
		return o, c
	}
	msg := &Message{
		ConversationID: t.Conversation.ID,
		Role:           RoleAssistant,
		Content:        reply.Text,
		Source:         sourceFor(t.Run.Kind),
		Metadata:       reply.Metadata,
	}
	if err := d.deliver(ctx, a, t, msg); err != nil {
		if stopped(ctx) && len(msg.PlatformMessageID) == 0 {
			// Stopped mid-send and nothing reached the user: as if the
			// answer had never been made.
			o, c := d.fail(ctx, log, t, a, context.Cause(ctx), c.Record)
			addUsage(&c, res.Usage)
			return o, c
		}
		log.Error("sending reply", "err", err)
		c.Status, c.Error = RunFailed, fmt.Sprintf("sending reply: %v", err)
		o.Status, o.Err = RunFailed, err
	}
	c.Messages = []*Message{msg}
	o.Reply = msg
	if len(msg.Metadata) == 0 {
		msg.Metadata = nil
	}
	return o, c
}

// fail tells the user, in the configured words, that no answer is coming and
// returns a failed completion that keeps the error.
func (d *Dispatcher) fail(ctx context.Context, log *slog.Logger, t *Turn, a Adapter, cause error, rec RunRecord) (Outcome, RunCompletion) {
	if stopped(ctx) {
		// A newer message restarted the turn, or the run is no longer
		// ours: say nothing, the run says why.
		log.Info("turn stopped", "cause", context.Cause(ctx))
		return Outcome{Status: RunCanceled, Err: context.Cause(ctx)}, RunCompletion{Status: RunCanceled, Error: "canceled: " + context.Cause(ctx).Error(), Record: rec}
	}
	if d.runCtx.Err() != nil {
		// Shutdown cut the turn short: no notice, the run says why.
		log.Warn("turn interrupted by shutdown", "err", cause)
		return Outcome{Status: RunCanceled, Err: cause}, RunCompletion{Status: RunCanceled, Error: "interrupted by shutdown: " + cause.Error(), Record: rec}
	}
	log.Error("turn failed", "err", cause)
	c := RunCompletion{Status: RunFailed, Error: cause.Error(), Record: rec}
	// The turn's own deadline may be what failed it; the notice still goes out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	msg := &Message{
		ConversationID: t.Conversation.ID,
		Role:           RoleAssistant,
		Content:        d.cfg.FailureMessage,
		Source:         SourceSystem,
		Metadata:       map[string]any{"failure_notice": true},
	}
	if err := d.deliver(ctx, a, t, msg); err != nil {
		log.Error("sending failure notice", "err", err)
	}
	c.Messages = []*Message{msg}
	return Outcome{Status: RunFailed, Err: cause, Reply: msg}, c
}

// deliver sends msg through the adapter and notes the platform ids on it; an
// undelivered message is kept with the error so nothing is lost.
func (d *Dispatcher) deliver(ctx context.Context, a Adapter, t *Turn, msg *Message) error {
	res, err := a.Send(ctx, OutboundMessage{
		ConversationID:  t.Conversation.ID,
		ChannelThreadID: t.Conversation.ChannelThreadID,
		ChannelUserID:   t.Conversation.ChannelUserID,
		Text:            msg.Content,
		IdempotencyKey:  fmt.Sprintf("run-%d", t.Run.ID),
	})
	if msg.Metadata == nil {
		msg.Metadata = map[string]any{}
	}
	if len(res.PlatformMessageIDs) > 0 {
		msg.PlatformMessageID = res.PlatformMessageIDs[0]
		if len(res.PlatformMessageIDs) > 1 {
			msg.Metadata["platform_message_ids"] = res.PlatformMessageIDs
		}
	}
	if err != nil {
		msg.Metadata["undelivered"] = err.Error()
		return err
	}
	return nil
}

// renderPrompt builds the system prompt from the plugins' layers, in level
// order, followed by the conversation history; it also reports how many
// messages at the end came from the history.
func (d *Dispatcher) renderPrompt(ctx context.Context, t *Turn) ([]llm.Message, int, []PromptLayer, error) {
	var layers []PromptLayer
	for _, p := range d.cfg.Plugins {
		pc, ok := p.(PromptContributor)
		if !ok {
			continue
		}
		ls, err := pc.PromptLayers(ctx, t)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("plugin %s: %w", p.Name(), err)
		}
		layers = append(layers, ls...)
	}
	sort.SliceStable(layers, func(i, j int) bool { return layers[i].Level < layers[j].Level })
	msgs := make([]llm.Message, 0, len(t.History)+1)
	var sys strings.Builder
	for _, l := range layers {
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		if sys.Len() > 0 {
			sys.WriteString("\n\n")
		}
		sys.WriteString(l.Text)
	}
	if sys.Len() > 0 {
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: sys.String()})
	}
	head := len(msgs)
	for _, m := range t.History {
		switch m.Role {
		case RoleUser:
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: userContent(m)})
		case RoleAssistant:
			if m.Metadata["failure_notice"] == true || m.Metadata["busy_notice"] == true {
				continue // the model did not say it; keep it out of its mouth
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: m.Content})
		case RoleSystem:
			msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: m.Content})
		}
	}
	return msgs, len(msgs) - head, layers, nil
}

// userContent is a user message as the model sees it, with a note when the
// core cut it.
func userContent(m Message) string {
	n, ok := m.Metadata["truncated_from_bytes"]
	if !ok {
		return m.Content
	}
	return fmt.Sprintf("%s\n\n[Note: this message was cut to its first %d bytes; the user sent %v bytes.]", m.Content, len(m.Content), n)
}

// tools collects the tools of every ToolProvider; a later tool with a name
// already taken is dropped with a warning.
func (d *Dispatcher) tools(ctx context.Context, t *Turn) ([]llm.Tool, error) {
	var out []llm.Tool
	seen := map[string]string{}
	for _, p := range d.cfg.Plugins {
		tp, ok := p.(ToolProvider)
		if !ok {
			continue
		}
		ts, err := tp.Tools(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", p.Name(), err)
		}
		for _, tool := range ts {
			if owner, dup := seen[tool.Name]; dup {
				d.log.Warn("dropping a duplicate tool", "tool", tool.Name, "plugin", p.Name(), "kept_from", owner)
				continue
			}
			seen[tool.Name] = p.Name()
			out = append(out, tool)
		}
	}
	return out, nil
}

// complete stores the completion and, unless the dispatcher is stopping,
// claims the next due run in the same transaction. It reports whether the
// run was still ours. conv, when known, gets the stored messages in its
// history cache.
func (d *Dispatcher) complete(ctx context.Context, log *slog.Logger, run *Run, conv *Conversation, c RunCompletion) (*Run, bool) {
	c.Now = d.cfg.Clock.Now().UTC()
	// Record the outcome even if the turn's context has run out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var next *Run
	var err error
	if d.isStopping() {
		err = d.cfg.Store.CompleteRun(ctx, run.ID, d.cfg.Owner, c)
	} else {
		next, err = d.cfg.Store.CompleteRunAndClaim(ctx, run.ID, d.cfg.Owner, c, d.platforms...)
	}
	if errors.Is(err, ErrLostRun) {
		log.Warn("run was taken from this worker before it finished; outcome dropped")
		return nil, false
	}
	if err != nil {
		log.Error("recording run outcome", "err", err)
		return nil, false
	}
	if conv != nil && len(c.Messages) > 0 {
		stored := make([]Message, len(c.Messages))
		for i, m := range c.Messages {
			stored[i] = *m
		}
		d.history.appended(*conv, stored...)
	}
	log.Debug("run finished", "status", c.Status)
	return next, true
}

func (d *Dispatcher) observe(ctx context.Context, t *Turn, o Outcome) {
	for _, p := range d.cfg.Plugins {
		if ob, ok := p.(TurnObserver); ok {
			ob.TurnFinished(ctx, t, o)
		}
	}
}

// typing shows the typing indicator, refreshed, until the returned func is
// called. Adapters without the capability show nothing.
func (d *Dispatcher) typing(ctx context.Context, a Adapter, thread string) func() {
	ti, ok := a.(TypingIndicator)
	if !ok {
		return func() {}
	}
	every := d.cfg.TypingInterval
	if r := a.Capabilities().TypingRefresh; r > 0 {
		every = r
	}
	stop := make(chan struct{})
	// A typing call in flight when the turn ends is let finish rather than
	// cancelled: cancelling an HTTP request closes its connection, and the
	// next reply would pay for a new one. Stop waits for the goroutine.
	callCtx := context.WithoutCancel(ctx)
	d.turns.Add(1)
	go func() {
		defer d.turns.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			c, cancel := context.WithTimeout(callCtx, every)
			if err := ti.Typing(c, thread); err != nil {
				d.log.Debug("typing indicator", "err", err)
			}
			cancel()
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(stop) }
}

func sourceFor(k RunKind) Source {
	switch k {
	case RunCronTurn:
		return SourceCronTurn
	case RunProactive:
		return SourceProactive
	default:
		return SourceReply
	}
}

func addUsage(c *RunCompletion, u llm.Usage) {
	c.PromptTokens += u.PromptTokens
	c.CompletionTokens += u.CompletionTokens
	c.TotalTokens += u.TotalTokens
}

func layerNames(ls []PromptLayer) string {
	names := make([]string, 0, len(ls))
	for _, l := range ls {
		names = append(names, fmt.Sprintf("L%d:%s", l.Level, l.Name))
	}
	return strings.Join(names, ",")
}

func recordMessages(ms []llm.Message) []RecordMessage {
	out := make([]RecordMessage, len(ms))
	for i, m := range ms {
		out[i] = RecordMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	}
	return out
}

func toolRecords(calls []llm.ToolCallResult) []ToolCallRecord {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ToolCallRecord, len(calls))
	for i, c := range calls {
		out[i] = ToolCallRecord{ID: c.Call.ID, Name: c.Call.Name, Arguments: c.Call.Arguments, Result: c.Result, IsError: c.IsError}
	}
	return out
}

// stopped reports whether the turn was told to stop (restart, taken over).
func stopped(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errStopRequested)
}
