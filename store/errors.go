package store

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// isUniqueViolation reports whether err is a unique constraint violation.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	var liteErr sqlite3.Error
	if errors.As(err, &liteErr) {
		return liteErr.ExtendedCode == sqlite3.ErrConstraintUnique ||
			liteErr.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	return false
}

// kvPassword finds password=... in a key=value PostgreSQL DSN.
var kvPassword = regexp.MustCompile(`(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// dsnPassword returns the password a PostgreSQL DSN carries, "" if none.
func dsnPassword(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			p, _ := u.User.Password()
			if p != "" {
				return p
			}
		}
		if p := urlQueryPassword(dsn); p != "" {
			return p
		}
		// An unparsable URL: take what stands between the first ':' after
		// the scheme and the last '@'.
		rest := dsn[strings.Index(dsn, "://")+3:]
		if at := strings.LastIndex(rest, "@"); at > 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				return rest[colon+1 : at]
			}
		}
		return ""
	}
	if m := kvPassword.FindStringSubmatch(dsn); m != nil {
		return strings.Trim(m[1], "'")
	}
	return ""
}

func urlQueryPassword(dsn string) string {
	i := strings.Index(dsn, "?")
	if i < 0 {
		return ""
	}
	q, err := url.ParseQuery(dsn[i+1:])
	if err != nil {
		return ""
	}
	return q.Get("password")
}

// redact removes secret (raw and URL-escaped) from err's message. A redacted
// error does not unwrap: the wrapped error would still print the secret.
func redact(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	msg := err.Error()
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), url.UserPassword("x", secret).String()[2:]}
	changed := false
	for _, f := range forms {
		if f != "" && strings.Contains(msg, f) {
			msg = strings.ReplaceAll(msg, f, "xxxxx")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return errors.New(msg)
}
