package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/vectors"
)

// The embedding pass runs on the engines' loop, in the background: it
// takes the messages each conversation has had since its progress
// (conversations.embedded_seq), embeds them in batches and keeps the
// vectors and the new progress in one transaction, so a kill loses no
// message and embeds none twice. Summaries are embedded as they are
// made; those from before (or from before a model change) by a walk
// after the start.

// embedStep runs a round if one is due and reports when the next is.
func (e *engine) embedStep(ctx context.Context, now time.Time) {
	m := e.p.meaning
	if m == nil || now.Before(e.nextEmbed) {
		return
	}
	if e.embedRound(ctx, now) {
		e.nextEmbed = now // a backlog: go on at once
		return
	}
	e.nextEmbed = now.Add(embedEvery)
	// pgvector's index is built once the backlog is embedded: built in
	// one go it costs a fraction of what inserting into it row by row
	// would (a backlog embedded 5x slower so).
	if pv := m.vs.pv; pv != nil && m.dims > 0 {
		pv.ensureIndex(ctx, m.vs.db, m.model, m.dims, e.log)
	}
}

// embedRound embeds a few batches and reports whether any work is left.
func (e *engine) embedRound(ctx context.Context, now time.Time) bool {
	m := e.p.meaning
	if m.summariesFrom >= 0 {
		if err := e.embedOldSummaries(ctx, now); err != nil {
			if ctx.Err() == nil {
				e.log.Warn("memory: embedding earlier session summaries failed; tried again later", "err", err)
			}
			return false
		}
		return true
	}
	if m.vs.pv != nil && !m.filled {
		n, dims, err := m.vs.pv.fill(ctx, m.vs.db, m.vs.bot, m.model, embedBatch)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("memory: pgvector cannot search the vectors kept before it yet; tried again later", "err", err)
			}
			return false
		}
		if n > 0 {
			m.dims = dims
			return true
		}
		m.filled = true
	}
	if more, err := e.embedEdited(ctx, now); err != nil || more {
		if err != nil && ctx.Err() == nil {
			e.log.Warn("memory: embedding edited messages failed; tried again later", "err", err)
		}
		return more
	}
	for range embedRoundBatches {
		more, err := e.embedMessages(ctx, now)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("memory: embedding messages failed; they are embedded later", "err", err)
			}
			return false
		}
		if !more {
			return false
		}
	}
	return true
}

// embedRoundBatches bounds the batches of one round, so that the facts and
// summaries passes get their turn while a backlog is embedded.
const embedRoundBatches = 8

// embedMessages embeds one batch of messages not embedded yet and
// reports whether more are waiting.
func (e *engine) embedMessages(ctx context.Context, now time.Time) (bool, error) {
	m := e.p.meaning
	work, err := m.vs.pending(ctx, embedConversations)
	if err != nil || len(work) == 0 {
		return false, err
	}
	more := len(work) == embedConversations
	var (
		texts []string
		rows  []vecRow
		done  []embedWork
	)
	for _, w := range work {
		room := embedBatch - len(texts)
		if room <= 0 {
			more = true
			break
		}
		to := min(w.To, w.From+int64(room))
		more = more || to < w.To
		msgs, err := e.st.MessagesBetween(ctx, w.ConversationID, w.From, to, room)
		if err != nil {
			return false, err
		}
		for _, msg := range msgs {
			if text := embeddable(msg); text != "" {
				texts = append(texts, text)
				rows = append(rows, vecRow{ConversationID: w.ConversationID, MessageID: msg.ID})
			}
		}
		done = append(done, embedWork{ConversationID: w.ConversationID, From: w.From, To: to})
	}
	if err := e.embedRows(ctx, texts, rows); err != nil {
		return false, err
	}
	if err := m.vs.save(ctx, m.model, done, rows, now); err != nil {
		return false, err
	}
	if len(rows) > 0 {
		if dims, err := vectors.Dims(rows[0].Vec); err == nil {
			m.dims = dims
		}
	}
	e.log.Debug("memory: messages embedded", "messages", len(rows), "conversations", len(done))
	return more, nil
}

