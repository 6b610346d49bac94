package turns

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine/outbox"
)

// prompter builds what a turn asks the model: the prompt stack (kept per
// session record), the history window, the user's files opened (kept per
// session) and the plugins' tools.
type prompter struct {
	cfg *Config
	log *slog.Logger
	// media keeps opened files (images, documents' text) for the later
	// turns of a session; records the session records' decoded stacks.
	media   *mediaCache
	records *recordCache
}

func newPrompter(cfg *Config) *prompter {
	return &prompter{cfg: cfg, log: cfg.Logger, media: newMediaCache(64 << 20), records: newRecordCache(cfg.RecordCacheSize)}
}

// renderPrompt writes the system prompt followed by the messages (L5); it
// also reports how many messages at the end came from the history.
func renderPrompt(system string, history []core.Message, files map[int64]userMedia) ([]llm.Message, int) {
	msgs := make([]llm.Message, 0, len(history)+1)
	if system != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: system})
	}
	head := len(msgs)
	var asked []string   // the choices of the question the user answers next
	var reacted []string // the user's reactions to the bot's messages since their last message
	for _, m := range history {
		switch m.Role {
		case core.RoleUser:
			if m.Deleted() || m.Metadata[access.UnpairedKey] == true {
				// Its user took it back; or wrote it before an owner let
				// them in, and it is not answered in bulk afterwards.
				continue
			}
			um, ok := files[m.ID]
			if !ok {
				msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: withReactions(reacted, chosen(userContent(m), asked))})
				asked, reacted = nil, nil
				continue
			}
			asked = nil
			um.text = withReactions(reacted, userContent(core.Message{Content: um.text, Metadata: m.Metadata}))
			reacted = nil
			if len(um.images) == 0 {
				msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: um.text})
				continue
			}
			parts := make([]llm.Part, 0, len(um.images)+1)
			parts = append(parts, llm.Part{Text: um.text})
			for _, img := range um.images {
				parts = append(parts, llm.Part{ImageURL: img})
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Parts: parts})
		case core.RoleAssistant:
			switch {
			case m.Delivery == core.DeliveryDropped:
				continue // never reached the user
			case m.Metadata["failure_notice"] == true || m.Metadata["busy_notice"] == true || m.Metadata["limit_notice"] != nil ||
				m.Metadata[access.NoticeKey] == true:
				continue // the model did not say it; keep it out of its mouth
			case m.Metadata["silent"] == true || m.Metadata["status_notice"] != nil:
				// What the model answered when it chose to say nothing.
				msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: core.SilenceToken})
			default:
				reacted = append(reacted, reactionNotes(m)...)
				asked = core.QuestionChoices(m)
				msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: withChoices(m.Content, asked)})
			}
		case core.RoleSystem:
			msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: m.Content})
		}
	}
	return msgs, len(msgs) - head
}

// userContent is a user message as the model sees it, with a note when the
// core cut it.
func userContent(m core.Message) string {
	n, ok := m.Metadata["truncated_from_bytes"]
	if !ok {
		return m.Content
	}
	return fmt.Sprintf("%s\n\n[Note: this message was cut to its first %d bytes; the user sent %v bytes.]", m.Content, len(m.Content), n)
}

// request is what a turn asks the model: the prompt and the tools.
type request struct {
	prompt []llm.Message
	tools  []llm.Tool
}

