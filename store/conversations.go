package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Directory is the conversations: recording an inbound message (which
// finds or creates its conversation), looking them up and listing them,
// and deleting them (deletion.go).
type Directory struct{ *dbs }

// upsertConversation finds or creates the conversation, bumps its last_seq
// and notes the message's time, in one statement: the returned last_seq is
// the new message's seq, and prev_message_at (the old last_message_at, as
// SET reads the row before the update) the time of the message before it.
// On PostgreSQL the row lock it takes serialises writers of one
// conversation until commit, so seqs are gap-free and unique.
const upsertConversation = `INSERT INTO conversations
		(bot_id, platform, channel_thread_id, channel_user_id, display_name, time_zone, last_seq, last_message_at, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
	ON CONFLICT (bot_id, platform, channel_thread_id) DO UPDATE SET
		last_seq = conversations.last_seq + 1,
		prev_message_at = conversations.last_message_at,
		last_message_at = excluded.last_message_at,
		channel_user_id = CASE WHEN excluded.channel_user_id <> '' THEN excluded.channel_user_id ELSE conversations.channel_user_id END,
		display_name = CASE WHEN excluded.display_name <> '' THEN excluded.display_name ELSE conversations.display_name END,
		updated_at = excluded.updated_at
	RETURNING ` + conversationCols + `, prev_message_at`

// planRun makes the message the trigger of the conversation's queued run,
// creating one if there is none. A queued proactive or continue run becomes
// the user's turn (a proactive job it carried is left to its lease, and
// then dropped as stale); a queued cron_turn stays one (it is deferred, never lost,
// and its turn sees the user's messages too). The partial unique index runs_one_queued is
// the arbiter, so concurrent planners never create two queued runs.
const planRun = `INSERT INTO runs
		(conversation_id, bot_id, kind, status, trigger_message_id, expected_last_message_id, run_after, created_at, updated_at)
	VALUES (?, ?, 'user_turn', 'queued', ?, ?, ?, ?, ?)
	ON CONFLICT (conversation_id) WHERE status = 'queued' DO UPDATE SET
		kind = CASE WHEN runs.kind = 'cron_turn' THEN runs.kind ELSE excluded.kind END,
		job_id = CASE WHEN runs.kind = 'cron_turn' THEN runs.job_id ELSE NULL END,
		trigger_message_id = excluded.trigger_message_id,
		expected_last_message_id = excluded.expected_last_message_id,
		run_after = excluded.run_after,
		updated_at = excluded.updated_at
	RETURNING ` + runCols

// RecordInbound finds or creates the conversation of the view's bot
// (updating a changed display name or user id; the time zone is set only
// on create), appends the user message with the next seq and, if asked,
// plans a run — all in one transaction of three statements.
func (s *Directory) RecordInbound(ctx context.Context, in core.InboundRecord) (core.InboundResult, error) {
	var res core.InboundResult
	if in.Platform == "" || in.ChannelThreadID == "" {
		return res, errors.New("recording inbound message: platform and channel thread id are required")
	}
	if s.bot == "" {
		return res, fmt.Errorf("recording inbound message: %w", errNoBot)
	}
	meta, err := encodeMetadata(in.Metadata)
	if err != nil {
		return res, fmt.Errorf("recording inbound message: %w", err)
	}
	now := s.q.t(in.Now)
	err = s.write(ctx, func(tx *gorm.DB) error {
		res = core.InboundResult{} // a batch may run this again after a rollback
		prev, err := upsertInbound(tx, s.bot, in, &res.Conversation, now)
		if err != nil {
			return err
		}
		if err := s.joinRecord(tx, &res, prev, in.Now, in.SessionGap, now); err != nil {
			return err
		}
		rec := in
		if in.Answers != 0 {
			if rec.Text, err = chosenLabel(tx, in, res.Conversation.ID); err != nil {
				return err
			}
		}
		res.Message = inboundMessage(rec, res.Conversation)
		if err := s.insertMessage(tx, &res.Message, meta, now); err != nil {
			return err
		}
		if in.Answers != 0 {
			if err := markAnswered(tx, in.Answers, res.Message.ID, now); err != nil {
				return err
			}
		}
		if !in.PlanRun {
			return nil
		}
		return s.planInboundRun(tx, in, &res, now)
	})
	if err != nil {
		return core.InboundResult{}, fmt.Errorf("recording inbound message: %w", err)
	}
	return res, nil
}

// upsertInbound finds or creates the conversation of in into conv and
// returns the time of its message before this one (nil for its first). A
// platform message id the conversation already has from its user is a
// redelivery: core.ErrDuplicateInbound.
func upsertInbound(tx *gorm.DB, bot string, in core.InboundRecord, conv *core.Conversation, now any) (*time.Time, error) {
	var prev *time.Time
	dest := append(conversationDest(conv), nullTimeCol{&prev})
	if err := row(tx, upsertConversation, bot, string(in.Platform), in.ChannelThreadID, in.ChannelUserID,
		in.DisplayName, in.TimeZone, now, now, now).Scan(dest...); err != nil {
		return nil, fmt.Errorf("upserting conversation: %w", err)
	}
	if in.PlatformMessageID != "" {
		// The upsert holds the conversation's row (on PostgreSQL, until
		// commit), so two replicas given one redelivery see each other.
		var dup bool
		if err := row(tx, `SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ? AND platform_message_id = ?
			AND role = 'user' AND platform_message_id <> '')`, conv.ID, in.PlatformMessageID).Scan(&dup); err != nil {
			return nil, fmt.Errorf("looking for a redelivery: %w", err)
		}
		if dup {
			return nil, core.ErrDuplicateInbound
		}
	}
	return prev, nil
}

// inboundMessage is the message in records in conv, at its new last seq
// and in its current session record.
func inboundMessage(in core.InboundRecord, conv core.Conversation) core.Message {
	source := in.Source
	if source == "" {
		source = core.SourceUser
	}
	return core.Message{
		ConversationID:    conv.ID,
		Seq:               conv.LastSeq,
		Role:              core.RoleUser,
		Content:           in.Text,
		Source:            source,
		PlatformMessageID: in.PlatformMessageID,
		SessionRecordID:   conv.CurrentRecordID,
		Metadata:          in.Metadata,
		CreatedAt:         utc(in.Now),
	}
}

// planInboundRun plans the run that answers res.Message, as
// in.WhileRunning says when the conversation has a running run: reject
// (res.Rejected, no run), restart (its cancel is requested) or queue.
func (s *Directory) planInboundRun(tx *gorm.DB, in core.InboundRecord, res *core.InboundResult, now any) error {
	if in.WhileRunning == core.BusyReject || in.WhileRunning == core.BusyRestart {
		// Under queue the running run does not matter: skip the read.
		running, err := runningRun(tx, res.Conversation.ID)
		if err != nil {
			return err
		}
		res.Running = running
	}
	if running := res.Running; running != nil {
		switch in.WhileRunning {
		case core.BusyReject:
			res.Rejected = true
			return nil
		case core.BusyRestart:
			if err := tx.Exec(`UPDATE runs SET cancel_requested_at = ?, updated_at = ?
				WHERE id = ? AND cancel_requested_at IS NULL`, now, now, running.ID).Error; err != nil {
				return fmt.Errorf("requesting cancel of run %d: %w", running.ID, err)
			}
			t := utc(in.Now)
			running.CancelRequestedAt = &t
		}
	}
	runAfter := now
	if !in.RunAfter.IsZero() {
		runAfter = s.q.t(in.RunAfter)
	}
	run := new(core.Run)
	if err := row(tx, planRun, res.Conversation.ID, res.Conversation.BotID, res.Message.ID, res.Message.ID, runAfter, now, now).
		Scan(runDest(run)...); err != nil {
		return fmt.Errorf("planning run: %w", err)
	}
	res.Run = run
	if in.ClaimFor != "" && res.Running == nil && !run.RunAfter.After(in.Now) {
		return claimPlanned(tx, res, in.ClaimFor, now)
	}
	return nil
}

// claimPlanned claims res.Run, just planned and due, for owner unless a
// run of its conversation is running (under BusyQueue planInboundRun did
// not look). The upsert holds the conversation's row and the run is its
// one queued run, so no other claimer can take a run of it meanwhile.
func claimPlanned(tx *gorm.DB, res *core.InboundResult, owner string, now any) error {
	claimed := new(core.Run)
	err := row(tx, `UPDATE runs SET status = 'running', owner = ?, started_at = ?, heartbeat_at = ?, updated_at = ?
		WHERE id = ? AND status = 'queued'
		  AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.conversation_id = ? AND x.status = 'running')
		RETURNING `+runCols, owner, now, now, now, res.Run.ID, res.Conversation.ID).Scan(runDest(claimed)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil // left queued, for whichever process claims it
	case err != nil:
		return fmt.Errorf("claiming the planned run %d: %w", res.Run.ID, err)
	}
	res.Run = claimed
	return nil
}

// runningRun is the conversation's running run, nil when none runs.
func runningRun(tx *gorm.DB, convID int64) (*core.Run, error) {
	running := new(core.Run)
	err := row(tx, `SELECT `+runCols+` FROM runs WHERE conversation_id = ? AND status = 'running'`, convID).
		Scan(runDest(running)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("looking for a running run: %w", err)
	}
	return running, nil
}

// joinRecord puts the message being recorded into the conversation's
// current session record, or starts a new one when there is none or the
// gap since the previous message (prev) exceeds gap (0: never). The record
// that ends gets ended_at = prev. res.Conversation is updated to match.
func (s *dbs) joinRecord(tx *gorm.DB, res *core.InboundResult, prev *time.Time, at time.Time, gap time.Duration, now any) error {
	conv := &res.Conversation
	if conv.CurrentRecordID != nil && prev != nil && (gap <= 0 || at.Sub(*prev) <= gap) {
		return nil
	}
	if conv.CurrentRecordID != nil && prev != nil {
		if err := tx.Exec(`UPDATE session_records SET ended_at = ?, updated_at = ? WHERE id = ? AND ended_at IS NULL`,
			s.q.t(*prev), now, *conv.CurrentRecordID).Error; err != nil {
			return fmt.Errorf("ending session record %d: %w", *conv.CurrentRecordID, err)
		}
		res.EndedRecordID = conv.CurrentRecordID
	}
	id, err := s.startRecord(tx, conv.ID, at, now)
	if err != nil {
		return err
	}
	conv.CurrentRecordID = &id
	res.NewRecord = true
	return nil
}

// startRecord starts a session record of the conversation at at and makes
// it the current one.
func (s *dbs) startRecord(tx *gorm.DB, convID int64, at time.Time, now any) (int64, error) {
	var id int64
	if err := tx.Raw(`INSERT INTO session_records (conversation_id, started_at, created_at, updated_at)
		VALUES (?, ?, ?, ?) RETURNING id`, convID, s.q.t(at), now, now).Row().Scan(&id); err != nil {
		return 0, fmt.Errorf("starting session record: %w", err)
	}
	if err := tx.Exec(`UPDATE conversations SET current_record_id = ? WHERE id = ?`, id, convID).Error; err != nil {
		return 0, fmt.Errorf("starting session record: %w", err)
	}
	return id, nil
}

// Conversation returns a conversation by id.
func (s *Directory) Conversation(ctx context.Context, id int64) (core.Conversation, error) {
	var c core.Conversation
	err := readRow(ctx, s.r, `SELECT `+conversationCols+` FROM conversations WHERE id = ?`, id).
		Scan(conversationDest(&c)...)
	if err != nil {
		return core.Conversation{}, notFound(fmt.Sprintf("conversation %d", id), err)
	}
	return c, nil
}

// ConversationByThread returns the view's bot's conversation at a
// platform address (on AllBots, any bot's: the first by id).
func (s *Directory) ConversationByThread(ctx context.Context, p core.Platform, channelThreadID string) (core.Conversation, error) {
	var c core.Conversation
	cond, args := s.botCond(`bot_id`)
	err := readRow(ctx, s.r, `SELECT `+conversationCols+` FROM conversations
		WHERE platform = ? AND channel_thread_id = ?`+cond+` ORDER BY id LIMIT 1`,
		append([]any{string(p), channelThreadID}, args...)...).Scan(conversationDest(&c)...)
	if err != nil {
		return core.Conversation{}, notFound(fmt.Sprintf("conversation %s/%s", p, channelThreadID), err)
	}
	return c, nil
}

// Conversations lists the view's bot's conversations (AllBots: every
// bot's) by id, limit at a time (limit <= 0 means all).
func (s *Directory) Conversations(ctx context.Context, limit, offset int) ([]core.Conversation, error) {
	if limit <= 0 {
		limit = math.MaxInt32
	}
	cond, args := s.botCond(`bot_id`)
	q := `SELECT ` + conversationCols + ` FROM conversations WHERE 1 = 1` + cond + ` ORDER BY id LIMIT ? OFFSET ?`
	args = append(args, limit, max(offset, 0))
	out, err := queryAll(s.r.WithContext(ctx), q, args, conversationDest)
	if err != nil {
		return nil, fmt.Errorf("listing conversations: %w", err)
	}
	return out, nil
}

// notFound wraps err with what was looked up, turning "no rows" into
// core.ErrNotFound.
func notFound(what string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, core.ErrNotFound)
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

// queryAll runs q and scans every row into a T through dest. The
// destinations are built once per query: a row is scanned into one scratch
// value and copied out.
func queryAll[T any](db *gorm.DB, q string, args []any, dest func(*T) []any) ([]T, error) {
	return queryAllCap(db, q, args, dest, 0)
}

func queryAllCap[T any](db *gorm.DB, q string, args []any, dest func(*T) []any, capHint int) ([]T, error) {
	rows, err := query(db, q, args...)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, dest, capHint)
}

