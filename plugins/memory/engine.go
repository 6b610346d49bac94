package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/internal/loop"
)

// The memory engines run in the background, on llm.light_model, and never
// hold up a reply: a model that is down only delays them.
//
//   - Facts: every FactEvery, each conversation with messages the engine
//     has not read gets one pass: the model sees the facts and the new
//     messages and answers with JSON (new facts, updates by id, the ids the
//     conversation used). Invalid JSON is asked for once more, then the pass
//     is skipped with a log line. A record's end brings its conversation's
//     pass forward.
//   - Summaries: every SummaryEvery, records that are over (ended, or quiet
//     for longer than session_gap: a timer finds them, not only the next
//     message) are summarised and the summary stored on the record.

const (
	// factBatch bounds the messages one fact pass reads.
	factBatch = 200
	// summaryMessages bounds the messages a summary is made from.
	summaryMessages = 400
	// maxSummaryRunes bounds a stored summary.
	maxSummaryRunes = 800
	// engineBatch bounds the conversations or records one tick takes.
	engineBatch = 20
	// maxNewFacts bounds the facts one pass may add.
	maxNewFacts = 10
)

// engineStore is what the engines need of the store beyond the plugin's
// Store: the messages to read and the session records to summarise.
type engineStore interface {
	MessagesBetween(ctx context.Context, conversationID, from, to int64, limit int) ([]core.Message, error)
	ClaimEndedRecords(ctx context.Context, now time.Time, gap time.Duration, limit int) ([]core.SessionRecord, error)
	SaveSummary(ctx context.Context, recordID int64, summary string) error
	ReleaseRecord(ctx context.Context, recordID int64) error
}

// engine is the plugin's background work; nil without a model.
type engine struct {
	p     *Plugin
	st    engineStore
	model core.Completer
	name  string
	clock core.Clock
	log   *slog.Logger
	// loop runs the passes; it sleeps without a goroutine (internal/loop).
	loop                     *loop.Loop
	cancel                   context.CancelFunc // ends a pass in flight
	nextFacts, nextSummaries time.Time
	nextEmbed                time.Time
	mu                       sync.Mutex
}

// Start runs the engines until Stop.
func (p *Plugin) Start(ctx context.Context) error {
	e := p.engine
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.loop != nil {
		return errors.New("memory: already started")
	}
	now := e.clock.Now()
	e.nextFacts, e.nextSummaries, e.nextEmbed = now.Add(e.p.FactEvery), now.Add(e.p.SummaryEvery), now
	if err := e.p.startMeaning(ctx, now); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.loop, e.cancel = loop.Start(runCtx, e.clock, nil, e.step), cancel
	return nil
}

// Stop ends the engines, waiting for a pass in flight until ctx ends.
func (p *Plugin) Stop(ctx context.Context) error {
	e := p.engine
	if e == nil {
		return nil
	}
	e.mu.Lock()
	l, cancel := e.loop, e.cancel
	e.mu.Unlock()
	if l == nil {
		return nil
	}
	l.Stop()
	cancel()
	select {
	case <-l.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("memory: stopping: %w", ctx.Err())
	}
}

// step runs what is due of the two passes and sleeps until the next.
func (e *engine) step(ctx context.Context) time.Duration {
	now := e.clock.Now()
	if !now.Before(e.nextSummaries) {
		e.summaries(ctx, now)
		e.nextSummaries = now.Add(e.p.SummaryEvery)
	}
	if !now.Before(e.nextFacts) {
		e.facts(ctx, now)
		e.nextFacts = now.Add(e.p.FactEvery)
	}
	e.embedStep(ctx, now)
	now = e.clock.Now()
	wait := min(e.nextFacts.Sub(now), e.nextSummaries.Sub(now))
	if e.p.meaning != nil {
		wait = min(wait, e.nextEmbed.Sub(now))
	}
	return max(wait, 0)
}

