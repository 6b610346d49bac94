package llm

import (
	"errors"
	"fmt"
	"strings"
)

// Error is the error Client methods return.
type Error struct {
	// StatusCode is the HTTP status of the final attempt, or 0 when no
	// response was received (connection error, timeout, malformed body).
	StatusCode int
	// Message describes the failure, e.g.
	// "llm: 500 Internal Server Error after 4 attempts: overloaded".
	Message string
	// Retryable reports whether trying the same request later may succeed
	// (rate limits, server errors, connection errors, timeouts).
	Retryable bool
	// Timeout reports that an attempt ran past Config.Timeout.
	Timeout bool
	// Err is the underlying cause when there is one worth matching with
	// errors.Is, e.g. context.Canceled.
	Err error

	// health is the Health state this failure puts the client in; "" leaves
	// the state as it was (the caller cancelled, or the request never left).
	health string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// maxErrorText bounds how much of a server's error text goes into a message.
const maxErrorText = 500

// redactor removes the API key from text before it reaches an error or a log.
type redactor string

func (r redactor) clean(s string) string {
	if len(r) >= 4 {
		s = strings.ReplaceAll(s, string(r), "[redacted]")
	}
	if len(s) > maxErrorText {
		s = s[:maxErrorText] + "…"
	}
	return s
}

// redactedError hides the API key in an error's text. It keeps the chain
// for errors.Is (context.Canceled, syscall errors) only when no error in it
// mentions the key, so unwrapping cannot reveal it either.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

func (r redactor) wrap(err error) error {
	if err == nil {
		return nil
	}
	cause := err
	if len(r) > 0 {
		for e := err; e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), string(r)) {
				cause = nil
				break
			}
		}
	}
	return &redactedError{msg: r.clean(err.Error()), cause: cause}
}

// attemptsText renders " after N attempts" when there was more than one.
func attemptsText(n int) string {
	if n > 1 {
		return fmt.Sprintf(" after %d attempts", n)
	}
	return ""
}

// asError finds an *Error in err's chain.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
