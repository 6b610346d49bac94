package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// workChannelQuery names the channel migration 9's triggers notify when a
// run or a job due within a minute is queued in the connection's schema;
// the payload is the table ("runs" or "jobs").
const workChannelQuery = `SELECT 'parley_work_' || left(md5(current_schema()), 16)`

// Listen calls wake with "runs:BOT" or "jobs:BOT" each time any process
// queues a run, or a job due within a minute, for bot BOT in this store's
// schema (whichever view s is), until ctx ends or the connection fails
// (its error is returned; the caller listens again). It calls wake with
// "runs" and "jobs", naming no bot, once listening, for what was queued
// while it was not. It holds one pooled connection. On SQLite it returns nil at once: the processes sharing a
// SQLite file poll.
func (s *Store) Listen(ctx context.Context, wake func(topic string)) error {
	if s.driver != DriverPostgres {
		return nil
	}
	conn, err := s.pools[0].Conn(ctx)
	if err != nil {
		return fmt.Errorf("listening for work: %w", err)
	}
	defer func() { _ = conn.Close() }()
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the postgres driver connection is a %T, not pgx's", dc)
		}
		pc := sc.Conn()
		var channel string
		if err := pc.QueryRow(ctx, workChannelQuery).Scan(&channel); err != nil {
			return err
		}
		if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
			return err
		}
		wake("runs")
		wake("jobs")
		for {
			n, err := pc.WaitForNotification(ctx)
			if err != nil {
				return err
			}
			wake(n.Payload)
		}
	})
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		err = errors.New("the listening connection ended")
	}
	return fmt.Errorf("listening for work: %w", err)
}

// TryLock takes the cluster-wide lock name for this process until unlock
// is called or the process dies (a PostgreSQL session advisory lock, on a
// connection held for it); ok is false when another process holds it. On
// SQLite, where one host runs the bot, it always succeeds.
func (s *Store) TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error) {
	if s.driver != DriverPostgres {
		return func() {}, true, nil
	}
	conn, err := s.pools[0].Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("taking lock %q: %w", name, err)
	}
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, name).Scan(&ok); err != nil {
		_ = conn.Close()
		return nil, false, fmt.Errorf("taking lock %q: %w", name, err)
	}
	if !ok {
		_ = conn.Close()
		return nil, false, nil
	}
	return func() {
		// Closing the session would release it too, but the pool keeps
		// connections open.
		_, _ = conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, name)
		_ = conn.Close()
	}, true, nil
}
