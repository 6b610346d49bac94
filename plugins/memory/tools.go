package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/modeltext"
)

const (
	// maxFactRunes bounds one fact; longer ones are cut.
	maxFactRunes = 300
	// maxRecordRunes bounds the text retrieve_record returns.
	maxRecordRunes = 20000
	// historyResults is how many messages retrieve_history returns.
	historyResults = 10
)

// Tools offers the memory tools, bound to the turn's conversation: every
// one of them reads and writes that conversation's memory only.
func (p *Plugin) Tools(_ context.Context, t *core.Turn) ([]llm.Tool, error) {
	conv, loc, now := t.Conversation.ID, t.Location, t.Now
	if loc == nil {
		loc = time.UTC
	}
	return []llm.Tool{
		{
			Name:        "retrieve_record",
			Description: "Read the whole text of an earlier session, by the record id shown in \"Earlier sessions\".",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"record_id":{"type":"integer"}},"required":["record_id"],"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.retrieveRecord(ctx, conv, loc, raw)
			},
			Placeholder: func(raw json.RawMessage) string {
				var a struct {
					RecordID int64 `json:"record_id"`
				}
				_ = json.Unmarshal(raw, &a)
				return fmt.Sprintf("[Session Record %d has read]", a.RecordID)
			},
		},
		{
			Name:        "retrieve_history",
			Description: historyDescription(p.meaning != nil),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"keyword":{"type":"string"}},"required":["keyword"],"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.retrieveHistory(ctx, conv, loc, raw)
			},
		},
		{
			Name:        "list_facts",
			Description: "List everything you remember about this person, with the fact ids. Use it when they ask what you remember.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.listFacts(ctx, conv, raw)
			},
		},
		{
			Name:        "forget_fact",
			Description: "Forget one fact about this person, by its id (F01…), when they ask you to forget it.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"fact_id":{"type":"string"}},"required":["fact_id"],"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.forgetFact(ctx, conv, raw)
			},
		},
		{
			Name:        "remember_fact",
			Description: "Remember one fact about this person when they ask you to (\"remember that…\"). One short sentence.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"fact":{"type":"string"}},"required":["fact"],"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.rememberFact(ctx, conv, now, raw)
			},
		},
	}, nil
}

// decodeArgs reads a tool's arguments strictly into v.
func decodeArgs(tool string, raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: bad arguments: %v", tool, err)
	}
	return nil
}

func (p *Plugin) retrieveRecord(ctx context.Context, conv int64, loc *time.Location, raw json.RawMessage) (string, error) {
	var a struct {
		RecordID *int64 `json:"record_id"`
	}
	if err := decodeArgs("retrieve_record", raw, &a); err != nil {
		return "", err
	}
	if a.RecordID == nil {
		return "", errors.New("retrieve_record: record_id is required")
	}
	rec, msgs, err := p.store.RecordMessages(ctx, conv, *a.RecordID)
	if core.IsNotFound(err) {
		return "", fmt.Errorf("retrieve_record: there is no session record %d with this person (the ids are in \"Earlier sessions\")", *a.RecordID)
	}
	if err != nil {
		return "", fmt.Errorf("retrieve_record: reading the record failed: %w", err)
	}
	var b strings.Builder
	end := ""
	if rec.EndedAt != nil {
		end = "–" + rec.EndedAt.In(loc).Format("15:04")
	}
	fmt.Fprintf(&b, "Session Record %d (%s%s):", rec.ID, rec.StartedAt.In(loc).Format("Mon 2 Jan 2006 15:04"), end)
	if s := strings.TrimSpace(rec.Summary); s != "" {
		fmt.Fprintf(&b, "\nSummary: %s", oneLine(s))
	}
	for _, m := range msgs {
		who := speaker(m)
		if who == "" {
			continue
		}
		fmt.Fprintf(&b, "\n%s: %s", who, m.Content)
	}
	return cut(b.String(), maxRecordRunes), nil
}

// speaker names who said m in a transcript; "" for what the model never
// said or saw (failure notices, silent turns).
func speaker(m core.Message) string {
	switch {
	case m.Metadata[access.UnpairedKey] == true, m.Metadata[access.NoticeKey] == true:
		// A stranger's words before an owner let them in reach no model:
		// no fact, summary, vector or search is made of them.
		return ""
	case m.Role == core.RoleUser:
		return "User"
	case m.Role != core.RoleAssistant, m.Metadata["silent"] == true,
		m.Metadata["failure_notice"] == true, m.Metadata["busy_notice"] == true, m.Metadata["limit_notice"] != nil,
		m.Delivery == core.DeliveryDropped:
		return ""
	}
	return "You"
}

