package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"github.com/parleybot/parley/core"
)

// unavailable reports whether err says the database cannot take writes
// now (full, read-only, failing, unreachable, locked by another
// process), as opposed to a write that is itself at fault (a constraint,
// a value too long). A caller's own deadline is neither: the caller
// chose it.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var le sqlite3.Error
	if errors.As(err, &le) {
		switch le.Code {
		case sqlite3.ErrFull, sqlite3.ErrIoErr, sqlite3.ErrReadonly, sqlite3.ErrCantOpen, sqlite3.ErrPerm,
			sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrCorrupt, sqlite3.ErrNotADB, sqlite3.ErrNoLFS,
			sqlite3.ErrProtocol, sqlite3.ErrNomem:
			return true
		}
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "25006", // read_only_sql_transaction: a replica, or default_transaction_read_only
			strings.HasPrefix(pe.Code, "08"),                           // connection exception
			strings.HasPrefix(pe.Code, "53"),                           // insufficient resources: 53100 disk full, out of memory, too many connections
			strings.HasPrefix(pe.Code, "58"),                           // system error: 58030 I/O error
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutting down, crashed, starting up
			pe.Code == "XX001", pe.Code == "XX002": // data or index corrupted
			return true
		}
		return false
	}
	// No answer from the database at all: the connection failed.
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EIO),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, errClosed):
		return true
	}
	return false
}

// unavailableError is a storage error that is core.ErrStoreUnavailable.
type unavailableError struct{ err error }

func (e unavailableError) Error() string { return e.err.Error() }

func (e unavailableError) Unwrap() error { return e.err }

func (e unavailableError) Is(target error) bool { return target == core.ErrStoreUnavailable }

// classify returns err, from a write, as core.ErrStoreUnavailable
// (explained: where the database is, the likely cause) when the database
// cannot take writes, and notes the failure for /healthz at once. Any
// other error is returned as it is.
func (s *dbs) classify(err error) error {
	if !unavailable(err) || errors.Is(err, core.ErrStoreUnavailable) {
		return err
	}
	err = unavailableError{s.explain(err)}
	s.failures.failed(s.now(), err)
	return err
}

// writeFailures remembers the last write the database could not take, so
// that /healthz fails with the first failed insert rather than at the next
// write probe (a small upsert can still fit in the SQLite WAL's reusable
// space while inserts need the disk to grow).
type writeFailures struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

func (w *writeFailures) failed(at time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil || !at.Before(w.at) {
		w.at, w.err = at, err
	}
}

// last is the last failure and when it happened (nil if none).
func (w *writeFailures) last() (time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at, w.err
}

// diskFull is the error a write gets from the database on a full disk,
// for a test's injected diskfault.Disk.
func (s *dbs) diskFull() error {
	if s.driver == DriverPostgres {
		return &pgconn.PgError{Severity: "ERROR", Code: "53100",
			Message: `could not extend file "base/16384/16397": No space left on device`}
	}
	return sqlite3.Error{Code: sqlite3.ErrFull, ExtendedCode: sqlite3.ErrNoExtended(sqlite3.ErrFull),
		SystemErrno: syscall.ENOSPC}
}
