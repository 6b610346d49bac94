package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

const (
	// recallMinScore is the least cosine similarity to the user's new
	// message for an older message or summary to be recalled: related,
	// not merely on the same day.
	recallMinScore = 0.45
	// recallItems and recallTokens bound what recall adds to the prompt.
	recallItems  = 5
	recallTokens = 400
	// recallTimeout bounds the embedding of the new message: a slow
	// embeddings server costs the turn its recall, never its reply.
	recallTimeout = 3 * time.Second
)

// TurnNote is what memory recalls for this turn: the older messages and
// session summaries nearest in meaning to the user's new message, with
// their dates. It is a note, not a layer, because the stack is kept for
// the whole session while each new message recalls other things; what
// the prompt shows already (the window, the summaries of L4) is left out.
func (p *Plugin) TurnNote(ctx context.Context, t *core.Turn) string {
	text := newUserText(t.History)
	if !p.autoRecall() || text == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, recallTimeout)
	defer cancel()
	near, err := p.meaning.search(ctx, t.Conversation.ID, text, 4*recallItems, recallMinScore)
	if err != nil {
		p.log.Warn("memory: no recall for this turn: the search by meaning failed", "conversation", t.Conversation.ID, "err", err)
		return ""
	}
	shown, err := recordsInStack(ctx, p.store, p.SummariesInPrompt, t, near)
	if err != nil {
		p.log.Warn("memory: no recall for this turn", "conversation", t.Conversation.ID, "err", err)
		return ""
	}
	inWindow := make(map[int64]bool, len(t.History))
	for _, m := range t.History {
		inWindow[m.ID] = true
	}
	loc := t.Location
	if loc == nil {
		loc = time.UTC
	}
	var b strings.Builder
	n, tokens := 0, 0
	for _, r := range near {
		line, ok := recallLine(r, t, inWindow, shown, loc)
		if !ok {
			continue
		}
		if cost := core.EstimateTokens(line); tokens+cost > recallTokens {
			break
		} else {
			tokens += cost
		}
		b.WriteString("\n" + line)
		if n++; n == recallItems {
			break
		}
	}
	if n == 0 {
		return ""
	}
	return "## Related from before\n(what they or you said earlier that relates to their new message)" + b.String()
}

// recordsInStack is the records whose summaries the turn's stack shows
// (L4, the newest n), read only when a summary was recalled.
func recordsInStack(ctx context.Context, st Store, n int, t *core.Turn, near []recalled) (map[int64]bool, error) {
	for _, r := range near {
		if r.MessageID != 0 {
			continue
		}
		recs, err := summariesShown(ctx, st, n, t)
		if err != nil {
			return nil, err
		}
		shown := make(map[int64]bool, len(recs))
		for _, rec := range recs {
			shown[rec.ID] = true
		}
		return shown, nil
	}
	return nil, nil
}

// recallLine is one recalled message or summary as the prompt shows it,
// or ok false for one the prompt has already.
func recallLine(r recalled, t *core.Turn, inWindow, shownRecords map[int64]bool, loc *time.Location) (string, bool) {
	day := r.At.In(loc).Format("Mon 2 Jan 2006")
	if r.MessageID == 0 { // a session's summary
		if r.RecordID == nil || *r.RecordID == t.Record.ID || shownRecords[*r.RecordID] {
			return "", false
		}
		return fmt.Sprintf("- [Record %d, %s] %s", *r.RecordID, day, cut(oneLine(r.Text), 300)), true
	}
	who := speaker(core.Message{Role: r.Role})
	if who == "" || r.Source == core.SourceCommand || inWindow[r.MessageID] || (r.RecordID != nil && *r.RecordID == t.Record.ID && t.Record.ID != 0) {
		return "", false
	}
	return fmt.Sprintf("- [%s] %s: %s", day, who, cut(oneLine(r.Text), 300)), true
}

// newUserText is the user's messages the turn answers: the last ones of
// the history, after the bot's last reply.
func newUserText(history []core.Message) string {
	var parts []string
	for i := len(history) - 1; i >= 0 && history[i].Role == core.RoleUser; i-- {
		if history[i].Source != core.SourceCommand {
			parts = append(parts, strings.TrimSpace(history[i].Content))
		}
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return cut(strings.TrimSpace(strings.Join(parts, "\n")), 1000)
}