// summaries summarises the records that are over, then reads their
// conversations' new messages for facts (a record's end is a fact pass).
func (e *engine) summaries(ctx context.Context, now time.Time) {
	recs, err := e.st.ClaimEndedRecords(ctx, now.UTC(), e.p.SessionGap, engineBatch)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("memory: looking for ended session records", "err", err)
		}
		return
	}
	for _, r := range recs {
		if err := e.summarise(ctx, r); err != nil {
			e.log.Warn("memory: summarising a session record failed; it is tried again later", "record", r.ID, "err", err)
			_ = e.st.ReleaseRecord(context.WithoutCancel(ctx), r.ID)
		}
	}
	if len(recs) > 0 {
		e.facts(ctx, now)
	}
}

func (e *engine) summarise(ctx context.Context, r core.SessionRecord) error {
	_, msgs, err := e.p.store.RecordMessages(ctx, r.ConversationID, r.ID)
	if err != nil {
		return err
	}
	if len(msgs) > summaryMessages {
		msgs = msgs[len(msgs)-summaryMessages:]
	}
	transcript := transcriptOf(msgs)
	if transcript == "" {
		return e.st.SaveSummary(ctx, r.ID, "")
	}
	res, err := e.model.Complete(ctx, llm.Request{Model: e.name, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: summaryPrompt},
		{Role: llm.RoleUser, Content: transcript},
	}})
	if err != nil {
		return err
	}
	sum := cut(oneLine(res.Content), maxSummaryRunes)
	e.log.Debug("memory: session record summarised", "record", r.ID)
	if err := e.st.SaveSummary(ctx, r.ID, sum); err != nil {
		return err
	}
	e.summaryMade(ctx, r, sum)
	return nil
}

const summaryPrompt = `You summarise one chat session between a companion bot ("You") and a person ("User") for the bot's memory. Write 2 to 4 plain sentences: what they talked about, anything that mattered to the person, how it ended. No greeting, no lists, no markup.`

// transcriptOf writes messages as "User: …" and "You: …" lines. Chat
// commands and their answers are left out: they are about the bot, not
// the person, and a /forget listing would bring back the facts it erased.
func transcriptOf(msgs []core.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Source == core.SourceCommand {
			continue
		}
		if who := speaker(m); who != "" {
			fmt.Fprintf(&b, "%s: %s\n", who, oneLine(m.Content))
		}
	}
	return strings.TrimSpace(b.String())
}

// facts runs a pass for each conversation with unread messages.
func (e *engine) facts(ctx context.Context, now time.Time) {
	work, err := e.p.facts.ClaimWork(ctx, engineBatch)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("memory: looking for new messages", "err", err)
		}
		return
	}
	for _, w := range work {
		if err := e.factPass(ctx, w, now); err != nil {
			e.log.Warn("memory: fact pass failed; the messages are read again later", "conversation", w.ConversationID, "err", err)
			_ = e.p.facts.ReleaseWork(context.WithoutCancel(ctx), w)
		}
	}
}

// factAnswer is the JSON a fact pass asks the model for.
type factAnswer struct {
	NewFacts []string `json:"new_facts"`
	Updates  []struct {
		ID   string `json:"id"`
		Fact string `json:"fact"`
	} `json:"updates"`
	UsedFactIDs []string `json:"used_fact_ids"`
}

// errBadAnswer marks an answer that is not the JSON asked for.
var errBadAnswer = errors.New("the model's answer is not the JSON asked for")