// embedEdited embeds again one batch of the messages edited since they
// were embedded (a deleted one's text is gone: it only leaves the queue)
// and reports whether more are waiting.
func (e *engine) embedEdited(ctx context.Context, now time.Time) (bool, error) {
	m := e.p.meaning
	work, err := m.vs.editedMessages(ctx, embedBatch)
	if err != nil || len(work) == 0 {
		return false, err
	}
	var (
		texts []string
		rows  []vecRow
	)
	for _, w := range work {
		msg := core.Message{Role: core.Role(w.Role), Source: core.Source(w.Source), Content: w.Content}
		if text := embeddable(msg); text != "" {
			texts = append(texts, text)
			rows = append(rows, vecRow{ConversationID: w.ConversationID, MessageID: w.MessageID})
		}
	}
	if err := e.embedRows(ctx, texts, rows); err != nil {
		return false, err
	}
	if err := m.vs.saveAgain(ctx, m.model, work, rows, now); err != nil {
		return false, err
	}
	e.log.Debug("memory: edited messages embedded again", "messages", len(rows))
	return len(work) == embedBatch, nil
}

// embedRows embeds texts into rows' vectors, one for one.
func (e *engine) embedRows(ctx context.Context, texts []string, rows []vecRow) error {
	if len(texts) == 0 {
		return nil
	}
	vecs, err := e.p.meaning.emb.Embed(ctx, texts)
	if err != nil {
		return err
	}
	if len(vecs) != len(texts) {
		return fmt.Errorf("memory: %d vectors for %d texts", len(vecs), len(texts))
	}
	for i := range rows {
		rows[i].Vec = vectors.Encode(vecs[i])
	}
	return nil
}

// embeddable is the text of a message to embed, or "" for one that is not
// worth finding again: a chat command and its answer, a tool's output, a
// message without text.
func embeddable(m core.Message) string {
	if m.Source == core.SourceCommand || speaker(m) == "" {
		return ""
	}
	return cut(strings.TrimSpace(m.Content), maxEmbedRunes)
}

// embedOldSummaries embeds a batch of the summaries that have no vector of
// the model, walking them once by record id.
func (e *engine) embedOldSummaries(ctx context.Context, now time.Time) error {
	m := e.p.meaning
	list, err := m.vs.unembeddedSummaries(ctx, m.model, m.summariesFrom, embedBatch)
	if err != nil {
		return err
	}
	if err := e.embedSummaries(ctx, list, now); err != nil {
		return err
	}
	if len(list) < embedBatch {
		m.summariesFrom = -1
	} else {
		m.summariesFrom = list[len(list)-1].RecordID
	}
	return nil
}

// embedSummaries embeds and keeps the vectors of summaries.
func (e *engine) embedSummaries(ctx context.Context, list []summaryWork, now time.Time) error {
	texts, rows := make([]string, 0, len(list)), make([]vecRow, 0, len(list))
	for _, s := range list {
		if t := cut(strings.TrimSpace(s.Summary), maxEmbedRunes); t != "" {
			texts = append(texts, t)
			rows = append(rows, vecRow{ConversationID: s.ConversationID, RecordID: s.RecordID})
		}
	}
	if err := e.embedRows(ctx, texts, rows); err != nil || len(rows) == 0 {
		return err
	}
	return e.p.meaning.vs.saveRecords(ctx, e.p.meaning.model, rows, now)
}

// summaryMade embeds a summary the summaries pass just kept; a failure
// leaves it to the walk after the next start.
func (e *engine) summaryMade(ctx context.Context, r core.SessionRecord, summary string) {
	if e.p.meaning == nil || summary == "" {
		return
	}
	err := e.embedSummaries(ctx, []summaryWork{{RecordID: r.ID, ConversationID: r.ConversationID, Summary: summary}}, e.clock.Now())
	if err != nil && ctx.Err() == nil {
		e.log.Warn("memory: embedding a session summary failed; it is embedded after the next start", "record", r.ID, "err", err)
	}
}
