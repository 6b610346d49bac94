package store

import (
	"context"
	"fmt"
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
// again.
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
		RETURNING id, conversation_id, kind, trigger_message_id`, at, at, owner)
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
// conversation_id, kind, trigger_message_id) picks, and queues again what
// should be answered (see ReapStaleRuns).
func (s *RunQueue) reap(ctx context.Context, now time.Time, failQuery string, args ...any) (reaped, retried int, err error) {
	at := s.q.t(now)
	type dead struct {
		id, conv int64
		kind     string
		trigger  *int64
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
			if err := rows.Scan(&r.id, &r.conv, &r.kind, &r.trigger); err != nil {
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
			res := tx.Exec(`INSERT INTO runs (conversation_id, kind, status, trigger_message_id, run_after, created_at, updated_at)
				SELECT ?, 'user_turn', 'queued', ?, ?, ?, ?
				WHERE EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = ? AND m.run_id = ? AND m.delivery = 'sending')
				ON CONFLICT (conversation_id) WHERE status = 'queued' DO NOTHING`,
				r.conv, r.trigger, at, at, at, r.conv, r.id)
			if res.Error != nil {
				return fmt.Errorf("queuing run %d's unsent reply: %w", r.id, res.Error)
			}
			if res.RowsAffected > 0 {
				retried++
				continue
			}
			// A user message no reply answered, with no run queued behind
			// it: a turn answers it again (its model call may have been
			// made; its reply never stored). Whether anything waits is
			// read from the replies' answered_seq, never from their place.
			trigger := r.trigger
			if r.kind != string(core.RunUserTurn) || trigger == nil {
				if err := row(tx, `SELECT max(id) FROM messages WHERE conversation_id = ? AND role = 'user' AND source <> 'command'`,
					r.conv).Scan(nullIDCol{&trigger}); err != nil {
					return fmt.Errorf("reading run %d's conversation: %w", r.id, err)
				}
				if trigger == nil {
					continue
				}
			}
			// A turn that took its process down maxDeadTurns times (a
			// message that crashes it) is not tried again.
			res = tx.Exec(`INSERT INTO runs (conversation_id, kind, status, trigger_message_id, run_after, created_at, updated_at)
				SELECT ?, 'user_turn', 'queued', ?, ?, ?, ?
				WHERE (SELECT count(*) FROM runs p WHERE p.conversation_id = ? AND p.trigger_message_id = ?
				                    AND p.status = 'failed' AND p.error LIKE 'stale:%') < ?
				  AND `+s.q.unanswered+`
				ON CONFLICT (conversation_id) WHERE status = 'queued' DO NOTHING`,
				r.conv, *trigger, at, at, at, r.conv, *trigger, maxDeadTurns, r.conv, r.conv)
			if res.Error != nil {
				return fmt.Errorf("queuing run %d's turn again: %w", r.id, res.Error)
			}
			retried += int(res.RowsAffected)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return reaped, retried, nil
}