// readAllCap is queryAllCap on db (a pool) with ctx (see readRow).
func readAllCap[T any](ctx context.Context, db *gorm.DB, q string, args []any, dest func(*T) []any, capHint int) ([]T, error) {
	rows, err := readQuery(ctx, db, q, args...)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, dest, capHint)
}

// scanAll scans every row into a T through dest and closes rows.
func scanAll[T any](rows *sql.Rows, dest func(*T) []any, capHint int) ([]T, error) {
	defer func() { _ = rows.Close() }()
	out := make([]T, 0, capHint)
	var (
		v    T
		zero T
		d    = dest(&v)
	)
	for rows.Next() {
		v = zero
		if err := rows.Scan(d...); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// chosenLabel is the label of choice in.Choice of the question in.Answers,
// which must be a bot message of conversation conv asking it
// (core.ErrStaleChoice otherwise).
func chosenLabel(tx *gorm.DB, in core.InboundRecord, conv int64) (string, error) {
	var q core.Message
	err := row(tx, `SELECT metadata FROM messages WHERE id = ? AND conversation_id = ? AND role = 'assistant'`,
		in.Answers, conv).Scan(metadataCol{&q.Metadata})
	if errors.Is(err, sql.ErrNoRows) {
		return "", core.ErrStaleChoice
	}
	if err != nil {
		return "", fmt.Errorf("reading the question answered: %w", err)
	}
	if in.ChoiceData != "" {
		// A button the core answers itself: its data names it.
		q.ID = in.Answers
		buttons := core.MessageChoices(q)
		if in.Choice < 0 || in.Choice >= len(buttons) || buttons[in.Choice].Data != in.ChoiceData {
			return "", core.ErrStaleChoice
		}
		return buttons[in.Choice].Label, nil
	}
	labels := core.QuestionChoices(q)
	if in.Choice < 0 || in.Choice >= len(labels) {
		return "", core.ErrStaleChoice
	}
	return labels[in.Choice], nil
}

// markAnswered records question answered by message answer, once
// (core.ErrAlreadyAnswered the second time: the transaction then rolls
// back, storing nothing).
func markAnswered(tx *gorm.DB, question, answer int64, now any) error {
	res := tx.Exec(`INSERT INTO answered_questions (message_id, answer_id, answered_at) VALUES (?, ?, ?)
		ON CONFLICT (message_id) DO NOTHING`, question, answer, now)
	if res.Error != nil {
		return fmt.Errorf("recording the question answered: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return core.ErrAlreadyAnswered
	}
	return nil
}