func (e *engine) factPass(ctx context.Context, w FactWork, now time.Time) error {
	msgs, err := e.st.MessagesBetween(ctx, w.ConversationID, w.FromSeq, w.ToSeq, factBatch)
	if err != nil {
		return err
	}
	transcript := transcriptOf(msgs)
	if transcript == "" {
		return nil
	}
	facts, err := e.p.facts.Facts(ctx, w.ConversationID)
	if err != nil {
		return err
	}
	var known strings.Builder
	for _, f := range facts {
		fmt.Fprintf(&known, "%s: %s\n", f.Key, f.Content)
	}
	if known.Len() == 0 {
		known.WriteString("(none)\n")
	}
	req := llm.Request{Model: e.name, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: fmt.Sprintf(factPrompt, e.p.MaxFacts)},
		{Role: llm.RoleUser, Content: "Known facts:\n" + known.String() + "\nNew messages:\n" + transcript},
	}}
	var ans factAnswer
	for attempt := 1; ; attempt++ {
		res, err := e.model.Complete(ctx, req)
		if err != nil {
			return err // the model is down: read these messages again later
		}
		if ans, err = parseFactAnswer(res.Content); err == nil {
			break
		}
		if attempt == 2 {
			e.log.Warn("memory: skipping a fact pass: the model answered invalid JSON twice", "conversation", w.ConversationID, "err", err)
			return nil
		}
	}
	err = e.apply(ctx, e.p.facts.During(w), w.ConversationID, facts, ans, now)
	if errors.Is(err, ErrForgotten) {
		// The user's /forget all came while the model read: what it
		// found stays unwritten, and the messages stay passed over.
		e.log.Info("memory: a fact pass ended without writing: the user asked to forget everything meanwhile", "conversation", w.ConversationID)
		return nil
	}
	return err
}

const factPrompt = `You keep the long-term memory of a companion bot about one person: short facts about them (preferences, people and pets in their life, plans, what matters to them). Given the known facts (with ids) and the new messages, answer with JSON only:
{"new_facts": ["..."], "updates": [{"id": "F02", "fact": "..."}], "used_fact_ids": ["F01"]}
- new_facts: facts the new messages reveal that are not known yet, one short sentence each, at most 10.
- updates: known facts the messages change or merge, by id, with the new wording.
- used_fact_ids: ids of known facts the conversation touched on.
Never invent facts. Keep at most %d facts in all. Use empty lists when there is nothing.`

// parseFactAnswer reads the model's answer strictly (a fenced code block
// around it is allowed).
func parseFactAnswer(s string) (factAnswer, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
	s = strings.TrimSpace(strings.TrimSuffix(s, "```"))
	var a factAnswer
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return factAnswer{}, fmt.Errorf("%w: %v", errBadAnswer, err)
	}
	if dec.More() {
		return factAnswer{}, fmt.Errorf("%w: text after the JSON", errBadAnswer)
	}
	return a, nil
}

// apply writes a pass's answer to fs: updates by id (unknown ids
// ignored), new facts (the least recently used go when full), used ids
// refreshed.
func (e *engine) apply(ctx context.Context, fs *FactStore, conv int64, facts []core.Fact, a factAnswer, now time.Time) error {
	known := map[string]bool{}
	for _, f := range facts {
		known[f.Key] = true
	}
	var used []string
	for _, id := range a.UsedFactIDs {
		if id = strings.ToUpper(strings.TrimSpace(id)); known[id] {
			used = append(used, id)
		}
	}
	if err := fs.Touch(ctx, conv, used, now); err != nil {
		return err
	}
	for _, u := range a.Updates {
		id, fact := strings.ToUpper(strings.TrimSpace(u.ID)), cut(oneLine(u.Fact), maxFactRunes)
		if !known[id] || fact == "" {
			continue
		}
		if err := fs.Update(ctx, conv, id, fact, now); err != nil && !core.IsNotFound(err) {
			return err
		}
	}
	var fresh []string
	for i, f := range a.NewFacts {
		if i == maxNewFacts {
			break
		}
		if f = cut(oneLine(f), maxFactRunes); f != "" {
			fresh = append(fresh, f)
		}
	}
	same := e.sameAs(ctx, facts, fresh)
	for i, f := range fresh {
		if key, ok := same[i]; ok {
			// Said otherwise, it is a known fact: the newer wording wins.
			if err := fs.Update(ctx, conv, key, f, now); err != nil && !core.IsNotFound(err) {
				return err
			}
			continue
		}
		if _, _, err := fs.Remember(ctx, conv, f, e.p.MaxFacts, now); err != nil {
			return err
		}
	}
	return nil
}