// build makes the turn's request: the window of its history (t.History
// becomes it), the session's stack with the plugins' per-turn notes, the
// user's files opened, a cron turn's execution prompt, a follow-up's
// hidden reason, the plugins' tools; and the run record of what was
// asked. An error comes with the record as far as it got.
func (p *prompter) build(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) (request, core.RunRecord, error) {
	t.History = p.window(t)
	layers, err := p.stack(ctx, t)
	if err != nil {
		return request{}, core.RunRecord{}, fmt.Errorf("building prompt: %w", err)
	}
	notes := p.notes(ctx, t)
	system := core.SystemPromptWith(layers, notes)
	history := commandsFirst(t.History)
	if t.Cron != nil {
		history = withExecutionPrompt(history, t.Cron)
	}
	files := p.openFiles(ctx, log, t, a)
	prompt, historyLen := renderPrompt(system, history, files)
	record := core.RunRecord{PromptID: "stack", PromptVersion: layerNames(layers), Prompt: recordMessages(prompt[:len(prompt)-historyLen]), TurnNotes: notes}
	if n := len(t.History); n > 0 {
		record.History = &core.HistoryRef{FromSeq: t.History[0].Seq, ToSeq: t.History[n-1].Seq, Count: historyLen}
	}
	if t.Cron != nil {
		tr := t.Cron.Template
		record.Template = &tr
		if len(tr.Errors) > 0 {
			return request{}, record, fmt.Errorf("rendering the execution prompt: %s", tr.Errors[0])
		}
	}
	if t.Run.Kind == core.RunProactive && p.cfg.Proactive != nil {
		// The follow-up's reason, hidden from the transcript.
		nudge := p.cfg.Proactive.ProactiveNudge(t)
		prompt = append(prompt, llm.Message{Role: llm.RoleUser, Content: nudge})
		record.Prompt = append(record.Prompt, core.RecordMessage{Role: llm.RoleUser, Content: nudge})
	}
	tools, err := p.tools(ctx, t)
	if err != nil {
		return request{}, record, fmt.Errorf("collecting tools: %w", err)
	}
	return request{prompt: prompt, tools: tools}, record, nil
}

// notes are the plugins' per-turn notes (the user's local time). They end
// the system message: after the frozen stack, so a provider's prefix
// cache still covers the stack, and not as a system message amid the
// conversation, which strict chat templates refuse.
func (p *prompter) notes(ctx context.Context, t *core.Turn) []string {
	var notes []string
	for _, pl := range p.cfg.Plugins {
		if n, ok := pl.(core.TurnNoter); ok {
			if note := n.TurnNote(ctx, t); note != "" {
				notes = append(notes, note)
			}
		}
	}
	return notes
}

// tools collects the tools of every ToolProvider; a later tool with a name
// already taken is dropped with a warning.
func (p *prompter) tools(ctx context.Context, t *core.Turn) ([]llm.Tool, error) {
	// No map to find duplicates: a turn offers a few dozen tools, and
	// what it allocates here is held for the whole model call.
	var out []llm.Tool
	var owners []string
	for _, pl := range p.cfg.Plugins {
		tp, ok := pl.(core.ToolProvider)
		if !ok {
			continue
		}
		ts, err := tp.Tools(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", pl.Name(), err)
		}
	next:
		for _, tool := range ts {
			for i, kept := range out {
				if kept.Name == tool.Name {
					p.log.Warn("dropping a duplicate tool", "tool", tool.Name, "plugin", pl.Name(), "kept_from", owners[i])
					continue next
				}
			}
			out = append(out, tool)
			owners = append(owners, pl.Name())
		}
	}
	return out, nil
}

// withChoices is a question as the model reads it back: its text and the
// buttons the user saw.
func withChoices(text string, labels []string) string {
	if len(labels) == 0 {
		return text
	}
	return text + "\n[buttons: " + strings.Join(labels, " | ") + "]"
}

// chosen is a user's answer to a question with choices as the model
// reads it: a choice typed by its number (a platform without buttons
// shows numbered lines) reads as the choice itself, as a tap does.
func chosen(text string, labels []string) string {
	if i, ok := outbox.ChoiceTyped(text, labels); ok {
		return labels[i]
	}
	return text
}

// quoteLen bounds the quote of a message a reaction is on, in characters.
const quoteLen = 60

// reactionNotes say how the user reacted to m, the bot's message: the
// emoji and a short quote, one note a reaction.
func reactionNotes(m core.Message) []string {
	rs := core.MessageReactions(m)
	if len(rs) == 0 {
		return nil
	}
	quote := []rune(strings.Join(strings.Fields(m.Content), " "))
	q := string(quote)
	if len(quote) > quoteLen {
		q = string(quote[:quoteLen]) + "…"
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = "[They reacted " + r + " to your message \u201c" + q + "\u201d]"
	}
	return out
}

// withReactions is a user's message as the model reads it, after the
// reactions they gave since their last message.
func withReactions(notes []string, text string) string {
	if len(notes) == 0 {
		return text
	}
	return strings.Join(notes, "\n") + "\n" + text
}
