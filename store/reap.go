package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// maxDeadTurns is how many times a turn for one message may die with its
// process before the message is given up: a message that crashes every
// process that answers it must not crash them for ever.
const maxDeadTurns = 3

// ReapStaleRuns fails running runs whose heartbeat is older than before:
// their process died (or hangs), and the queued run behind each becomes
// claimable. A conversation left with a user message no reply answered
// (by answered_seq) and no run queued has a user turn queued again, up
// to maxDeadTurns deaths for one message. A dead run that left a reply
// sending has a user turn queued too: it sends the reply again first
// (core.Store.PendingDeliveries).
// now is the caller's time (a run queued again is due then). It
// returns how many runs were failed and how many of them were queued
// again. Heartbeats are a process's, not a bot's: every view reaps every
// bot's stale runs, so a bot removed from the config leaves none running.
func (s *RunQueue) ReapStaleRuns(ctx context.Context, now, before time.Time) (reaped, retried int, err error) {
	at := s.q.t(now)
	reaped, retried, err = s.reap(ctx, now, s.q.reapStale, at, at, s.q.t(before))
	if err != nil {
		return 0, 0, fmt.Errorf("reaping stale runs: %w", err)
	}
	return reaped, retried, nil
}

// ReapRunsOf is ReapStaleRuns for the runs owner holds, whatever their
// heartbeat: the caller knows that process is gone (a restarted process
// finds its predecessor's runs on the same host).
func (s *RunQueue) ReapRunsOf(ctx context.Context, now time.Time, owner string) (reaped, retried int, err error) {
	at := s.q.t(now)
	reaped, retried, err = s.reap(ctx, now, `UPDATE runs SET status = 'failed', error = 'stale: its process is gone',
		finished_at = ?, updated_at = ? WHERE status = 'running' AND owner = ?
		RETURNING id, conversation_id, kind, trigger_message_id, grown`, at, at, owner)
	if err != nil {
		return 0, 0, fmt.Errorf("reaping the runs of %s: %w", owner, err)
	}
	return reaped, retried, nil
}

// RunningOwners returns the owners of running runs.
func (s *RunQueue) RunningOwners(ctx context.Context) ([]string, error) {
	var owners []string
	if err := s.r.WithContext(ctx).Raw(`SELECT DISTINCT owner FROM runs WHERE status = 'running'`).Scan(&owners).Error; err != nil {
		return nil, fmt.Errorf("reading running runs' owners: %w", err)
	}
	return owners, nil
}

// reap fails the running runs that failQuery (UPDATE … RETURNING id,
// conversation_id, kind, trigger_message_id, grown) picks, and queues again what
// should be answered (see ReapStaleRuns).
func (s *RunQueue) reap(ctx context.Context, now time.Time, failQuery string, args ...any) (reaped, retried int, err error) {
	at := s.q.t(now)
	type dead struct {
		id, conv int64
		kind     string
		trigger  *int64
		grown    string
	}
	err = s.write(ctx, func(tx *gorm.DB) error {
		reaped, retried = 0, 0
		rows, err := tx.Raw(failQuery, args...).Rows()
		if err != nil {
			return err
		}
		var runs []dead
		for rows.Next() {
			var r dead
			if err := rows.Scan(&r.id, &r.conv, &r.kind, &r.trigger, &r.grown); err != nil {
				rows.Close()
				return err
			}
			runs = append(runs, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		reaped = len(runs)
		for _, r := range runs {
			// A reply the dead run stored but may not have sent: a run of
			// its conversation sends it again before anything else
			// (core/delivery.go), and says nothing more if nobody wrote
			// since.
			res := tx.Exec(`INSERT INTO runs (conversation_id, bot_id, kind, status, trigger_message_id, run_after, created_at, updated_at)
				SELECT ?, `+botOf+`, 'user_turn', 'queued', ?, ?, ?, ?
				WHERE EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = ? AND m.run_id = ? AND m.delivery = 'sending')
				ON CONFLICT (conversation_id) WHERE status = 'queued' DO NOTHING`,
				r.conv, r.conv, r.trigger, at, at, at, r.conv, r.id)
			if res.Error != nil {
				return fmt.Errorf("queuing run %d's unsent reply: %w", r.id, res.Error)
			}
			if res.RowsAffected > 0 {
				retried++
				continue
			}
			n, err := s.requeue(tx, r.id, r.conv, r.kind, r.trigger, at)
			if err != nil {
				return err
			}
			retried += n
			if err := moveGrown(tx, r.id, r.conv, r.grown); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return reaped, retried, nil
}

// requeue queues a user turn again for dead run id of conversation conv
// when a user message no reply answered has no run queued behind it (its
// model call may have been made; its reply never stored). Whether
// anything waits is read from the replies' answered_seq, never from
// their place. It reports how many runs it queued (0 or 1).
func (s *RunQueue) requeue(tx *gorm.DB, id, conv int64, kind string, trigger *int64, at any) (int, error) {
	if kind != string(core.RunUserTurn) || trigger == nil {
		if err := row(tx, `SELECT max(id) FROM messages WHERE conversation_id = ? AND role = 'user' AND source <> 'command'`,
			conv).Scan(nullIDCol{&trigger}); err != nil {
			return 0, fmt.Errorf("reading run %d's conversation: %w", id, err)
		}
		if trigger == nil {
			return 0, nil
		}
	}
	// A turn that took its process down maxDeadTurns times (a message
	// that crashes it) is not tried again.
	res := tx.Exec(`INSERT INTO runs (conversation_id, bot_id, kind, status, trigger_message_id, run_after, created_at, updated_at)
		SELECT ?, `+botOf+`, 'user_turn', 'queued', ?, ?, ?, ?
		WHERE (SELECT count(*) FROM runs p WHERE p.conversation_id = ? AND p.trigger_message_id = ?
		                    AND p.status = 'failed' AND p.error LIKE 'stale:%') < ?
		  AND `+s.q.unanswered+`
		ON CONFLICT (conversation_id) WHERE status = 'queued' DO NOTHING`,
		conv, conv, *trigger, at, at, at, conv, *trigger, maxDeadTurns, conv, conv)
	if res.Error != nil {
		return 0, fmt.Errorf("queuing run %d's turn again: %w", id, res.Error)
	}
	return int(res.RowsAffected), nil
}

// moveGrown hands the messages dead run id's stream grew, half written
// (grown, one id a line), to the run queued in its conversation, which
// deletes them before it answers. Only a run that stored no reply left
// them half written: a stored reply carries its grown ids itself (the
// resend deletes them), and one sent may be the grown message, finished.
// With no run queued they stay on the dead run.
func moveGrown(tx *gorm.DB, id, conv int64, grown string) error {
	if grown == "" {
		return nil
	}
	err := tx.Exec(`UPDATE runs SET grown = CASE WHEN grown = '' THEN ? ELSE grown || ? END
		WHERE conversation_id = ? AND status = 'queued'
		  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = ? AND m.run_id = ?)`,
		grown, "\n"+grown, conv, conv, id).Error
	if err != nil {
		return fmt.Errorf("handing on run %d's half written reply: %w", id, err)
	}
	return nil
}

// NoteGrown records the platform messages run id's streamed reply grew
// so far (core.Run.Grown), while owner still holds it.
func (s *RunQueue) NoteGrown(ctx context.Context, id int64, owner string, grown []string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE runs SET grown = ? WHERE id = ? AND owner = ? AND status = 'running'`,
			strings.Join(grown, "\n"), id, owner).Error
	})
	if err != nil {
		return fmt.Errorf("recording run %d's grown reply: %w", id, err)
	}
	return nil
}