type historyHit struct {
	RecordID *int64 `json:"record_id"`
	Time     string `json:"time"`
	From     string `json:"from"`
	Text     string `json:"text"`
}

func (p *Plugin) retrieveHistory(ctx context.Context, conv int64, loc *time.Location, raw json.RawMessage) (string, error) {
	var a struct {
		Keyword string `json:"keyword"`
	}
	if err := decodeArgs("retrieve_history", raw, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Keyword) == "" {
		return "", errors.New("retrieve_history: keyword is empty: give a word or two to look for")
	}
	n := historyResults
	if p.meaning != nil {
		n = fusedCandidates // ranks to fuse with the meaning's
	}
	msgs, err := p.store.SearchMessages(ctx, conv, a.Keyword, n)
	if errors.Is(err, core.ErrEmptyQuery) {
		return "", fmt.Errorf("retrieve_history: %q has no words to look for", a.Keyword)
	}
	if err != nil {
		return "", fmt.Errorf("retrieve_history: the search failed: %w", err)
	}
	hits := make([]historyHit, 0, len(msgs))
	for _, f := range p.fuse(ctx, conv, a.Keyword, msgs) {
		hits = append(hits, historyHit{RecordID: f.RecordID, Time: f.At.In(loc).Format("2006-01-02 15:04"),
			From: strings.ToLower(f.From), Text: cut(f.Text, 1000)})
	}
	out := map[string]any{"messages": hits}
	if len(hits) == 0 {
		out["note"] = "nothing found"
	}
	b, err := json.Marshal(out)
	return string(b), err
}

type factOut struct {
	ID   string `json:"id"`
	Fact string `json:"fact"`
}

func (p *Plugin) listFacts(ctx context.Context, conv int64, raw json.RawMessage) (string, error) {
	if err := decodeArgs("list_facts", raw, &struct{}{}); err != nil {
		return "", err
	}
	facts, err := p.facts.Facts(ctx, conv)
	if err != nil {
		return "", fmt.Errorf("list_facts: reading the facts failed: %w", err)
	}
	out := make([]factOut, len(facts))
	for i, f := range facts {
		out[i] = factOut{ID: f.Key, Fact: f.Content}
	}
	b, err := json.Marshal(map[string]any{"facts": out})
	return string(b), err
}

func (p *Plugin) forgetFact(ctx context.Context, conv int64, raw json.RawMessage) (string, error) {
	var a struct {
		FactID string `json:"fact_id"`
	}
	if err := decodeArgs("forget_fact", raw, &a); err != nil {
		return "", err
	}
	key := strings.ToUpper(strings.TrimSpace(a.FactID))
	if key == "" {
		return "", errors.New("forget_fact: fact_id is empty (the ids are like F01; list_facts shows them)")
	}
	f, err := p.facts.Forget(ctx, conv, key)
	if core.IsNotFound(err) {
		return "", fmt.Errorf("forget_fact: there is no fact %s (list_facts shows the ids)", key)
	}
	if err != nil {
		return "", fmt.Errorf("forget_fact: %w", err)
	}
	b, err := json.Marshal(map[string]any{"forgotten": factOut{ID: f.Key, Fact: f.Content}})
	return string(b), err
}

func (p *Plugin) rememberFact(ctx context.Context, conv int64, now time.Time, raw json.RawMessage) (string, error) {
	var a struct {
		Fact string `json:"fact"`
	}
	if err := decodeArgs("remember_fact", raw, &a); err != nil {
		return "", err
	}
	// A fact goes into every later prompt: no control token, no reasoning.
	fact := oneLine(modeltext.Clean(a.Fact))
	if fact == "" {
		return "", errors.New("remember_fact: fact is empty")
	}
	truncated := utf8.RuneCountInString(fact) > maxFactRunes
	fact = cut(fact, maxFactRunes)
	f, evicted, err := p.facts.Remember(ctx, conv, fact, p.MaxFacts, now)
	if err != nil {
		return "", fmt.Errorf("remember_fact: %w", err)
	}
	out := map[string]any{"remembered": factOut{ID: f.Key, Fact: f.Content}}
	if len(evicted) > 0 {
		out["forgot_to_make_room"] = evicted
	}
	if truncated {
		out["note"] = fmt.Sprintf("cut to %d characters", maxFactRunes)
	}
	b, err := json.Marshal(out)
	return string(b), err
}
