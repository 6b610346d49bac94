package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// finishRun ends a run only while owner still holds it as running.
const finishRun = `UPDATE runs SET status = ?, error = ?, finished_at = ?, record = ?,
		prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, model = ?, updated_at = ?
	WHERE id = ? AND status = 'running' AND owner = ?
	RETURNING conversation_id, job_id`

// CompleteRun finishes a run owner still holds as running and appends
// c.Messages with fresh seqs and RunID set, in one transaction. It fills
// each message's ID, ConversationID, Seq, RunID and CreatedAt (c.Now when
// zero) once committed. If the run is no longer running for owner it returns
// core.ErrLostRun and writes nothing.
func (s *RunQueue) CompleteRun(ctx context.Context, runID int64, owner string, c core.RunCompletion) error {
	_, err := s.completeRun(ctx, runID, owner, c, false, nil)
	return err
}

// CompleteRunAndClaim is CompleteRun followed, in the same transaction, by
// ClaimRun for owner at c.Now: a busy worker goes from one run to the next
// with one write transaction instead of two. The next run is nil when none
// is due; a failure to complete claims nothing.
func (s *RunQueue) CompleteRunAndClaim(ctx context.Context, runID int64, owner string, c core.RunCompletion, platforms ...core.Platform) (*core.Run, error) {
	return s.completeRun(ctx, runID, owner, c, true, platformNames(platforms))
}

func (s *RunQueue) completeRun(ctx context.Context, runID int64, owner string, c core.RunCompletion, claimNext bool, platforms []string) (*core.Run, error) {
	next, err := s.finish(ctx, runID, owner, c, claimNext, platforms)
	if err != nil {
		return nil, fmt.Errorf("completing run %d: %w", runID, err)
	}
	return next, nil
}

// finish completes a run (see CompleteRun), then claims the next due run
// when claimNext is set.
func (s *RunQueue) finish(ctx context.Context, runID int64, owner string, c core.RunCompletion, claimNext bool, platforms []string) (*core.Run, error) {
	switch c.Status {
	case core.RunSucceeded, core.RunFailed, core.RunCanceled, core.RunSkipped:
	default:
		return nil, fmt.Errorf("status %q is not final", c.Status)
	}
	if c.Now.IsZero() {
		c.Now = s.now()
	}
	w, err := newCompletion(runID, owner, c, s.q.t(c.Now))
	if err != nil {
		return nil, err
	}
	var next *core.Run
	err = s.write(ctx, func(tx *gorm.DB) error {
		next = nil // a batch may run this again after a rollback
		var err error
		next, err = s.finishIn(tx, w, claimNext, platforms)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, m := range c.Messages {
		*m = w.msgs[i]
	}
	for i, j := range c.Jobs {
		*j = w.jobs[i]
	}
	return next, nil
}

// completion is what finish writes: the run's outcome, and copies of the
// caller's messages and jobs, so that a failed transaction leaves the
// caller's untouched.
type completion struct {
	runID  int64
	owner  string
	c      core.RunCompletion
	record string // c.Record encoded
	msgs   []core.Message
	metas  []string // msgs' metadata encoded
	jobs   []core.Job
	now    any // c.Now bound
}

// newCompletion encodes c's record and its messages' metadata.
func newCompletion(runID int64, owner string, c core.RunCompletion, now any) (*completion, error) {
	record, err := encodeRecord(c.Record)
	if err != nil {
		return nil, err
	}
	w := &completion{runID: runID, owner: owner, c: c, record: record, now: now,
		msgs: make([]core.Message, len(c.Messages)), metas: make([]string, len(c.Messages)), jobs: make([]core.Job, len(c.Jobs))}
	for i, m := range c.Messages {
		if w.metas[i], err = encodeMetadata(m.Metadata); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// restart makes w's copies the caller's messages (stamped with the run
// and, when they have none, c.Now) and jobs again. A batch may run the
// transaction a second time after a rollback, and what the first try set
// (ids, seqs, session records) was rolled back with it: a reply whose id
// the first try set must not be taken for one stored before it was sent.
func (w *completion) restart() {
	for i, m := range w.c.Messages {
		msg := *m
		if msg.CreatedAt.IsZero() {
			msg.CreatedAt = w.c.Now
		}
		msg.CreatedAt = utc(msg.CreatedAt)
		id := w.runID
		msg.RunID = &id
		w.msgs[i] = msg
	}
	for i, j := range w.c.Jobs {
		w.jobs[i] = *j
	}
}

// finishIn writes w inside tx, from the caller's messages and jobs each
// time (restart): the run's outcome, its replies, its follow-up jobs and
// its own job's outcome; then, when claimNext is set, it claims the next
// due run.
func (s *RunQueue) finishIn(tx *gorm.DB, w *completion, claimNext bool, platforms []string) (*core.Run, error) {
	w.restart()
	c := w.c
	var convID int64
	var jobID sql.NullInt64
	err := row(tx, finishRun, string(c.Status), c.Error, w.now, w.record, c.PromptTokens, c.CompletionTokens,
		c.TotalTokens, c.Model, w.now, w.runID, w.owner).Scan(&convID, &jobID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, core.ErrLostRun
	}
	if err != nil {
		return nil, fmt.Errorf("finishing run: %w", err)
	}
	lastSeq, err := s.storeReplies(tx, convID, w)
	if err != nil {
		return nil, err
	}
	if len(w.jobs) > 0 {
		if lastSeq == 0 {
			if err := tx.Raw(`SELECT last_seq FROM conversations WHERE id = ?`, convID).Row().Scan(&lastSeq); err != nil {
				return nil, fmt.Errorf("reading the conversation's last seq: %w", err)
			}
		}
		if err := s.insertJobs(tx, convID, lastSeq, w.jobs, w.now); err != nil {
			return nil, err
		}
	}
	if jobID.Valid && c.JobOutcome != nil {
		sentID := ""
		if len(w.msgs) > 0 {
			sentID = w.msgs[0].PlatformMessageID
		}
		if err := s.settleJob(tx, jobID.Int64, c.JobOutcome, sentID, w.now); err != nil {
			return nil, err
		}
	}
	if claimNext {
		return s.claimIn(tx, w.owner, w.now, platforms)
	}
	return nil, nil
}

// storeReplies settles the delivery of the replies stored before they
// were sent and appends the others to the conversation with fresh seqs.
// It returns the seq of the last one appended, 0 when none was.
func (s *RunQueue) storeReplies(tx *gorm.DB, convID int64, w *completion) (int64, error) {
	msgs := w.msgs
	fresh := 0
	for i := range msgs {
		if msgs[i].ID != 0 {
			// Stored before it was sent: only its delivery is new.
			if err := settleDelivery(tx, &msgs[i], w.metas[i]); err != nil {
				return 0, err
			}
			continue
		}
		fresh++
	}
	if fresh == 0 {
		return 0, nil
	}
	seq, record, err := reserveSeqs(tx, convID, fresh, w.now)
	if err != nil {
		return 0, err
	}
	for i := range msgs {
		if w.c.Messages[i].ID != 0 {
			continue
		}
		msgs[i].ConversationID = convID
		msgs[i].Seq = seq
		seq++
		if msgs[i].SessionRecordID == nil {
			msgs[i].SessionRecordID = record
		}
		if err := s.insertMessage(tx, &msgs[i], w.metas[i], s.q.t(msgs[i].CreatedAt)); err != nil {
			return 0, err
		}
	}
	return seq - 1, nil
}
