package config

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a configuration file. Load and Parse return every
// Error found, joined with errors.Join; use errors.As to get at one.
type Error struct {
	// File is the configuration file's path.
	File string
	// Line is the 1-based line of the offending value; 0 when the value did
	// not come from the file (a default).
	Line int
	// Key is the dotted path of the value ("llm.timeout",
	// "bot.allow_users[2]"); empty for a YAML syntax error.
	Key string
	// Msg says what is wrong. It never contains a secret's value.
	Msg string
	// Err is the error Msg came from, when a module reported it (its
	// Provision or Validate): errors.Is and As see through to it.
	Err error
}

// Unwrap is the module's error, nil for the config's own.
func (e *Error) Unwrap() error { return e.Err }

// Error formats the problem as "<file>:<line>: <key>: <msg>", leaving out the
// line when it is unknown and the key when there is none.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("config")
	}
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// joinErrors returns errs in file order (errors without a line last, in the
// order found) as one error, or nil when there are none.
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	sorted := slices.Clone(errs)
	slices.SortStableFunc(sorted, func(a, b *Error) int {
		return cmp.Compare(sortLine(a.Line), sortLine(b.Line))
	})
	if len(sorted) == 1 {
		return sorted[0]
	}
	out := make([]error, len(sorted))
	for i, e := range sorted {
		out[i] = e
	}
	return errors.Join(out...)
}

// sortLine puts errors without a line after every error with one.
func sortLine(line int) int {
	if line <= 0 {
		return int(^uint(0) >> 1)
	}
	return line
}

// yamlLineRE matches yaml.v3's "yaml: line 3: ..." syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml.v3 parse error into an *Error naming the file and,
// when yaml.v3 gives one, the line.
func syntaxError(file string, err error) error {
	msg := err.Error()
	e := &Error{File: file}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	e.Msg = fmt.Sprintf("invalid YAML: %s", msg)
	return e
}
