package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Routing is what the HTTP API needs to route a message to a user:
// ensuring the conversation, the idempotent job, and paging messages.
type Routing struct{ *dbs }

// EnsureConversation finds the view's bot's conversation at ref's
// platform address or creates it, with no message: a message routed by
// the API to a user the bot has not talked with yet. A known conversation
// gets a changed user id or display name; its time zone is set only on
// create.
func (s *Routing) EnsureConversation(ctx context.Context, ref core.InboundRecord) (core.Conversation, error) {
	if ref.Platform == "" || ref.ChannelThreadID == "" {
		return core.Conversation{}, errors.New("ensuring a conversation: platform and channel thread id are required")
	}
	if s.bot == "" {
		return core.Conversation{}, fmt.Errorf("ensuring a conversation: %w", errNoBot)
	}
	now := ref.Now
	if now.IsZero() {
		now = s.now()
	}
	t := s.q.t(now)
	var conv core.Conversation
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Raw(`INSERT INTO conversations
				(bot_id, platform, channel_thread_id, channel_user_id, display_name, time_zone, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (bot_id, platform, channel_thread_id) DO UPDATE SET
				channel_user_id = CASE WHEN excluded.channel_user_id <> '' THEN excluded.channel_user_id ELSE conversations.channel_user_id END,
				display_name = CASE WHEN excluded.display_name <> '' THEN excluded.display_name ELSE conversations.display_name END
			RETURNING `+conversationCols, s.bot, string(ref.Platform), ref.ChannelThreadID, ref.ChannelUserID, ref.DisplayName,
			ref.TimeZone, t, t).Row().Scan(conversationDest(&conv)...)
	})
	if err != nil {
		return core.Conversation{}, fmt.Errorf("ensuring conversation %s/%s: %w", ref.Platform, ref.ChannelThreadID, err)
	}
	return conv, nil
}

// JobByIdempotencyKey returns the view's bot's job created with key at
// or after since (core.ErrNotFound when there is none; on AllBots, any
// bot's, the first by id).
func (s *Routing) JobByIdempotencyKey(ctx context.Context, key string, since time.Time) (core.Job, error) {
	var j core.Job
	cond, args := s.botCond(`bot_id`)
	err := readRow(ctx, s.r, `SELECT `+jobCols+` FROM jobs WHERE idempotency_key = ? AND created_at >= ?`+cond+` ORDER BY id LIMIT 1`,
		append([]any{key, s.q.t(since)}, args...)...).Scan(jobDest(&j)...)
	if err != nil {
		return core.Job{}, notFound("job by idempotency key", err)
	}
	return j, nil
}

// errKeyTaken is a concurrent insert of the same idempotency key.
var errKeyTaken = errors.New("idempotency key taken meanwhile")

// RouteMessage creates the pending message job j (an API message) unless
// its IdempotencyKey already named a job created at or after since: then
// j becomes that job and created is false. A key last used before since
// is taken over. A conversation with max pending messages already gets
// core.ErrTooManyPending.
func (s *Routing) RouteMessage(ctx context.Context, j *core.Job, max int, since time.Time) (created bool, err error) {
	for range 2 {
		created, err = s.routeMessage(ctx, j, max, since)
		if !errors.Is(err, errKeyTaken) {
			break
		}
		// Another request with the key committed first: answer with its job.
	}
	if errors.Is(err, core.ErrTooManyPending) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("routing a message: %w", err)
	}
	return created, nil
}

func (s *Routing) routeMessage(ctx context.Context, j *core.Job, max int, since time.Time) (bool, error) {
	job := *j
	job.Kind, job.Status = core.JobMessage, core.JobPending
	if job.CreatedAt.IsZero() {
		job.CreatedAt = s.now()
	}
	job.CreatedAt, job.DueAt = utc(job.CreatedAt), utc(job.DueAt)
	job.UpdatedAt = job.CreatedAt
	created := false
	err := s.write(ctx, func(tx *gorm.DB) error {
		created = false
		t := s.q.t(job.CreatedAt)
		if job.IdempotencyKey != "" {
			var prev core.Job
			// Keys are the bot's: another bot's caller may use the same.
			err := tx.Raw(`SELECT `+jobCols+` FROM jobs WHERE bot_id = `+botOf+` AND idempotency_key = ?`,
				job.ConversationID, job.IdempotencyKey).Row().Scan(jobDest(&prev)...)
			switch {
			case err == nil && !prev.CreatedAt.Before(since):
				job = prev
				return nil
			case err == nil:
				if err := tx.Exec(`UPDATE jobs SET idempotency_key = NULL WHERE id = ?`, prev.ID).Error; err != nil {
					return err
				}
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		if err := checkPending(tx, job.ConversationID, max); err != nil {
			return err
		}
		err := tx.Raw(`INSERT INTO jobs (conversation_id, bot_id, kind, status, text, name, due_at, origin, format, image_url, idempotency_key,
				created_at, updated_at)
			VALUES (?, `+botOf+`, 'message', 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, job.ConversationID, job.ConversationID, job.Text, job.Name,
			s.q.t(job.DueAt), job.Origin, string(job.Format), job.ImageURL, nullString(job.IdempotencyKey), t, t).Row().Scan(&job.ID)
		if isUniqueViolation(err) {
			return errKeyTaken
		}
		created = err == nil
		return err
	})
	if err != nil {
		return false, err
	}
	*j = job
	return created, nil
}

// MessagesPage returns up to limit of the conversation's messages with a
// seq above afterSeq, oldest first: a transcript read page by page.
func (s *Routing) MessagesPage(ctx context.Context, conversationID, afterSeq int64, limit int) ([]core.Message, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+messageCols+` FROM messages
		WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?`, []any{conversationID, afterSeq, limit}, messageDest)
	if err != nil {
		return nil, fmt.Errorf("reading messages of conversation %d: %w", conversationID, err)
	}
	return out, nil
}
