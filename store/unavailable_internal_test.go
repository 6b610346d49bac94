package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/require"
)

// A database that cannot take writes is told from a write that is at
// fault: the first is tried again, the second may be given up.
func TestUnavailableTellsTheStoreFromTheWrite(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("inserting: %w", &pgconn.PgError{Code: code}) }
	lite := func(code sqlite3.ErrNo) error { return fmt.Errorf("inserting: %w", sqlite3.Error{Code: code}) }
	for name, err := range map[string]error{
		"sqlite full":              lite(sqlite3.ErrFull),
		"sqlite i/o error":         lite(sqlite3.ErrIoErr),
		"sqlite read-only":         lite(sqlite3.ErrReadonly),
		"sqlite cannot open":       lite(sqlite3.ErrCantOpen),
		"sqlite locked by another": lite(sqlite3.ErrBusy),
		"sqlite corrupt":           lite(sqlite3.ErrCorrupt),
		"postgres disk full":       pg("53100"),
		"postgres out of memory":   pg("53200"),
		"postgres too many conns":  pg("53300"),
		"postgres read-only":       pg("25006"),
		"postgres connection":      pg("08006"),
		"postgres shutting down":   pg("57P01"),
		"postgres starting up":     pg("57P03"),
		"postgres i/o error":       pg("58030"),
		"connect refused":          &pgconn.ConnectError{},
		"net":                      fmt.Errorf("begin: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}),
		"conn closed":              fmt.Errorf("commit: %w", pgconn.ErrConnClosed),
		"bad conn":                 driver.ErrBadConn,
		"cut mid-reply":            io.ErrUnexpectedEOF,
		"enospc":                   fmt.Errorf("write: %w", syscall.ENOSPC),
		"store closed":             errClosed,
	} {
		require.True(t, unavailable(err), name)
	}
	for name, err := range map[string]error{
		"nil":                     nil,
		"sqlite unique":           sqlite3.Error{Code: sqlite3.ErrConstraint},
		"sqlite too big":          sqlite3.Error{Code: sqlite3.ErrTooBig},
		"sqlite mismatch":         sqlite3.Error{Code: sqlite3.ErrMismatch},
		"postgres unique":         pg("23505"),
		"postgres value too long": pg("22001"),
		"postgres bad encoding":   pg("22021"),
		"postgres syntax":         pg("42601"),
		"postgres deadlock":       pg("40P01"),
		"caller's deadline":       fmt.Errorf("inserting: %w", context.DeadlineExceeded),
		"caller cancelled":        context.Canceled,
		"something else":          errors.New("value too long"),
	} {
		require.False(t, unavailable(err), name)
	}
}
