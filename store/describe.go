package store

import (
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Describe names where a store is, for messages a person reads: the
// SQLite file ("in memory" for an in-memory database), or the PostgreSQL
// server and database as "host:port/dbname". It never shows a password,
// a user or the DSN's parameters.
func Describe(driver, dsn string) string {
	if driver == DriverPostgres || driver == "postgresql" {
		return describePostgres(dsn)
	}
	file := SQLiteFile(dsn)
	if file == "" {
		return "in memory"
	}
	return file
}

// SQLiteFile returns the file a SQLite DSN opens (a path, or a file: URI
// with or without parameters), "" for an in-memory database.
func SQLiteFile(dsn string) string {
	path, query, _ := strings.Cut(dsn, "?")
	if strings.HasPrefix(path, "file:") {
		path = strings.TrimPrefix(path, "file:")
		// file://host/path is a URI with an authority; only an empty or
		// local one is meaningful to SQLite.
		if rest, ok := strings.CutPrefix(path, "//"); ok {
			if i := strings.Index(rest, "/"); i >= 0 {
				path = rest[i:]
			}
		}
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
	}
	if path == "" || path == ":memory:" || strings.Contains(query, "mode=memory") {
		return ""
	}
	return path
}

// kvField finds key=value pairs in a key=value PostgreSQL DSN.
var kvField = regexp.MustCompile(`(?:^|\s)(host|hostaddr|port|dbname)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// describePostgres is "host:port/dbname" of a postgres:// URL or a
// key=value DSN, with what it does not say left out.
func describePostgres(dsn string) string {
	var host, port, db string
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "postgres (unparsable dsn)"
		}
		host, port, db = u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/")
		if host == "" {
			host = u.Query().Get("host")
		}
	} else {
		for _, m := range kvField.FindAllStringSubmatch(dsn, -1) {
			v := strings.Trim(m[2], "'")
			switch m[1] {
			case "host", "hostaddr":
				if host == "" {
					host = v
				}
			case "port":
				port = v
			case "dbname":
				db = v
			}
		}
	}
	if host == "" {
		host = "localhost"
	}
	where := host
	if port != "" {
		where = net.JoinHostPort(host, port)
	}
	if db != "" {
		where += "/" + db
	}
	return where
}
