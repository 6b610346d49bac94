package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// StorageError is a database the bot cannot use, with where it is and
// the likely cause, for the person who must fix it: "unable to open
// database file: no such file or directory" names neither.
type StorageError struct {
	// Where is the database: "sqlite /data/parley.db" or "postgres
	// db:5432/parley" (never a password).
	Where string
	// Cause is the likely cause in words ("" when none is known).
	Cause string
	Err   error
}

func (e *StorageError) Error() string {
	if e.Cause == "" {
		return e.Where + ": " + e.Err.Error()
	}
	return e.Where + ": " + e.Cause + " (" + e.Err.Error() + ")"
}

func (e *StorageError) Unwrap() error { return e.Err }

// Explain returns err, from opening, migrating or writing the database
// at dsn, as a *StorageError that names the database and, when it can
// tell, the likely cause: a directory that does not exist or cannot be
// written, a read-only file or file system, a full disk. It looks at the
// file system itself, so it holds for root too (who may write where the
// file modes say no one may, but not on a read-only mount).
func Explain(driver, dsn string, err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	if driver == DriverPostgres || driver == "postgresql" {
		return &StorageError{Where: "postgres " + Describe(driver, dsn), Cause: postgresCause(err), Err: err}
	}
	file := SQLiteFile(dsn)
	if file == "" {
		return &StorageError{Where: "sqlite in memory", Err: err}
	}
	return &StorageError{Where: "sqlite " + file, Cause: sqliteCause(file, dsn, err), Err: err}
}

// explain is Explain for the store's own database.
func (s *dbs) explain(err error) error {
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	if s.driver == DriverPostgres {
		return &StorageError{Where: "postgres " + s.where, Cause: postgresCause(err), Err: err}
	}
	if s.file == "" {
		return &StorageError{Where: "sqlite in memory", Err: err}
	}
	dsn := s.file
	if s.readOnly {
		dsn += "?mode=ro"
	}
	return &StorageError{Where: "sqlite " + s.file, Cause: sqliteCause(s.file, dsn, err), Err: err}
}

// sqliteCause says why SQLite failed on file, from what the error says
// and what the file system shows.
func sqliteCause(file, dsn string, err error) string {
	var code sqlite3.ErrNo
	var le sqlite3.Error
	if errors.As(err, &le) {
		code = le.Code
	}
	msg := err.Error()
	full := code == sqlite3.ErrFull || errors.Is(err, syscall.ENOSPC) || strings.Contains(msg, "database or disk is full")
	readOnly := code == sqlite3.ErrReadonly || strings.Contains(msg, "readonly database")
	cantOpen := code == sqlite3.ErrCantOpen || strings.Contains(msg, "unable to open database file")
	dir := filepath.Dir(file)
	switch {
	case full:
		return "the disk holding " + dir + " is full" + freeSpace(dir) + ": free some space"
	case strings.Contains(msg, "file is not a database") || code == sqlite3.ErrNotADB:
		return file + " is not a SQLite database: store.dsn names another file"
	case strings.Contains(msg, "database is locked") || code == sqlite3.ErrBusy:
		return "another process holds the database locked: stop it, or give each bot its own file"
	case !readOnly && !cantOpen && code != sqlite3.ErrIoErr && code != sqlite3.ErrPerm:
		return ""
	}
	if c := fileSystemCause(file); c != "" {
		return c
	}
	if strings.Contains(dsn, "mode=ro") {
		return "store.dsn opens the database read-only (mode=ro)"
	}
	if readOnly {
		return file + " or its directory " + dir + " is read-only: check the owner and mode of both (the bot runs as uid " +
			fmt.Sprint(os.Geteuid()) + ") and whether the file system is mounted read-only"
	}
	if code == sqlite3.ErrIoErr {
		return "the disk holding " + dir + " failed a read or write" + freeSpace(dir) + ": it may be full or failing"
	}
	return "cannot open " + file + ": check that " + dir + " exists and the bot (uid " + fmt.Sprint(os.Geteuid()) + ") may write there"
}

// fileSystemCause looks at file and its directory for what keeps SQLite
// from opening or writing it ("" when nothing shows).
func fileSystemCause(file string) string {
	dir := filepath.Dir(file)
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		if f := fileAncestor(dir); f != "" {
			return f + " is a file, not a directory: " + file + " cannot be under it"
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the directory " + dir + " does not exist: create it, or point store.dsn elsewhere"
	case err != nil:
		return "the directory " + dir + " cannot be read: " + err.Error()
	case !st.IsDir():
		return dir + " is a file, not a directory: " + file + " cannot be under it"
	}
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		return file + " is a directory, not a database file"
	}
	// SQLite writes the -wal and -shm files beside the database, so the
	// directory must be writable as well as the file.
	if err := writable(dir); err != nil {
		return "the directory " + dir + " is not writable (" + err.Error() + "): SQLite creates " +
			filepath.Base(file) + "-wal and -shm there; " + accessHint(err)
	}
	if _, err := os.Stat(file); err == nil {
		if err := writable(file); err != nil {
			return file + " is not writable (" + err.Error() + "); " + accessHint(err)
		}
	}
	return ""
}

// fileAncestor is the nearest of dir and its ancestors that exists, when
// it is not a directory ("" otherwise).
func fileAncestor(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil || !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			if err == nil && !st.IsDir() {
				return d
			}
			return ""
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// accessHint says what to do about an access error.
func accessHint(err error) string {
	if errors.Is(err, syscall.EROFS) {
		return "the file system is mounted read-only"
	}
	return "give the bot's user (uid " + fmt.Sprint(os.Geteuid()) + ") write access"
}

// bytesText is n in B, KiB, MiB or GiB.
func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// postgresCause says why PostgreSQL refused, from the SQLSTATE or the
// network error in err ("" when it cannot tell).
func postgresCause(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "SQLSTATE 25006"):
		return "the server takes no writes: a read-only replica, or default_transaction_read_only is on"
	case strings.Contains(msg, "SQLSTATE 53100"):
		return "the database server's disk is full"
	case strings.Contains(msg, "SQLSTATE 28P01"), strings.Contains(msg, "SQLSTATE 28000"):
		return "the server refused the user or password in store.dsn"
	case strings.Contains(msg, "SQLSTATE 3D000"):
		return "the database named in store.dsn does not exist"
	case strings.Contains(msg, "SQLSTATE 42501"):
		return "the user in store.dsn lacks a privilege the bot needs (it creates and changes its tables)"
	case strings.Contains(msg, "connection refused"):
		return "nothing answers at the host and port in store.dsn"
	}
	return ""
}
