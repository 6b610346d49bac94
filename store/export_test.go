package store

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// ClaimPlans returns the query plans of the view's run claim and job
// claim at now, one line per step, for the tests that check a bot's
// claims walk an index of its own. PostgreSQL plans them with
// sequential scans off: on a test's few rows it would scan anyway, and
// the question is which index it can use.
func ClaimPlans(ctx context.Context, s *Store, now time.Time) (runs, jobs string, err error) {
	t := s.q.t(now)
	run, runArgs := s.q.claim("w", t, s.bot, nil)
	job, jobArgs := s.JobQueue.jobClaim("w", now, now, []core.JobKind{core.JobMessage}, 10, nil)
	err = s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if !s.q.sqlite {
			if err := tx.Exec(`SET LOCAL enable_seqscan = off`).Error; err != nil {
				return err
			}
		}
		if runs, err = plan(tx, s.q.sqlite, run, runArgs); err != nil {
			return err
		}
		jobs, err = plan(tx, s.q.sqlite, job, jobArgs)
		return err
	})
	return runs, jobs, err
}

func plan(tx *gorm.DB, sqlite bool, q string, args []any) (string, error) {
	explain := `EXPLAIN `
	if sqlite {
		explain = `EXPLAIN QUERY PLAN `
	}
	rows, err := tx.Raw(explain+q, args...).Rows()
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		line := vals[len(vals)-1] // SQLite's detail, PostgreSQL's one column
		if b, ok := line.([]byte); ok {
			line = string(b)
		}
		lines = append(lines, line.(string))
	}
	return strings.Join(lines, "\n"), rows.Err()
}

// RetentionPlan returns the query plan of DeleteMessagesBefore on the
// view s, for the test that checks it walks messages_created.
func RetentionPlan(ctx context.Context, s *Store, before time.Time) (string, error) {
	q, args := s.oldMessages(before, RetentionBatch)
	return plan(s.w.WithContext(ctx), s.q.sqlite, q, args)
}
